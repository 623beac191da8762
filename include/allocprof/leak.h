/*
 * allocprof/leak.h: leak verdicts from a series of one process's per-site
 * live-bytes estimates (interval dumps, later the timeline ring).
 *
 * Per site: the growth rate of live bytes over the later half of the run
 * (bytes/s) with a confidence interval, and a one-sided p-value for "still
 * growing". Model (docs/TIME.md, "Leaks"): over the later half the live
 * bytes are a random walk with drift, so the increments between successive
 * points are independent with variance proportional to their duration.
 * That holds exactly for the sampling error of a leak (blocks allocated
 * and never freed); blocks living across several points make increments
 * negatively correlated and stationary sites (caches that plateaued, pools,
 * churn) have increments that cancel, which only makes the test
 * conservative. Benjamini-Hochberg across sites turns p into q-values.
 * Pure functions, no global state.
 */
#ifndef ALLOCPROF_LEAK_H
#define ALLOCPROF_LEAK_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One point of a site's series: the estimate at one dump. */
typedef struct ap_leak_point {
	double t_s;   /* seconds since the process started (increasing) */
	double bytes; /* HT estimate of the site's live bytes at t_s */
	double var;   /* its sampling variance estimate (HT var_bytes) */
} ap_leak_point;

/* A site's series (points in increasing time). */
typedef struct ap_leak_series {
	const ap_leak_point *pts;
	size_t n;
} ap_leak_series;

typedef struct ap_leak_result {
	double rate, rate_lo, rate_hi; /* bytes/s over the later half */
	double p;      /* one-sided p-value of rate <= 0 */
	double q;      /* Benjamini-Hochberg q-value (ap_leak_fdr), else p */
	bool leak;     /* q <= fdr (ap_leak_fdr) */
	size_t points; /* points of the later half used (0: too few) */
} ap_leak_result;

/*
 * Fewest points in the later half for a verdict: with fewer, p = 1, the
 * interval is (-inf, +inf) and the site is never a leak.
 */
#define AP_LEAK_MIN_POINTS 3

/*
 * Trend of one series at level (0 < level < 1): the later half is the
 * points from the last one at or before the midpoint of [t_first, t_last]
 * to the end. rate = (bytes_end - bytes_start) / (t_end - t_start); its
 * variance the larger of the increments' empirical random-walk variance
 * and |var_end - var_start| / T^2 (a lower bound on the sampling variance
 * of the change whatever the blocks shared); Student t with m - 2 degrees
 * of freedom (m points, m - 1 increments, one rate fitted). q = p, leak = false (set by ap_leak_fdr).
 * AP_EINVAL (out NaN) for NULL pointers (n > 0), NaN/infinite values, a
 * negative var, times not strictly increasing, a level outside (0, 1).
 */
AP_API int ap_leak_trend(const ap_leak_point *pts, size_t n, double level,
			 ap_leak_result *out);

/*
 * ap_leak_trend for each of nsites series, then Benjamini-Hochberg
 * q-values across them; leak = (q <= fdr). fdr in (0, 1). Errors as
 * ap_leak_trend (the first failing site's), AP_ENOMEM. alloc NULL = libc.
 */
AP_API int ap_leak_fdr(const ap_leak_series *sites, size_t nsites,
		       double level, double fdr, const ap_allocator *alloc,
		       ap_leak_result *out);

/* P(T > t) for Student's t with df > 0 degrees of freedom; NaN if invalid. */
AP_API double ap_student_sf(double t, double df);
/* The quantile: t with P(T <= t) = p, 0 < p < 1; NaN if invalid. */
AP_API double ap_student_quantile(double p, double df);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_LEAK_H */
