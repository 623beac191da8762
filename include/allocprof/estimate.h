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
 *  - Negative binomial (NB, [R4]; called NB everywhere below): the failed
 *    trials before the s-th success are NB(s, p); gives an exact interval
 *    when samples are few.
 *
 * Every view puts intervals on a row through ap_row_bytes_interval /
 * ap_row_objects_interval (bottom of this file): the rule follows where the
 * uncertainty is (the effective sample size of the per-sample variance
 * terms), so a few near-certain large objects beside small-object samples
 * no longer pass for a many-sample row. The older ap_bytes_interval /
 * ap_objects_interval keep the count rule (NB below AP_NB_MAX_SAMPLES
 * samples) for callers not yet moved over (docs/STATISTICS.md section 5).
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

/*
 * Legacy switch of ap_bytes_interval / ap_objects_interval: below this many
 * samples the exact NB interval, else HT. The row functions (ap_row_*,
 * bottom of this file) switch on the effective sample size instead, at
 * AP_ESS_NORMAL_MIN.
 */
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
	/*
	 * Added for the effective-sample-size rule (docs/STATISTICS.md
	 * section 5): the sums of the squared per-sample variance terms
	 * (ap_sample_terms), and how many samples had pi = 1 (exact records).
	 */
	double var2_bytes, var2_objects;
	uint64_t exact_samples;
} ap_ht;

/*
 * Add one sampled allocation of size bytes drawn with probability prob.
 * prob must be in (0, 1] and size finite and >= 0; otherwise the call is
 * ignored (acc unchanged) so one bad record cannot poison a whole profile.
 */
AP_API void ap_ht_add(ap_ht *acc, double size, double prob);
/*
 * Add from's sums into into (independent parts: estimates, variances and
 * the squared-variance sums add).
 */
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

/* ---- Special functions and the NB distribution ------------------------ */

/*
 * Regularized incomplete beta I_x(a, b), a > 0, b > 0 (finite), 0 <= x <= 1.
 * Continued fraction (modified Lentz) after the symmetry swap, Stirling-form
 * prefactor; ~1e-13 relative on the reference table (a, b up to 1e6),
 * ~1e-10 absolute at a = b = 1e12. NaN for arguments outside the domain (or
 * if the fraction failed to converge, not observed in the domain).
 */
AP_API double ap_betainc(double a, double b, double x);

/*
 * P(F <= failures) for F ~ NB(s, p): failed trials before the s-th
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
 * f_hi are the (1-level)/2 and (1+level)/2 quantiles of NB(s, 1/R).
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


/* ---- Rows: the rule every view uses (src/lib/estimate_row.c) ---------- */

/*
 * Normal HT interval only when the row's uncertainty is spread over at
 * least this many samples (effective sample size) AND amounts to at least
 * this many "R-sized events" (var_bytes >= AP_ESS_NORMAL_MIN * R^2), so
 * that one more unseen small allocation (weight ~R) moves the upper bound
 * by under a tenth of a standard deviation. docs/STATISTICS.md section 5.
 */
#define AP_ESS_NORMAL_MIN 100.0

/*
 * Fixed-point scale of the stored squared-variance sums: a profile stores
 * round(AP_VAR2_SCALE * var2 / R^4) (ap_var2_encode), R the rate of the
 * line's samples. Per sample v / R^2 <= 1 for both bytes and objects (see
 * ap_sample_terms), so a stored unit is at most 2^32 per sample and 2^31
 * samples fit a line in int64.
 */
#define AP_VAR2_SCALE 4294967296.0

/*
 * The additive contributions of one sampled allocation of size bytes drawn
 * with probability prob (in (0, 1]); what the runtime adds into a profile
 * line for it. var_* are the HT variance terms (1 - pi) x^2 / pi^2 (x = Z
 * for bytes, 1 for objects) and var2_* their squares; exact is 1 when
 * prob == 1 (recorded without sampling error). An invalid prob or size
 * gives all zeros and AP_EINVAL.
 */
typedef struct ap_sample_terms {
	double objects, bytes, var_objects, var_bytes, var2_objects, var2_bytes;
	uint64_t exact;
} ap_sample_terms;
AP_API int ap_sample_terms_of(double size, double prob, ap_sample_terms *out);

/* Stored value of a var2 sum for samples of rate R and back (NaN for R < 1). */
AP_API double ap_var2_encode(double var2, double rate);
AP_API double ap_var2_decode(double stored, double rate);

/*
 * Effective sample size of a sum of variance terms: var^2 / var2 (Kish).
 * Equal terms give their count; a few dominant ones give about their
 * count. 0 when var = 0; NaN for negative/NaN input or var > 0 with
 * var2 = 0 (unknown: callers fall back to the sample count).
 */
AP_API double ap_ess(double var, double var2);

/*
 * "Exact" means no sampling error at all: every sample was recorded with
 * probability 1 (R = 1 or passthrough records) and there was at least one.
 * A variance that rounds or sums to 0 is NOT a reason: objects of 1.5 R
 * have tiny but nonzero variance terms.
 */
AP_API bool ap_row_is_exact(uint64_t samples, uint64_t exact_samples);

/*
 * The rate whose bound a side without samples takes when its inputs were
 * drawn at several rates: the coarsest (largest R), the one under which
 * the most bytes can hide unseen. 0 for n = 0 or any rate < 1.
 */
AP_API double ap_coarsest_rate(const double *rates, size_t n);

/*
 * Zero samples (docs/STATISTICS.md section 5, "no samples"): the lower
 * bound 0 is certain, so all of 1 - level goes to the upper one.
 * P(no sample | T bytes) = (1 - 1/R)^T >= 1 - level iff
 * T <= log(1 - level) / log1p(-1/R): *bytes_hi. With every object at
 * least z_min bytes the same bound on N z_min gives *objects_hi =
 * *bytes_hi / z_min; z_min = 0 (unknown) gives +INFINITY (print
 * "unbounded", JSON null; Prometheus "+Inf"). rate 1: both 0 (nothing
 * can hide). rate is the coarsest rate of the view (ap_coarsest_rate).
 * AP_EINVAL (outputs NaN) for rate < 1 or a level outside (0, 1).
 */
AP_API int ap_zero_sample_bound(double rate, double level, uint64_t z_min,
				double *bytes_hi, double *objects_hi);

/* Which interval a row got. */
typedef enum ap_ci_method {
	AP_CI_NONE = 0, /* no samples: [0, ap_zero_sample_bound] */
	AP_CI_EXACT,    /* every sample exact: the point */
	AP_CI_NB,       /* exact negative binomial, open at both ends */
	AP_CI_SPLIT,    /* certain part + gamma interval on the uncertain part */
	AP_CI_NORMAL    /* HT normal */
} ap_ci_method;
/* "none sampled", "exact", "nb", "split", "normal" ("?" otherwise). */
AP_API const char *ap_ci_method_name(ap_ci_method m);

/*
 * Everything a row (a site, a total, one side of a diff) carries; all
 * fields but rate, rate_max and z_min are the additive per-line values
 * summed over the row.
 */
typedef struct ap_row {
	uint64_t samples;       /* sampled allocations */
	uint64_t exact_samples; /* of which recorded with pi = 1 */
	double u;               /* sum of (size - offset) */
	double bytes, var_bytes, var2_bytes;       /* HT sums */
	double objects, var_objects, var2_objects; /* HT sums, objects */
	double rate;     /* R of every sample; 0 = several rates */
	double rate_max; /* coarsest R among the row's inputs (0: = rate) */
	uint64_t z_min;  /* smallest object size the row can hold; 0 unknown */
} ap_row;

/* Fill a row from an HT accumulator (u, rate set separately; rest zero). */
AP_API void ap_row_from_ht(const ap_ht *ht, double u, double rate,
			   ap_row *out);

/*
 * The bytes interval of a row at level (docs/STATISTICS.md section 5):
 *  - no samples: [0, bytes bound of ap_zero_sample_bound], AP_CI_NONE;
 *  - every sample exact: the point, AP_CI_EXACT;
 *  - ESS >= AP_ESS_NORMAL_MIN and var_bytes >= AP_ESS_NORMAL_MIN R^2:
 *    HT normal;
 *  - one rate, no exact samples and var_bytes >= samples R^2 / 2 (every
 *    sample uncertain like a small object's, so the NB model's "one
 *    geometric gap per sample" fits): the NB interval, both ends open,
 *    widened to contain the estimate;
 *  - otherwise (a few near-certain large objects beside uncertain ones):
 *    AP_CI_SPLIT, the certain part c = bytes - ESS w plus a gamma interval
 *    (shape ESS, scale w = sqrt(var2/var)) for the rest, its upper bound
 *    after one more event of weight max(w, R) (Fay and Feuer).
 * var2_bytes = 0 with var_bytes > 0 (a profile without the column) takes
 * ESS = samples. R is rate_max when set, else rate. estimate is always
 * the HT estimate. AP_EINVAL (out NaN) for negative/NaN values, rate < 1
 * unless 0 with rate_max >= 1, a level outside (0, 1), NULL pointers.
 */
AP_API int ap_row_bytes_interval(const ap_row *row, double level,
				 ap_interval *out, ap_ci_method *method);

/*
 * The objects interval of a row, the same rule on the objects sums: no
 * samples: [0, ap_zero_sample_bound's objects bound] (+INFINITY when
 * z_min is unknown); exact; normal when the objects ESS and the bytes
 * condition above both hold; else the split gamma interval, whose extra
 * event has the larger of the uncertain part's weight and the mean weight
 * objects/samples. With z_min known the upper bound also admits the
 * objects of z_min bytes that could hide unseen (bytes bound / z_min).
 * Errors as for bytes.
 */
AP_API int ap_row_objects_interval(const ap_row *row, double level,
				   ap_interval *out, ap_ci_method *method);

/* ---- Writing values without rounding bias ---------------------------- */

/*
 * Key for ap_round_unbiased: a hash of what identifies a profile line
 * (e.g. its location ids or addresses, n of them) and the column index, so
 * that every write of that line's column rounds with the same uniform and
 * different lines and columns round independently.
 */
AP_API uint64_t ap_round_key(const uint64_t *ids, size_t n, uint32_t column);

/*
 * floor(x) + 1 with probability frac(x), else floor(x), the coin being the
 * uniform in [0, 1) that key hashes to: E[result] = x over keys, so sums
 * over many lines carry no rounding bias (llround biases weights in (1, 2)
 * down to 1: objects of 1.2 R lose 30%). Deterministic for a key.
 * Saturates at INT64_MIN/MAX; 0 for NaN.
 */
AP_API int64_t ap_round_unbiased(double x, uint64_t key);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_ESTIMATE_H */
