/*
 * allocprof/runtime.h: the small API liballocprof_preload.so offers to the
 * program it profiles.
 *
 * Every function is declared weak, so a program can call them without
 * linking anything: when the runtime is not preloaded their addresses are
 * NULL. The pattern is
 *
 *     #include <allocprof/runtime.h>
 *     ...
 *     if (ap_runtime_dump)
 *             ap_runtime_dump(NULL);   // a profile now, named by output=
 *
 * Errors follow allocprof/common.h: 0 or a negative AP_E* code. All of them
 * are thread-safe; none may be called from a signal handler.
 */
#ifndef ALLOCPROF_RUNTIME_H
#define ALLOCPROF_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(AP_RUNTIME_BUILDING)
#define AP_RUNTIME_API __attribute__((visibility("default")))
#else
#define AP_RUNTIME_API __attribute__((weak))
#endif

/* Current estimates (Horvitz-Thompson, unbiased) over the whole process. */
typedef struct ap_runtime_totals {
	double alloc_bytes;   /* bytes allocated since start */
	double alloc_objects; /* allocations since start */
	double inuse_bytes;   /* bytes allocated and not yet freed */
	double inuse_objects;
	double peak_inuse_bytes; /* highest inuse_bytes seen */
	uint64_t samples;     /* sampled allocations recorded */
	uint64_t rate;        /* the process-wide mean sampling interval R */
} ap_runtime_totals;

/*
 * Sample the calling thread's future allocations at mean interval rate bytes
 * (1 = every allocation). Each sample keeps the weight of the rate it was
 * drawn at, so estimates stay unbiased across changes; samples drawn at a
 * rate other than the process default carry a "rate" label in the profile.
 * 0 = back to the process default. AP_ERANGE above 2^56; AP_EUNSUPPORTED
 * when the runtime is not active (disabled, or a fork child with fork=stop).
 */
AP_RUNTIME_API int ap_runtime_set_thread_rate(uint64_t rate);

/*
 * Write a profile now, synchronously, from the calling thread: to path, or
 * when path is NULL to the next name of the configured pattern (output=).
 * 0, AP_EIO (the file could not be written: errno tells why; a message is
 * also printed on stderr), AP_ENOMEM, AP_EUNSUPPORTED (runtime inactive).
 */
AP_RUNTIME_API int ap_runtime_dump(const char *path);

/* Fill *out with the current estimates. 0, AP_EINVAL, AP_EUNSUPPORTED. */
AP_RUNTIME_API int ap_runtime_get_totals(ap_runtime_totals *out);

/*
 * For `allocprof attach` (docs/ATTACH.md), which calls them inside the
 * program it attaches to; a program has no reason to. ap_runtime_attach
 * starts the runtime in a program it was not preloaded into (options as in
 * ALLOCPROF_OPTIONS) and redirects the program's allocator calls to it, or
 * turns sampling on again after a detach. ap_runtime_detach writes the
 * final profile (its name into path, cap bytes) and turns sampling off.
 * 0, or AP_EUNSUPPORTED (preloaded, already attached / not attached),
 * AP_ENOTFOUND, AP_EIO (attach: the runtime could not start, say no
 * allocator was found; it wrote why to the program's stderr; detach: the
 * profile could not be written), or AP_EBUSY when the calling thread is
 * inside the runtime (the caller tries again in another thread).
 */
AP_RUNTIME_API int ap_runtime_attach(const char *options);
AP_RUNTIME_API int ap_runtime_detach(char *path, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_RUNTIME_H */
