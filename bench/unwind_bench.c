/*
 * unwind_bench.c: nanoseconds per stack capture at a given depth for each
 * of the runtime's unwinders (libunwind, libgcc, fp), plus the cost of
 * interning the captured stack, to pick the default unwinder by numbers.
 *
 *   unwind_bench DEPTH REPS [UNWINDER]
 *
 * Recurses DEPTH frames (built with frame pointers so all three unwinders
 * see the same stack), then captures REPS times with each unwinder in turn
 * (and with libunwind alone, without the frame-pointer fast path:
 * "libunwind-only") and prints "unwinder frames ns_per_capture" lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwinder.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static long reps;
static const char *only; /* the one unwinder to measure, or NULL: all */

/* The three option values, and libunwind without its frame-pointer fast
 * path (what unwinder=libunwind was before it had one). */
static const struct {
	unwinder_kind k;
	const char *name;
} kinds[] = { { UNWINDER_LIBUNWIND, "libunwind" },
	      { UNWINDER_LIBGCC, "libgcc" },
	      { UNWINDER_FP, "fp" },
	      { UNWINDER_LIBUNWIND_ONLY, "libunwind-only" } };

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void measure(void)
{
	uintptr_t pcs[UNWIND_DEPTH_MAX];
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (only && strcmp(only, kinds[i].name) != 0)
			continue;
		int n = 0;
		uint64_t t0 = now_ns();
		for (long r = 0; r < reps; r++)
			n = unwind_capture(kinds[i].k, pcs, 64);
		uint64_t t1 = now_ns();
		printf("%s %d %.1f\n", kinds[i].name, n, (double)(t1 - t0) / (double)reps);
	}
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int
recurse(int level)
{
	volatile int keep = level;
	if (level <= 0)
		measure();
	else
		recurse(level - 1);
	return keep;
}

__attribute__((optimize("no-omit-frame-pointer"))) int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEPTH REPS\n", argv[0]);
		return 1;
	}
	int depth = atoi(argv[1]);
	reps = atol(argv[2]);
	only = argc > 3 ? argv[3] : NULL;
	if (depth < 0 || depth > 200 || reps <= 0)
		return 1;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (unwind_prepare(kinds[i].k) != 0) {
			fprintf(stderr, "unwinder %s unavailable\n", kinds[i].name);
			return 2;
		}
	/* main and the C start-up frames add ~3 to DEPTH. */
	recurse(depth - 3);
	return 0;
}
