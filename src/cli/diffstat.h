/*
 * diffstat.h: the arithmetic behind allocprof diff and the differential
 * flame graph: the confidence interval of a difference between two
 * independent estimates, the "nothing sampled" upper bound, the sides of a
 * difference taken from heap views (heapview.h), and the site-by-site join
 * of two views that allocprof diff prints.
 */
#ifndef ALLOCPROF_CLI_DIFFSTAT_H
#define ALLOCPROF_CLI_DIFFSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapview.h"

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
 * One side of a difference from a statistic of view v (NULL = the site is
 * absent there): its own interval at level sqrt(level), or, with no
 * sample, [0, vu_empty_upper] (exact 0 at rate 1).
 */
void vu_diff_side(const hv_view *v, const hv_stat *st, double level,
		  vu_side *out);
/* NEW - BASE of a site (b in view vb, n in view vn; either may be NULL)
 * with its interval at level (vu_diff_interval's rule). 0 or AP_EINVAL. */
int vu_diff_stats(const hv_view *vb, const hv_stat *b, const hv_view *vn,
		  const hv_stat *n, double level, vu_diff *out);

/* One site of two views: either side may be missing (NULL). */
typedef struct vu_row {
	const char *name;
	const hv_site *base, *nw;
	vu_diff d; /* NEW - BASE; lo, hi NaN when no interval can be given */
} vu_row;

/* The sites of BASE and NEW matched by name, and their totals. */
typedef struct vu_join {
	const hv_view *vb, *vn;
	double level;
	vu_row *rows;   /* by the size of the change, largest first */
	size_t nrows;
	vu_row total;   /* the change of the totals */
	hv_stat total_base, total_new;
} vu_join;

/*
 * Join the sites of vb and vn by display name (a site missing on one side
 * counts as 0 there, with vu_diff_side's bound) and compute each change at
 * level. 0, or -1 when out of memory. Free with vu_join_free.
 */
int vu_join_views(const hv_view *vb, const hv_view *vn, double level,
		  vu_join *out);
void vu_join_free(vu_join *j);

#endif
