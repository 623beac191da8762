/*
 * allocprof/memory.h: the process-memory record a dump carries, so that a
 * report can explain resident memory from the sampled heap up
 * (docs/MEMORY.md).
 *
 * The runtime measures, at each dump, the kernel's view of the process
 * (resident memory split into anonymous, file-backed and shared memory;
 * the cgroup's usage and limit), the allocator's own view (glibc's
 * mallinfo2, jemalloc's stats.* through mallctl, gperftools'
 * MallocExtension properties) and its own overhead. Every value is
 * either measured or marked missing: nothing is derived here.
 *
 * The record travels as the profile extension AP_EXT_MEMORY
 * (allocprof/profile.h, ap_profile_ext_add): UTF-8 text, one "key=value"
 * per line, keys as ap_memory_key_name gives them (the same names the
 * JSON report uses). Unknown keys are skipped on reading, so later
 * versions may add keys; a key missing means "not measured".
 *
 * Encoding never allocates (the runtime calls it with a stack buffer).
 */
#ifndef ALLOCPROF_MEMORY_H
#define ALLOCPROF_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Extension names (docs/FORMATS.md, "Extensions"). */
#define AP_EXT_MEMORY "memory"
/* What made the runtime write a dump other than the usual triggers: the
 * data is the trigger's name ("rss_limit", "psi_limit"). */
#define AP_EXT_TRIGGER "trigger"

typedef enum ap_memory_key {
	AP_MEM_RSS = 0,       /* resident set size */
	AP_MEM_ANON,          /* anonymous resident pages */
	AP_MEM_FILE,          /* file-backed resident pages (shmem excluded) */
	AP_MEM_SHMEM,         /* resident shared memory (tmpfs, shm, MAP_SHARED anon) */
	AP_MEM_SHARED,        /* resident pages also mapped by another process */
	AP_MEM_SWAP,          /* swapped out */
	AP_MEM_CGROUP_USAGE,  /* the cgroup's charged memory */
	AP_MEM_CGROUP_LIMIT,  /* its hard limit (absent when unlimited) */
	AP_MEM_ALLOC_ALLOCATED, /* allocator: bytes in blocks handed out */
	AP_MEM_ALLOC_ACTIVE,    /* jemalloc: pages of active extents */
	AP_MEM_ALLOC_MAPPED,    /* address space the allocator holds */
	AP_MEM_ALLOC_RESIDENT,  /* of it, resident (jemalloc, tcmalloc) */
	AP_MEM_ALLOC_RETAINED,  /* kept but given back to the kernel */
	AP_MEM_ALLOC_METADATA,  /* the allocator's own bookkeeping */
	AP_MEM_ALLOC_FREE,      /* glibc: free bytes inside its arenas */
	AP_MEM_RUNTIME_RANGE,   /* sampled blocks served from allocprof's range
				   (the program's heap, outside the allocator) */
	AP_MEM_RUNTIME_CACHED,  /* freed range pages kept for reuse */
	AP_MEM_RUNTIME_ARENA,   /* allocprof's own arena, mapped */
	AP_MEM_RUNTIME_OTHER,   /* side table and sampled set, writable */
	AP_MEM_TIME_NS,         /* when measured (realtime, ns since the epoch) */
	AP_MEM_NKEYS
} ap_memory_key;

#define AP_MEMORY_WORD_MAX 31 /* longest allocator / source name */

typedef struct ap_memory {
	uint64_t v[AP_MEM_NKEYS];
	uint32_t have; /* bit k set: v[k] was measured */
	/* "glibc", "jemalloc", "tcmalloc" or "" (unknown); NUL-terminated,
	 * [A-Za-z0-9_.-] only */
	char allocator[AP_MEMORY_WORD_MAX + 1];
	/* where the RSS split came from: "smaps_rollup", "status" or "" */
	char source[AP_MEMORY_WORD_MAX + 1];
} ap_memory;

/* Name of key k ("rss_bytes", "allocator_allocated_bytes", ...), or NULL. */
AP_API const char *ap_memory_key_name(ap_memory_key k);

/* Set v[k] and mark it measured. */
AP_API void ap_memory_set(ap_memory *m, ap_memory_key k, uint64_t v);
/* true, with *out = v[k], when k was measured. */
AP_API bool ap_memory_get(const ap_memory *m, ap_memory_key k, uint64_t *out);

/*
 * The record as text into buf (cap bytes, NUL-terminated); *len gets the
 * length without the NUL. Never allocates. 0, or AP_ERANGE when it does not
 * fit (a record is at most about 1 KiB), AP_EINVAL for a name with
 * characters outside [A-Za-z0-9_.-].
 */
AP_API int ap_memory_encode(const ap_memory *m, char *buf, size_t cap,
			    size_t *len);
/*
 * Read a record from (data, len): 0, or AP_ECORRUPT (a line without '=', a
 * byte value that is not a decimal number below 2^64, a repeated key, a
 * name that is too long or has other characters). Unknown keys are
 * skipped. Never allocates.
 */
AP_API int ap_memory_decode(const void *data, size_t len, ap_memory *m);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_MEMORY_H */
