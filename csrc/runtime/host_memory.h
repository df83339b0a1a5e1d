/* How much host memory this process can still have: the figures behind the
 * CPU backend's free/total, the memory checkpoints and their warnings.
 *
 * Two limits apply to a process: the machine's (/proc/meminfo: MemTotal, and
 * MemAvailable, what the kernel says can be had without swapping: free pages
 * plus the page cache and slab it can reclaim), and its cgroup's when one is
 * set (a container, a Colab runtime, a systemd slice: cgroup v2 memory.max,
 * v1 memory.limit_in_bytes), where going over means the OOM killer. Whichever
 * leaves less available is the one reported. MemFree (sysconf's
 * _SC_AVPHYS_PAGES) is not used: it counts every page of file cache as used,
 * so a machine that has read a few model files looks full.
 *
 * `root` is prefixed to every path read ("/proc/meminfo" becomes
 * root + "/proc/meminfo"): NULL or "" reads this machine; tests pass a folder
 * holding real-shaped copies of those files. */
#ifndef SW_HOST_MEMORY_H
#define SW_HOST_MEMORY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sw_memory_source {
    SW_MEMORY_HOST = 0,   /* the machine's figures */
    SW_MEMORY_CGROUP = 1, /* the process's cgroup limit is the tighter one */
} sw_memory_source;

typedef struct sw_host_memory {
    /* The tighter of the two limits: what the checkpoints show and warn on. */
    uint64_t total_bytes;     /* MemTotal, or the cgroup's limit */
    uint64_t available_bytes; /* MemAvailable, or limit - the cgroup's working set */
    sw_memory_source source;
    /* Both sides, for reports that want them. */
    uint64_t host_total_bytes;
    uint64_t host_available_bytes;
    /* The cgroup level (this one or an ancestor) with the least headroom
     * under its limit; all 0 when no limit is set or none could be read.
     * used = usage less the inactive file cache (what the kernel reclaims
     * before it kills), as `docker stats` and the kubelet count it. */
    uint64_t cgroup_limit_bytes;
    uint64_t cgroup_used_bytes;
    int cgroup_version; /* 1 or 2; 0 without a limit */
} sw_host_memory;

/* Fills *out. Never fails: files that are missing or unreadable leave their
 * part out (no cgroup limit; without /proc/meminfo, sysconf's physical pages
 * with MemFree as the last resort). */
void sw_host_memory_read(const char *root, sw_host_memory *out);

/* "host" or "cgroup". */
const char *sw_memory_source_name(sw_memory_source source);

#ifdef __cplusplus
}
#endif

#endif
