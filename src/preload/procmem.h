/*
 * procmem.h: the process's memory as the kernel, the allocator underneath
 * and the runtime itself see it (allocprof/memory.h; docs/MEMORY.md).
 *
 * Files under /proc and /sys are read with open/read/close into a buffer
 * on the stack: no stdio, no malloc, no descriptor kept. The allocator's
 * statistics (glibc mallinfo2, jemalloc mallctl, gperftools
 * MallocExtension_GetNumericProperty) take the allocator's locks, so
 * procmem_read runs only where the runtime may wait on them: the dumper
 * and HTTP threads and the dump at exit, never inside an interposed
 * malloc or a signal handler.
 */
#ifndef AP_PRELOAD_PROCMEM_H
#define AP_PRELOAD_PROCMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/memory.h"

/* Everything measurable now into *m (fields that cannot be measured stay
 * unset); the allocator's statistics only when with_allocator (a thread
 * the program interrupted may hold the allocator's locks: see dumper.c).
 * Guard set, no runtime lock held. */
void procmem_read(ap_memory *m, bool with_allocator);

/* Resident set size from /proc/self/statm (one small read). */
bool procmem_rss(uint64_t *bytes);
/* The cgroup's memory usage and limit (v2 memory.current/memory.max, else
 * v1 memory.usage_in_bytes/limit_in_bytes). *limit = 0 when unlimited.
 * False when no memory cgroup file could be read. */
bool procmem_cgroup(uint64_t *usage, uint64_t *limit);
/* Memory pressure: the "some avg10" share, in hundredths of a percent, of
 * the cgroup's memory.pressure (v2), else the system's
 * /proc/pressure/memory. False when the kernel offers neither. */
bool procmem_psi(uint32_t *some_avg10_centi);

/* ---- parsers (pure; unit tests and tests/fuzz/preload_procmem_fuzz.c) -- */

/* "Key:   123 kB" anywhere at a line start in (buf, n): bytes. */
bool procmem_kb_field(const char *buf, size_t n, const char *key, uint64_t *bytes);
/* The k-th (0-based) space-separated decimal number of the first line. */
bool procmem_nth_u64(const char *buf, size_t n, unsigned k, uint64_t *out);
/* The cgroup path of the v2 line ("0::/a/b") or, v2 false, of the v1
 * line whose controller list has "memory", into out (NUL-terminated).
 * False when absent, too long, or holding "..". */
bool procmem_cgroup_path(const char *buf, size_t n, bool v2, char *out, size_t cap);
/* "some avg10=12.34 ..." -> 1234. */
bool procmem_psi_parse(const char *buf, size_t n, uint32_t *centi);

/* Whether procmem_read may walk the page tables (smaps_rollup) at now_ns,
 * the last walk having ended at last_end_ns (0: none yet) after taking
 * last_cost_ns: once PROCMEM_WALK_SPACING times its cost has passed, so
 * the walks take at most 1% of the time (procmem.c). A clock that went
 * back allows it. */
#define PROCMEM_WALK_SPACING 100
bool procmem_walk_due(uint64_t now_ns, uint64_t last_end_ns, uint64_t last_cost_ns);

#endif
