/*
 * allocprof/common.h: conventions shared by every liballocprof module.
 *
 * Error convention (the one rule for the whole library): functions that can
 * fail return int, 0 on success and a negative AP_E* code on failure; the
 * message for a code comes from ap_strerror(). Functions that compute a value
 * (probabilities, estimates) document what they return for invalid input,
 * usually NaN, and never abort.
 *
 * Memory: modules that allocate take an ap_allocator so that the preload
 * runtime can hand them its own mmap-backed arena instead of the malloc it
 * intercepts, and so tests can inject allocation failures. NULL means libc.
 *
 * Documents: the headers cite allocprof's documents by file name
 * (STATISTICS.md, HISTOGRAMS.md) and its sources as [R1], [R2], ...
 * (REFERENCES.md lists each with its public address). They are in the
 * source tree's docs/ and are installed with the headers, in
 * share/doc/allocprof.
 */
#ifndef ALLOCPROF_COMMON_H
#define ALLOCPROF_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(AP_BUILDING_LIBRARY)
#define AP_API __attribute__((visibility("default")))
#else
#define AP_API
#endif

#define AP_LIKELY(x) __builtin_expect(!!(x), 1)
#define AP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Error codes: negative, errno-flavoured, stable. */
enum ap_error {
	AP_OK = 0,
	AP_EINVAL = -1,    /* an argument is out of its documented domain */
	AP_ENOMEM = -2,    /* the allocator returned NULL */
	AP_ERANGE = -3,    /* a result or input does not fit its type */
	AP_ECORRUPT = -4,  /* encoded input is malformed or truncated */
	AP_EVERSION = -5,  /* encoded input has an unsupported version */
	AP_EIO = -6,       /* a read or write failed (errno kept by the caller) */
	AP_ENOTFOUND = -7, /* a looked-up item does not exist */
	AP_EUNSUPPORTED = -8, /* valid input this build cannot handle */
	AP_EBUSY = -9      /* not now: the caller may try again later */
};

/* A static, one-line English description of code (never NULL). */
AP_API const char *ap_strerror(int code);

/*
 * Allocator hooks. alloc(ctx, n) returns n bytes aligned for any type or NULL;
 * realloc(ctx, p, old_n, new_n) grows or shrinks; free(ctx, p, n) releases (n
 * is the size last requested for p, or 0 when unknown).
 */
typedef struct ap_allocator {
	void *(*alloc)(void *ctx, size_t n);
	void *(*realloc)(void *ctx, void *p, size_t old_n, size_t new_n);
	void (*free)(void *ctx, void *p, size_t n);
	void *ctx;
} ap_allocator;

/* The libc allocator (malloc/realloc/free). Used wherever NULL is passed. */
AP_API const ap_allocator *ap_allocator_libc(void);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_COMMON_H */
