/*
 * allocprof/estimate.h: turning sampled allocations into unbiased estimates
 * with confidence intervals.
 *
 * Model (STATISTICS.md, [R1] and [R4]): every allocated byte is a
 * Bernoulli trial with success probability p = 1/R, R the mean sampling
 * interval in bytes. An allocation of Z bytes is sampled with probability
 * pi(Z) = 1 - (1 - 1/R)^Z. Two estimators follow:
 *
 *  - Horvitz-Thompson (HT): weight each sampled allocation by 1/pi. Unbiased,
 *    additive (estimates and variance estimates of independent parts add),
 *    normal interval once there are about a hundred samples.
 *  - Negative binomial (NB, [R4]): the failed trials before the s-th
 *    success are NegBin(s, p); gives an exact interval when samples are few.
 *
 * allocprof reports the NB interval below AP_NB_MAX_SAMPLES samples and the
 * HT normal interval at or above it (ap_bytes_interval applies the rule).
 * The switch is at 100, not 30: with 30-60 samples of small objects the
 * normal interval covers only ~0.936-0.942 at a nominal 0.95 (skewed
 * weights), while the NB interval covers >= 0.95 at any count
 * (tests/stats, docs/STATISTICS.md).
 *
 * All functions are pure (no global state, thread-safe) and never abort.
 * Value-returning functions return NaN for invalid input; int-returning ones
 * return 0, AP_EINVAL (an argument out of its domain) or AP_ERANGE (a
 * result too large to compute exactly, e.g. more than 2^53 failures) and
 * leave *out as NaNs on error.
 */
#ifndef ALLOCPROF_ESTIMATE_H
#define ALLOCPROF_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Below this many samples reports use the exact NB interval, else HT. */
#define AP_NB_MAX_SAMPLES 100

/* ---- Sampling probability -------------------------------------------- */

/*
 * Exact probability that an allocation of size bytes is sampled at mean
 * interval rate: -expm1(size * log1p(-1/rate)). rate must be >= 1 (rate 1 =
 * every byte sampled, probability 1 for size > 0). size 0 gives 0. NaN for
 * rate < 1 or NaN.
 */
AP_API double ap_prob_sampled(uint64_t size, double rate);
/* jemalloc's approximation -expm1(-size/rate); same domain as above. */
AP_API double ap_prob_sampled_exp(uint64_t size, double rate);

/*
 * Theoretical HT variance contribution of one allocation of size bytes
 * ([R4]): size^2 * (1 - pi) / pi; 0 when pi = 1 (rate 1) and for size
 * 0 (a zero-byte allocation contributes no bytes). NaN for rate < 1.
 */
AP_API double ap_ht_var_exact(uint64_t size, double rate);

/* ---- Horvitz-Thompson accumulator ------------------------------------ */

/*
 * Running HT sums. Zero-initialise ({0}) to start. bytes/objects are the
 * estimates, var_* the unbiased variance estimates
 * sum (1 - pi) x^2 / pi^2, samples the number of sampled allocations added.
 */
typedef struct ap_ht {
	double bytes, objects, var_bytes, var_objects;
	uint64_t samples;
} ap_ht;

/*
 * Add one sampled allocation of size bytes drawn with probability prob.
 * prob must be in (0, 1] and size finite and >= 0; otherwise the call is
 * ignored (acc unchanged) so one bad record cannot poison a whole profile.
 */
AP_API void ap_ht_add(ap_ht *acc, double size, double prob);
/* Add from's sums into into (independent parts: estimates and variances add). */
AP_API void ap_ht_merge(ap_ht *into, const ap_ht *from);

/* ---- Intervals ------------------------------------------------------- */

typedef struct ap_interval {
	double estimate, lo, hi;
} ap_interval;

/*
 * Normal (Wald) interval estimate +- z * sqrt(variance) at level (0 < level
 * < 1), lo clamped at 0 (all our quantities are non-negative). AP_EINVAL for
 * a NaN/infinite/negative estimate or variance or a level outside (0, 1).
 */
AP_API int ap_ht_interval(double estimate, double variance, double level,
			  ap_interval *out);

/* Inverse standard normal CDF. NaN outside (0,1) except 0 -> -inf, 1 -> +inf. */
AP_API double ap_normal_quantile(double p);
/* Standard normal CDF Phi(x). NaN for NaN. */
AP_API double ap_normal_cdf(double x);

/* ---- Special functions and the negative binomial --------------------- */

/*
 * Regularized incomplete beta I_x(a, b), a > 0, b > 0 (finite), 0 <= x <= 1.
 * Continued fraction (modified Lentz) after the symmetry swap, Stirling-form
 * prefactor; ~1e-13 relative on the reference table (a, b up to 1e6),
 * ~1e-10 absolute at a = b = 1e12. NaN for arguments outside the domain (or
 * if the fraction failed to converge, not observed in the domain).
 */
AP_API double ap_betainc(double a, double b, double x);

/*
 * P(F <= failures) for F ~ NegBin(s, p): failed trials before the s-th
 * success, each with success probability p. = I_p(s, floor(failures) + 1).
 * s > 0 (real s allowed), 0 < p <= 1. failures < 0 gives 0, +inf gives 1.
 * NaN for invalid s or p.
 */
AP_API double ap_nb_cdf(double failures, double s, double p);
/* The same by the Camp-Paulson normal approximation (no special functions). */
AP_API double ap_nb_cdf_camp_paulson(double failures, double s, double p);
/*
 * Smallest integer f >= 0 with ap_nb_cdf(f, s, p) >= q, by bisection.
 * 0 <= q < 1, s > 0, 0 < p <= 1; AP_EINVAL otherwise, AP_ERANGE if f would
 * exceed 2^53.
 */
AP_API int ap_nb_quantile(double q, double s, double p, double *failures);

/*
 * Exact NB interval on the bytes allocated in a window ([R4]): samples =
 * s sampled allocations, u = sum over them of (size - offset of the sampled
 * byte), rate = R. estimate = s*q/p + u; [f_lo + u, f_hi + u] where f_lo,
 * f_hi are the (1-level)/2 and (1+level)/2 quantiles of NegBin(s, 1/R).
 * open_start: the window began between sample events, the lower bound uses
 * s-1 samples; open_end: it ended between events, the upper bound uses s+1.
 * s = 0: estimate 0, lower bound 0; upper bound from 1 sample when open_end,
 * else 0 (a window bounded by events on both sides with none inside is
 * empty) and u must be 0. rate 1 gives [u, u]. AP_EINVAL for rate < 1 or
 * NaN, a level outside (0, 1), a negative/NaN/infinite u, samples > 2^53;
 * AP_ERANGE when a bound exceeds 2^53 failures.
 */
AP_API int ap_nb_interval(uint64_t samples, double u, double rate,
			  double level, bool open_start, bool open_end,
			  ap_interval *out);

/*
 * Per-rate groups of a merged profile (profiles sampled at different rates).
 * The NB interval is exact only within one rate; across groups the failure
 * counts are summed and approximated by one NB with matched mean and
 * variance (STATISTICS.md, "merged profiles").
 */
typedef struct ap_nb_group {
	uint64_t samples;
	double u;
	double rate;
} ap_nb_group;
/*
 * As ap_nb_interval over n groups (n = 1 is exactly ap_nb_interval; groups
 * of one rate pool exactly). open_start / open_end apply per group (each
 * group one window). Mixed rates are approximate: the lower bound errs low
 * (conservative), the upper within a few percent (allocprof's unit tests).
 * AP_EINVAL for n = 0, NULL groups or any invalid group.
 */
AP_API int ap_nb_interval_groups(const ap_nb_group *groups, size_t n,
				 double level, bool open_start, bool open_end,
				 ap_interval *out);

/*
 * The interval allocprof reports for bytes: the NB interval (open at both
 * ends, the conservative choice for a profile window) when samples <
 * AP_NB_MAX_SAMPLES, else the HT normal interval. estimate is always the HT
 * estimate ht_bytes; an NB interval is widened, if needed, to contain it.
 * rate 0 means "no single rate" (a merge of profiles drawn at different
 * rates): the HT interval is used whatever the sample count. samples > 0
 * with ht_var = 0 (every sample had pi = 1: R = 1 or exactly recorded
 * sizes) gives the point [ht_bytes, ht_bytes]. *used_nb (may
 * be NULL) tells which was used. Errors as for the two.
 */
AP_API int ap_bytes_interval(uint64_t samples, double u, double rate,
			     double ht_bytes, double ht_var, double level,
			     ap_interval *out, bool *used_nb);

/*
 * Exact (Garwood) interval for the mean of a Poisson count k: the
 * chi-square quantiles via the incomplete gamma (Wilson-Hilferty beyond
 * k = 1e9, accurate there to ~1e-11). k = 0 gives lo = 0. AP_EINVAL for a
 * level outside (0,1) or NULL outputs (then both are NaN).
 */
AP_API int ap_poisson_interval(uint64_t k, double level, double *lo,
			       double *hi);

/*
 * The interval allocprof reports for objects, ht_objects being a weighted
 * count: Fay and Feuer's gamma interval (the lower bound from a gamma with
 * the estimate's mean and variance, the upper after adding one sample of
 * the typical weight; Garwood's exact interval times 1/pi for one small
 * size) unless both samples and ht_objects^2 / ht_var reach
 * AP_NB_MAX_SAMPLES, then HT normal. ht_var = 0 (every sample had pi = 1,
 * e.g. R = 1) gives [ht_objects, ht_objects]; samples = 0 requires
 * ht_objects = 0 and gives [0, 0]. AP_EINVAL for negative/NaN/infinite
 * values, a level outside (0, 1) or NULL out.
 */
AP_API int ap_objects_interval(uint64_t samples, double ht_objects,
			       double ht_var, double level, ap_interval *out);

/* ---- Other estimators and format helpers ----------------------------- */

/*
 * heapprofd's estimator ([R3]): count successes k inside allocations
 * (sampling continues inside an allocation), bytes ~= k * R. NaN for rate < 1.
 */
AP_API double ap_count_estimate(uint64_t count, double rate);

/*
 * Values to write in a jemalloc heap_v2 line so that jeprof, which scales
 * each line by 1 / (1 - exp(-avg/R)) with avg = bytes/objects, prints the
 * already unbiased (objects, bytes) (STATISTICS.md section 3). The
 * count is an integer c >= 1 whenever bytes > 0, so both printed values are
 * off by the same rounding factor, between c/(c+0.5) and c/(c-0.5) (for a
 * profile c is about the sample count, so this stays well inside the
 * sampling error); the average size they imply is kept exact. A line
 * whose objects * (1 - exp(-avg/R)) is below 0.5 (an estimate smaller than
 * any single sample yields) still gets count 1 and prints inflated.
 * bytes = 0 gives (0, 0): jeprof would divide by zero scaling a zero-byte
 * line, so zero-size objects are dropped. AP_EINVAL for negative, NaN or
 * infinite input, objects 0 with bytes > 0, rate < 1; AP_ERANGE if a
 * result exceeds UINT64_MAX.
 */
AP_API int ap_jeprof_transform(double objects, double bytes, double rate,
			       uint64_t *objects_out, uint64_t *bytes_out);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_ESTIMATE_H */
