/*
 * allocprof/difftest.h: did a site's memory change between two profiles?
 * Per-site p-values, an interval for the change, Benjamini-Hochberg
 * q-values across sites, and replicated runs (docs/DIFF.md,
 * docs/STATISTICS.md section 8).
 *
 * Each side of a site is an ap_row (allocprof/estimate.h): its additive
 * sums (HT bytes and objects with variances and squared-variance sums,
 * sample counts, u) and rate. The test depends on where each side's
 * uncertainty is:
 *
 *  - both exact (rate 1): the difference is known; p = 1 if it is 0, else 0.
 *  - both sides of many samples (the row's normal regime: effective sample
 *    size >= AP_ESS_NORMAL_MIN and variance >= that many R^2): Wald,
 *    z = change / sqrt(var_base + var_new).
 *  - both sides small objects (every sample uncertain as a small object's,
 *    var_bytes >= 0.95 samples R^2) or unsampled: the exact conditional
 *    test. Counts of small-object samples are Poisson with mean bytes / R,
 *    so given n = s_base + s_new, s_new is Binomial(n, R_base / (R_base +
 *    R_new)) under "no change", whatever the rates.
 *  - otherwise (near-certain large objects beside uncertain ones, mid-size
 *    objects, a side with much more data than the other): each side is its
 *    certain part plus w times a Poisson count (the split model of
 *    ap_row_bytes_interval); under "no change" the common total is
 *    estimated and P(|change*| >= |change|) is summed exactly over the
 *    two Poisson laws.
 *
 * The interval of the change combines the two sides' own row intervals by
 * MOVER (Zou and Donner 2008: each bound of a difference from the squared
 * distances to the sides' bounds), or is Wald's where Wald applies.
 *
 * Pure functions except ap_diff_fdr (allocates through an ap_allocator).
 */
#ifndef ALLOCPROF_DIFFTEST_H
#define ALLOCPROF_DIFFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"
#include "allocprof/estimate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default false discovery rate (`--fdr`). */
#define AP_DIFF_FDR_DEFAULT 0.05

typedef enum ap_diff_method {
	AP_DIFF_NONE = 0,    /* neither side sampled: nothing seen, p = 1 */
	AP_DIFF_EXACT,       /* both exact */
	AP_DIFF_WALD,        /* normal, variances add */
	AP_DIFF_CONDITIONAL, /* exact conditional binomial test */
	AP_DIFF_SPLIT,       /* exact test under the split (certain + Poisson) model */
	AP_DIFF_WELCH        /* replicated runs: Welch's t */
} ap_diff_method;

/* "none sampled", "exact", "wald", "conditional", "split", "welch". */
AP_API const char *ap_diff_method_name(ap_diff_method m);

typedef struct ap_diff_result {
	double change;      /* new - base (HT bytes; means for replicates) */
	double lo, hi;      /* interval of the change at the level asked */
	double p;           /* two-sided p-value of "no change" */
	double q;           /* Benjamini-Hochberg q-value (ap_diff_fdr) */
	bool significant;   /* q <= fdr (ap_diff_fdr) */
	ap_diff_method method;
	double df;          /* Welch's degrees of freedom (else 0) */
} ap_diff_result;

/*
 * Test one site's bytes, base against nw, and give the interval of the
 * change at level. q = p and significant = (p <= 1 - level) until
 * ap_diff_fdr adjusts them across sites. A side without samples is passed
 * as a row with samples 0 and its rate (or rate_max: the coarsest rate of
 * its inputs, ap_coarsest_rate). AP_EINVAL (out NaN) for invalid rows
 * (as ap_row_bytes_interval) or a level outside (0, 1).
 */
AP_API int ap_diff_test(const ap_row *base, const ap_row *nw, double level,
			ap_diff_result *out);

/*
 * Replicates: nb runs of BASE and nn runs of NEW of one site (a run
 * without samples at the site is a row with samples 0). The change is the
 * difference of the run means; each side's variance of its mean is the
 * between-run sample variance / m (it contains the sampling noise and the
 * program's own run-to-run variation); Welch's t with Welch-Satterthwaite
 * degrees of freedom gives p and the interval. A side with a single run
 * has no between-run information: its HT variance is used with infinite
 * degrees of freedom. With one run on each side this is ap_diff_test.
 * AP_EINVAL for nb or nn 0 or invalid rows.
 */
AP_API int ap_diff_test_runs(const ap_row *base, size_t nb, const ap_row *nw,
			     size_t nn, double level, ap_diff_result *out);

/*
 * Benjamini-Hochberg q-values of n p-values: q_(i) = min over j >= i of
 * n p_(j) / j in ascending order, capped at 1. Flagging the sites with
 * q <= Q keeps the expected false discovery proportion <= Q (independent
 * tests, as sites of one sampled profile are). q may alias p. alloc NULL
 * = libc. AP_EINVAL for NULL arrays (n > 0) or a p outside [0, 1] or NaN;
 * AP_ENOMEM.
 */
AP_API int ap_diff_qvalues(const double *p, size_t n, double *q,
			   const ap_allocator *alloc);

/* Fill q and significant (q <= fdr) of n results. fdr in (0, 1). */
AP_API int ap_diff_fdr(ap_diff_result *r, size_t n, double fdr,
		       const ap_allocator *alloc);

/*
 * Two-sided exact binomial test of k successes in n trials against p0
 * (twice the smaller tail, capped at 1). NaN for k > n or p0 outside
 * (0, 1).
 */
AP_API double ap_binom_test(uint64_t k, uint64_t n, double p0);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_DIFFTEST_H */
