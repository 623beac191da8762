/*
 * bench/lib/bench_util.h: the few helpers every benchmark program needs
 * (monotonic clock, a cheap deterministic PRNG, checked malloc, strict
 * argument parsing), so workloads do not each carry their own copy.
 * Needs _POSIX_C_SOURCE >= 199309L (or _GNU_SOURCE) defined before the
 * first include, for clock_gettime. Header-only (static functions): bench programs are single files that the
 * bench/CMakeLists.txt glob builds; include it as "lib/bench_util.h".
 * Errors print "PROG: message" and exit: 1 for a usage error, 2 for a
 * resource failure, as the workloads document.
 */
#ifndef ALLOCPROF_BENCH_UTIL_H
#define ALLOCPROF_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Marsaglia's xorshift64: *s must be nonzero. Deterministic size streams. */
static inline uint64_t bench_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* malloc that exits with status 2 and a message naming prog on failure. */
static inline void *bench_xmalloc(const char *prog, size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "%s: out of memory allocating %zu bytes\n", prog, n);
		exit(2);
	}
	return p;
}

/* Parse a decimal in [lo, hi] or exit 1 with "PROG: bad WHAT 'S' (lo..hi)". */
static inline long bench_arg_long(const char *prog, const char *s, long lo, long hi,
				  const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: bad %s '%s' (%ld..%ld)\n", prog, what, s, lo, hi);
		exit(1);
	}
	return v;
}

#endif /* ALLOCPROF_BENCH_UTIL_H */
