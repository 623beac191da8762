/*
 * stats_patterns.h: the five allocation populations the Monte Carlo
 * suites replay through the real sampler (all-small, all-large, mixed
 * 16 B..1 MiB, 100 B / 102400 B alternating, one size R ln 2), shared so
 * that every suite judges its estimator on the same populations.
 * Header-only (static functions).
 */
#ifndef ALLOCPROF_TESTS_STATS_PATTERNS_H
#define ALLOCPROF_TESTS_STATS_PATTERNS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "allocprof/prng.h"

enum { STATS_NPATTERNS = 5 };

static uint64_t stats_uniform_size(ap_prng *r, uint64_t lo, uint64_t hi)
{
	return lo + ap_prng_below(r, hi - lo + 1);
}

/*
 * Population `which`: its name, rate and n sizes (malloc'd into *sizes).
 * Sizes relative to R decide everything: pi ~ Z/R for small Z, ~1 for
 * Z >> R. Each has 50-150 expected samples per replay.
 */
static int stats_pattern_make(int which, const char **name, uint64_t *rate,
			      size_t *n, uint64_t **sizes)
{
	static const struct {
		const char *name;
		uint64_t rate;
		size_t n;
	} shape[STATS_NPATTERNS] = {
		{"all-small", 4096, 6000},    /* 8..128 B: ~100 samples */
		{"all-large", 4096, 80},      /* R..3R: pi 0.63..0.95 */
		{"mixed", 65536, 2000},	      /* 16 B..1 MiB, three tiers */
		{"periodic", 102400, 160},    /* 100 B, 102400 B, ... */
		{"R-ln2", 4096, 300},	      /* pi = 1/2: ~150 samples */
	};
	ap_prng r;
	ap_prng_seed(&r, 1000 + (uint64_t)which);
	*name = shape[which].name;
	*rate = shape[which].rate;
	*n = shape[which].n;
	uint64_t *z = malloc(*n * sizeof *z);
	if (!z)
		return -1;
	for (size_t i = 0; i < *n; i++) {
		uint64_t t;
		switch (which) {
		case 0: z[i] = stats_uniform_size(&r, 8, 128); break;
		case 1: z[i] = stats_uniform_size(&r, 4096, 3 * 4096); break;
		case 2:
			t = ap_prng_below(&r, 100);
			z[i] = t < 90   ? stats_uniform_size(&r, 16, 512)
			       : t < 99 ? stats_uniform_size(&r, 4096, 65536)
					: stats_uniform_size(&r, 262144, 1048576);
			break;
		case 3: z[i] = i % 2 ? 102400 : 100; break;
		default: z[i] = (uint64_t)floor(4096 * 0.69314718055994530942 + 0.5); break;
		}
	}
	*sizes = z;
	return 0;
}

#endif
