/*
 * views_util.h: the arithmetic behind allocprof diff and folded that does
 * not depend on how profiles are loaded: the confidence interval of a
 * difference between two independent estimates, the "nothing sampled" upper
 * bound, folded-stack frame sanitising and weight rounding that preserves
 * the total. Kept apart from heapview so it can be unit-tested alone.
 */
#ifndef ALLOCPROF_CLI_VIEWS_UTIL_H
#define ALLOCPROF_CLI_VIEWS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One side (BASE or NEW) of a difference. */
typedef struct vu_side {
	double bytes;     /* HT estimate */
	double var_bytes; /* HT variance estimate */
	uint64_t samples; /* sampled allocations behind it */
	bool exact;       /* no sampling error (rate 1): bytes is the truth */
	/* This side's own interval at level sqrt(L) (vu_side_level), used by
	 * the conservative combination; for samples == 0 the upper bound of
	 * vu_empty_upper, not 0. */
	double lo, hi;
} vu_side;

typedef enum vu_method {
	VU_EXACT = 0,    /* both sides exact: the change is the truth */
	VU_NORMAL = 1,   /* both sides >= AP_NB_MAX_SAMPLES: variances add */
	VU_COMBINED = 2  /* few samples: [lo_new - hi_base, hi_new - lo_base] */
} vu_method;

typedef struct vu_diff {
	double change, lo, hi; /* NEW - BASE and its interval */
	bool significant;      /* the interval excludes 0 */
	vu_method method;
} vu_diff;

/*
 * The level at which each side's own interval must be computed for the
 * combined method to reach level overall: sqrt(level), because the two
 * sides are independent and both intervals cover with probability
 * sqrt(level)^2 = level (at least, as exact intervals are conservative).
 */
double vu_side_level(double level);

/*
 * Interval for new - base at level (0 < level < 1). Rule: both exact ->
 * exact; every non-exact side with >= AP_NB_MAX_SAMPLES samples -> normal
 * with variance var_new + var_base; otherwise the conservative combination
 * of the sides' own intervals. 0, or AP_EINVAL for a bad level or NaN input.
 */
int vu_diff_interval(const vu_side *base, const vu_side *nw, double level,
		     vu_diff *out);

/*
 * Upper bound on the bytes behind a site with no sample at all at mean
 * interval rate: the NB upper bound from one sample ([R4]: the window
 * ends between sample events), i.e. about rate * ln(2 / (1 - level)).
 * 0 at rate <= 1 (every byte would have been seen); NaN for bad input.
 */
double vu_empty_upper(double rate, double level);

/* "alloc"/"inuse"... are heapview's; these name vu_method for output. */
const char *vu_method_name(vu_method m); /* "exact", "normal", "combined" */

/*
 * Write one frame of a folded line: ';' becomes ':', control characters
 * (newline included) become '?', an empty or NULL name becomes
 * "[unknown]"; leading spaces are dropped when first is true (a folded line
 * must not start with a space).
 */
void vu_folded_frame(FILE *out, const char *name, bool first);

/*
 * Round n non-negative weights to integers so that they sum to the rounded
 * sum of the inputs and each moves by less than 1 (cumulative rounding:
 * out[i] = round(prefix_i) - round(prefix_{i-1})). NaN and negative inputs
 * count as 0.
 */
void vu_round_weights(const double *in, size_t n, uint64_t *out);

#endif
