#include "host_memory.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cgroup v1 writes "no limit" as the largest page-aligned counter
 * (9223372036854771712); anything this large is no limit. */
#define NO_LIMIT_FROM (UINT64_C(1) << 62)

typedef struct cgroup_mount {
    char root[PATH_MAX];  /* the hierarchy's folder this mount shows */
    char point[PATH_MAX]; /* where it is mounted */
} cgroup_mount;

/* Reads "<key> <number>" or "<key>: <number> kB" lines of a /proc or
 * memory.stat style file; 1 when the key was found. */
static int read_keyed(const char *path, const char *key, uint64_t *value)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    size_t n = strlen(key);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, n) != 0 || (line[n] != ' ' && line[n] != ':' && line[n] != '\t'))
            continue;
        char *end;
        unsigned long long v = strtoull(line + n + (line[n] == ':'), &end, 10);
        if (end == line + n + (line[n] == ':'))
            continue;
        *value = strstr(end, "kB") ? (uint64_t)v * 1024 : (uint64_t)v;
        found = 1;
    }
    fclose(f);
    return found;
}

/* A file holding one number (memory.current) or "max": 1 with the number,
 * 2 for "max", 0 when unreadable. */
static int read_number(const char *path, uint64_t *value)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char text[64] = "";
    int ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    if (!ok)
        return 0;
    if (strncmp(text, "max", 3) == 0)
        return 2;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text)
        return 0;
    *value = (uint64_t)v;
    return 1;
}

static void host_figures(const char *root, sw_host_memory *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/meminfo", root);
    uint64_t total = 0, avail = 0, free_b = 0, buffers = 0, cached = 0;
    if (read_keyed(path, "MemTotal", &total) && total > 0) {
        if (!read_keyed(path, "MemAvailable", &avail)) {
            /* kernels before 3.14: free plus the caches, an upper bound */
            read_keyed(path, "MemFree", &free_b);
            read_keyed(path, "Buffers", &buffers);
            read_keyed(path, "Cached", &cached);
            avail = free_b + buffers + cached;
        }
    } else {
        /* no /proc (or a root without it): the C library's figures, whose
         * "available" is MemFree, the best left */
        long pages = sysconf(_SC_PHYS_PAGES), free_pages = sysconf(_SC_AVPHYS_PAGES);
        long page = sysconf(_SC_PAGESIZE);
        total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
        avail = free_pages > 0 && page > 0 ? (uint64_t)free_pages * (uint64_t)page : 0;
    }
    out->host_total_bytes = total;
    out->host_available_bytes = avail < total ? avail : total;
}

/* Whether a comma-separated list ("rw,memory", "cpu,memory") names memory. */
static int has_memory(const char *list)
{
    for (const char *t = list; t; t = strchr(t, ',') ? strchr(t, ',') + 1 : NULL)
        if (strncmp(t, "memory", 6) == 0 && (t[6] == ',' || t[6] == '\0'))
            return 1;
    return 0;
}

/* The process's path in the hierarchy: the v2 line ("0::/path") when
 * `v1` is 0, else the v1 line whose controllers include memory. */
static int own_cgroup(const char *root, int v1, char *path, size_t size)
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/proc/self/cgroup", root);
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    char line[PATH_MAX + 256];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1;
        if (v1) {
            /* "4:memory:/path" or "3:cpu,memory:/path" */
            found = has_memory(controllers);
        } else {
            found = strncmp(line, "0:", 2) == 0 && *controllers == '\0';
        }
        if (found)
            snprintf(path, size, "%s", c2 + 1);
    }
    fclose(f);
    return found;
}

/* mountinfo writes a space in a path as \040 (and tab, newline, backslash so). */
static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* Where the hierarchy is mounted: mountinfo's line of type cgroup2, or of
 * type cgroup with the memory controller in its options. */
static int find_mount(const char *root, int v1, cgroup_mount *m)
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/proc/self/mountinfo", root);
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    char line[3 * PATH_MAX];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        /* id parent major:minor root point options [optional...] - type source super */
        char *fields[5] = {NULL};
        char *save = NULL, *tok = strtok_r(line, " \n", &save);
        for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, " \n", &save))
            fields[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " \n", &save);
        const char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
        const char *source = type ? strtok_r(NULL, " \n", &save) : NULL;
        const char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
        if (!fields[4] || !type)
            continue;
        if (v1) {
            if (strcmp(type, "cgroup") != 0 || !super)
                continue;
            found = has_memory(super);
        } else {
            found = strcmp(type, "cgroup2") == 0;
        }
        if (found) {
            snprintf(m->root, sizeof m->root, "%s", fields[3]);
            snprintf(m->point, sizeof m->point, "%s", fields[4]);
            unescape(m->root);
            unescape(m->point);
        }
    }
    fclose(f);
    return found;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Walks from the process's cgroup up to the mount's top and keeps the level
 * with the least headroom under a limit (a container's limit is often set
 * on a parent of the process's own cgroup). */
static void cgroup_figures(const char *root, int v1, sw_host_memory *out, uint64_t *best_headroom)
{
    cgroup_mount m;
    char own[PATH_MAX];
    if (!own_cgroup(root, v1, own, sizeof own) || !find_mount(root, v1, &m))
        return;
    /* the process's path below the mount: its own path less the mount's
     * root; a path outside that root (a container's cgroup namespace seen
     * from the host side) leaves the mount's top */
    const char *rel = "";
    size_t n = strlen(m.root);
    if (strcmp(m.root, "/") == 0)
        rel = own;
    else if (strncmp(own, m.root, n) == 0 && (own[n] == '/' || own[n] == '\0'))
        rel = own + n;
    char dir[PATH_MAX];
    int len = snprintf(dir, sizeof dir, "%s%s%s", root, m.point, rel);
    if (len < 0 || (size_t)len >= sizeof dir)
        return;
    size_t top = strlen(root) + strlen(m.point);
    if (!is_dir(dir))
        dir[top] = '\0';
    const char *limit_name = v1 ? "memory.limit_in_bytes" : "memory.max";
    const char *usage_name = v1 ? "memory.usage_in_bytes" : "memory.current";
    const char *inactive_key = v1 ? "total_inactive_file" : "inactive_file";
    for (;;) {
        char file[PATH_MAX + 32];
        uint64_t limit = 0, usage = 0, inactive = 0;
        snprintf(file, sizeof file, "%s/%s", dir, limit_name);
        int has_limit = read_number(file, &limit) == 1 && limit < NO_LIMIT_FROM;
        snprintf(file, sizeof file, "%s/%s", dir, usage_name);
        if (has_limit && read_number(file, &usage) == 1) {
            snprintf(file, sizeof file, "%s/memory.stat", dir);
            if (read_keyed(file, inactive_key, &inactive))
                usage = inactive < usage ? usage - inactive : 0;
            uint64_t headroom = limit > usage ? limit - usage : 0;
            if (out->cgroup_version == 0 || headroom < *best_headroom) {
                *best_headroom = headroom;
                out->cgroup_limit_bytes = limit;
                out->cgroup_used_bytes = usage;
                out->cgroup_version = v1 ? 1 : 2;
            }
        }
        char *slash = strrchr(dir + top, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
}

void sw_host_memory_read(const char *root, sw_host_memory *out)
{
    memset(out, 0, sizeof *out);
    if (!root)
        root = "";
    host_figures(root, out);
    /* a hybrid machine has both hierarchies; the memory controller is on one */
    uint64_t headroom = 0;
    cgroup_figures(root, 0, out, &headroom);
    cgroup_figures(root, 1, out, &headroom);
    out->total_bytes = out->host_total_bytes;
    out->available_bytes = out->host_available_bytes;
    out->source = SW_MEMORY_HOST;
    if (out->cgroup_version &&
        (out->host_total_bytes == 0 || headroom < out->host_available_bytes)) {
        out->total_bytes = out->cgroup_limit_bytes;
        out->available_bytes = headroom;
        out->source = SW_MEMORY_CGROUP;
    }
}

const char *sw_memory_source_name(sw_memory_source source)
{
    return source == SW_MEMORY_CGROUP ? "cgroup" : "host";
}
