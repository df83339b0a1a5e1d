/* The host memory reader (host_memory.h) on real-shaped /proc and cgroup
 * files written into a temporary root: a laptop with a big page cache, a
 * cgroup v2 container near its limit, cgroup v1, a limit on a parent, "max",
 * a hybrid machine, missing files. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "host_memory.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static char base[512];
static int case_no;

/* A fresh root for one case. */
static const char *new_root(char *root, size_t size)
{
    snprintf(root, size, "%s/case%d", base, case_no++);
    mkdir(root, 0700);
    return root;
}

/* Writes root/rel, making its folders. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            perror(path);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* 24 GiB, 7 GiB of it MemFree, 16 GiB page cache: MemFree would say 71%
 * used (the laptop), MemAvailable says 5%. */
static const char *laptop_meminfo = "MemTotal:       25165824 kB\n"
                                    "MemFree:         7340032 kB\n"
                                    "MemAvailable:   23855104 kB\n"
                                    "Buffers:          204800 kB\n"
                                    "Cached:         16777216 kB\n"
                                    "SwapCached:            0 kB\n";

static const char *v2_mount = "1094 1083 0:29 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - "
                              "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";

static void test_page_cache_is_available(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n");
    put(root, "proc/self/mountinfo", v2_mount);
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST);
    CHECK(m.total_bytes == 25165824 * UINT64_C(1024));
    CHECK(m.available_bytes == 23855104 * UINT64_C(1024));
    CHECK(m.cgroup_version == 0 && m.cgroup_limit_bytes == 0);
    CHECK(strcmp(sw_memory_source_name(m.source), "host") == 0);
}

static void test_v2_container_near_its_limit(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "proc/self/mountinfo", v2_mount);
    put(root, "sys/fs/cgroup/memory.max", "4294967296\n");
    put(root, "sys/fs/cgroup/memory.current", "3758096384\n"); /* 3.5 GiB */
    put(root, "sys/fs/cgroup/memory.stat",
        "anon 3640655872\nfile 117440512\nkernel 0\nactive_anon 3640655872\n"
        "inactive_anon 0\nactive_file 100663296\ninactive_file 16777216\n");
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_CGROUP && m.cgroup_version == 2);
    CHECK(m.total_bytes == 4 * GIB);
    CHECK(m.cgroup_used_bytes == 3584 * MIB - 16 * MIB); /* less the inactive file cache */
    CHECK(m.available_bytes == 4 * GIB - m.cgroup_used_bytes);
    CHECK(m.host_available_bytes == 23855104 * UINT64_C(1024));
    CHECK(strcmp(sw_memory_source_name(m.source), "cgroup") == 0);
}

static void test_v2_max_is_no_limit(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "proc/self/mountinfo", v2_mount);
    put(root, "sys/fs/cgroup/memory.max", "max\n");
    put(root, "sys/fs/cgroup/memory.current", "3758096384\n");
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST && m.cgroup_version == 0);
    CHECK(m.available_bytes == 23855104 * UINT64_C(1024));
}

/* A systemd slice limits the user's processes; the scope itself has none. */
static void test_v2_limit_on_a_parent(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n");
    put(root, "proc/self/mountinfo", v2_mount);
    put(root, "sys/fs/cgroup/user.slice/memory.max", "max\n");
    put(root, "sys/fs/cgroup/user.slice/memory.current", "9663676416\n");
    put(root, "sys/fs/cgroup/user.slice/user-1000.slice/memory.max", "8589934592\n");
    put(root, "sys/fs/cgroup/user.slice/user-1000.slice/memory.current", "7516192768\n");
    put(root, "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope/memory.max", "max\n");
    put(root, "sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope/memory.current",
        "1073741824\n");
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_CGROUP && m.cgroup_version == 2);
    CHECK(m.total_bytes == 8 * GIB && m.available_bytes == 1 * GIB);
}

/* Docker on cgroup v1 without a cgroup namespace: the mount shows the
 * container's own folder, /proc/self/cgroup the host's path to it. */
static void test_v1_container(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup",
        "12:memory:/docker/3f2a\n11:cpu,cpuacct:/docker/3f2a\n"
        "1:name=systemd:/docker/3f2a\n");
    put(root, "proc/self/mountinfo",
        "700 690 0:30 /docker/3f2a /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup "
        "rw,cpu,cpuacct\n"
        "701 690 0:32 /docker/3f2a /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n");
    put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
    put(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "2040109465\n");
    put(root, "sys/fs/cgroup/memory/memory.stat",
        "cache 1200000000\nrss 800000000\ninactive_file 1000000000\n"
        "total_cache 1200000000\ntotal_rss 800000000\ntotal_inactive_file 1073741824\n");
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_CGROUP && m.cgroup_version == 1);
    CHECK(m.total_bytes == 2 * GIB);
    CHECK(m.cgroup_used_bytes == UINT64_C(2040109465) - GIB);
    CHECK(m.available_bytes == 2 * GIB - m.cgroup_used_bytes);
}

/* This build machine's shape: v1 memory controller without a limit (the
 * kernel's "unlimited" number), an empty unified hierarchy beside it. */
static void test_hybrid_without_limit(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup",
        "9:name=systemd:/\n4:memory:/process_api/5642c6\n1:cpu:/\n0::/\n");
    put(root, "proc/self/mountinfo",
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
    put(root, "sys/fs/cgroup/unified/cgroup.controllers", "");
    put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "3092983808\n");
    put(root, "sys/fs/cgroup/memory/process_api/5642c6/memory.limit_in_bytes",
        "9223372036854771712\n");
    put(root, "sys/fs/cgroup/memory/process_api/5642c6/memory.usage_in_bytes", "199995392\n");
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST && m.cgroup_version == 0);
    CHECK(m.total_bytes == 25165824 * UINT64_C(1024));
}

/* A cgroup limit above what the host has left: the host is the tighter. */
static void test_host_tighter_than_cgroup(void)
{
    char root[600];
    new_root(root, sizeof root);
    put(root, "proc/meminfo",
        "MemTotal:       25165824 kB\nMemFree:          524288 kB\n"
        "MemAvailable:    1048576 kB\n");
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "proc/self/mountinfo", v2_mount);
    put(root, "sys/fs/cgroup/memory.max", "21474836480\n");
    put(root, "sys/fs/cgroup/memory.current", "1073741824\n");
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST && m.available_bytes == 1 * GIB);
    CHECK(m.cgroup_version == 2 && m.cgroup_limit_bytes == 20 * GIB);
}

static void test_missing_files(void)
{
    char root[600];
    /* meminfo only: the host's figures */
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    sw_host_memory m;
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST && m.available_bytes == 23855104 * UINT64_C(1024));
    /* a limit whose usage is unreadable is left out */
    new_root(root, sizeof root);
    put(root, "proc/meminfo", laptop_meminfo);
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "proc/self/mountinfo", v2_mount);
    put(root, "sys/fs/cgroup/memory.max", "4294967296\n");
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST && m.cgroup_version == 0);
    /* nothing at all: the C library's figures, never zero */
    new_root(root, sizeof root);
    sw_host_memory_read(root, &m);
    CHECK(m.source == SW_MEMORY_HOST && m.total_bytes > 0);
    CHECK(m.available_bytes <= m.total_bytes);
}

/* This machine, through the CPU backend: the same figures it reports. */
static void test_this_machine(void)
{
    sw_host_memory m;
    sw_host_memory_read(NULL, &m);
    CHECK(m.total_bytes > 0 && m.available_bytes > 0 && m.available_bytes <= m.total_bytes);
    sw_backend *be = NULL;
    sw_error err = {SW_OK, ""};
    CHECK(sw_cpu_backend_open(1, &be, &err) == SW_OK);
    if (!be)
        return;
    sw_device_info info;
    CHECK(be->device_info(be, &info, &err) == SW_OK);
    CHECK(info.total_bytes == m.total_bytes);
    /* available moves by itself; within 1 GiB of a moment ago */
    CHECK_NEAR((double)info.free_bytes, (double)m.available_bytes, (double)GIB);
    be->destroy(be);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/sw_test_host_memory_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    test_page_cache_is_available();
    test_v2_container_near_its_limit();
    test_v2_max_is_no_limit();
    test_v2_limit_on_a_parent();
    test_v1_container();
    test_hybrid_without_limit();
    test_host_tighter_than_cgroup();
    test_missing_files();
    test_this_machine();
    nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return sw_check_summary("test_host_memory");
}
