/*
 * estimate.c: the estimators of docs/STATISTICS.md. Horvitz-Thompson sums
 * and normal intervals ([R1] and [R2]), the NB (negative binomial) estimate
 * and its exact interval with the compensation for windows that do not
 * start or end at a sample event ([R4]), the Camp-Paulson approximation
 * of the NB CDF (Barko 1966, as validated in [R4]), exact Poisson
 * intervals for small object counts, heapprofd's count estimator ([R3])
 * and the transform that makes jeprof print unbiased values ([R1]).
 *
 * Everything is a pure function of its arguments. Invalid input never
 * aborts: values come back NaN, int results AP_EINVAL with outputs NaN.
 */
#include "allocprof/estimate.h"

#include <math.h>

#include "specfun.h"

/* 2^53: beyond it doubles no longer count failures exactly. */
#define MAX_EXACT_COUNT 9007199254740992.0

static bool valid_rate(double rate)
{
	return rate >= 1 && isfinite(rate);
}

static bool valid_level(double level)
{
	return level > 0 && level < 1;
}

static bool valid_amount(double v)
{
	return v >= 0 && isfinite(v);
}

static void set_nan(ap_interval *out)
{
	if (out)
		out->estimate = out->lo = out->hi = (double)NAN;
}

/* ---- sampling probability -------------------------------------------- */

/*
 * pi(Z) = 1 - q^Z with q = 1 - 1/R, computed as -expm1(Z log1p(-1/R)) so
 * that small Z/R keeps full relative precision ([R1]'s exact form).
 */
double ap_prob_sampled(uint64_t size, double rate)
{
	if (!valid_rate(rate))
		return (double)NAN;
	if (size == 0)
		return 0.0;
	if (rate == 1)
		return 1.0;
	return -expm1((double)size * log1p(-1.0 / rate));
}

double ap_prob_sampled_exp(uint64_t size, double rate)
{
	if (!valid_rate(rate))
		return (double)NAN;
	return -expm1(-(double)size / rate);
}

/* Z^2 (1 - pi) / pi = Z^2 q^Z / (1 - q^Z), the per-allocation HT variance. */
double ap_ht_var_exact(uint64_t size, double rate)
{
	if (!valid_rate(rate))
		return (double)NAN;
	if (size == 0 || rate == 1)
		return 0.0;
	double lq = (double)size * log1p(-1.0 / rate);
	double z = (double)size;
	return z * z * exp(lq) / -expm1(lq);
}

/* ---- Horvitz-Thompson ------------------------------------------------- */

void ap_ht_add(ap_ht *acc, double size, double prob)
{
	if (!acc || !valid_amount(size) || !(prob > 0) || !(prob <= 1))
		return;
	double w = 1.0 / prob;
	/* (1 - pi) / pi^2: the unbiased variance weight for Poisson sampling. */
	double vw = (1.0 - prob) * w * w;
	acc->bytes += size * w;
	acc->objects += w;
	acc->var_bytes += size * size * vw;
	acc->var_objects += vw;
	acc->var2_bytes += size * size * vw * size * size * vw;
	acc->var2_objects += vw * vw;
	acc->exact_samples += prob == 1;
	acc->samples++;
}

void ap_ht_merge(ap_ht *into, const ap_ht *from)
{
	if (!into || !from)
		return;
	into->bytes += from->bytes;
	into->objects += from->objects;
	into->var_bytes += from->var_bytes;
	into->var_objects += from->var_objects;
	into->var2_bytes += from->var2_bytes;
	into->var2_objects += from->var2_objects;
	into->exact_samples += from->exact_samples;
	into->samples += from->samples;
}

int ap_ht_interval(double estimate, double variance, double level,
		   ap_interval *out)
{
	if (!out || !valid_amount(estimate) || !valid_amount(variance) ||
	    !valid_level(level)) {
		set_nan(out);
		return AP_EINVAL;
	}
	double half = ap_normal_quantile(0.5 + 0.5 * level) * sqrt(variance);
	out->estimate = estimate;
	out->lo = fmax(0.0, estimate - half);
	out->hi = estimate + half;
	return 0;
}

/* ---- NB (negative binomial) ------------------------------------------- */

static bool valid_nb(double s, double p)
{
	return s > 0 && isfinite(s) && p > 0 && p <= 1;
}

/* P(F <= f) = P(at least s successes in f + s trials) = I_p(s, f + 1). */
double ap_nb_cdf(double failures, double s, double p)
{
	if (!valid_nb(s, p) || isnan(failures))
		return (double)NAN;
	if (failures < 0)
		return 0.0;
	if (isinf(failures))
		return 1.0;
	return ap_betainc(s, floor(failures) + 1.0, p);
}

/*
 * Camp-Paulson: the cube root of a ratio of binomial tail terms is close to
 * normal. With X ~ Binomial(n, p), n = f + s, k = s - 1: a = 1/(9(n-k)),
 * b = 1/(9(k+1)), r = (k+1)(1-p)/((n-k)p), c = (1-b) r^(1/3), mu = 1-a,
 * sigma = sqrt(b r^(2/3) + a), P(X <= k) ~ Phi((c - mu)/sigma); the NB CDF
 * is P(X >= s) = Phi((mu - c)/sigma).
 */
double ap_nb_cdf_camp_paulson(double failures, double s, double p)
{
	if (!valid_nb(s, p) || isnan(failures))
		return (double)NAN;
	if (failures < 0)
		return 0.0;
	if (isinf(failures) || p == 1)
		return 1.0;
	double f = floor(failures);
	double a = 1.0 / (9.0 * (f + 1.0));
	double b = 1.0 / (9.0 * s);
	double r = s * (1.0 - p) / ((f + 1.0) * p);
	double r3 = cbrt(r);
	double c = (1.0 - b) * r3;
	double sigma = sqrt(b * r3 * r3 + a);
	return ap_normal_cdf(((1.0 - a) - c) / sigma);
}

int ap_nb_quantile(double q, double s, double p, double *failures)
{
	if (failures)
		*failures = (double)NAN;
	if (!failures || !valid_nb(s, p) || !(q >= 0) || !(q < 1))
		return AP_EINVAL;
	double c0 = ap_nb_cdf(0, s, p);
	if (isnan(c0))
		return AP_ERANGE;
	if (c0 >= q) {
		*failures = 0;
		return 0;
	}
	/* Bracket: cdf(lo) < q <= cdf(hi); start past mean + 10 sd. */
	double mean = s * (1.0 - p) / p;
	double sd = sqrt(s * (1.0 - p)) / p;
	double lo = 0, hi = fmax(1.0, ceil(mean + 10.0 * sd));
	for (;;) {
		if (hi > MAX_EXACT_COUNT)
			return AP_ERANGE;
		double c = ap_nb_cdf(hi, s, p);
		if (isnan(c))
			return AP_ERANGE;
		if (c >= q)
			break;
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > 1) {
		double mid = lo + floor((hi - lo) / 2);
		double c = ap_nb_cdf(mid, s, p);
		if (isnan(c))
			return AP_ERANGE;
		if (c >= q)
			hi = mid;
		else
			lo = mid;
	}
	*failures = hi;
	return 0;
}

/* The level-quantile of NB(s, p) failures, 0 for s = 0 (no events). */
static int nb_bound(double s, double p, double q, double *f)
{
	if (s == 0 || p == 1) {
		*f = 0;
		return 0;
	}
	return ap_nb_quantile(q, s, p, f);
}

/*
 * Shared by the one-rate and per-rate-group intervals: failures of every
 * group summed, matched to one NB by mean and variance. Group g has mean
 * s_g (R_g - 1) and variance s_g (R_g - 1) R_g failures (q/p = R - 1,
 * q/p^2 = (R - 1) R); the matched NB has p* = mean/var and
 * s* = mean p* / (1 - p*). With one rate this is that rate's NB exactly.
 */
static int groups_bound(const ap_nb_group *g, size_t n, int adjust, double q,
			double *f)
{
	double mean = 0, var = 0, s_total = 0, rate0 = 0;
	bool one_rate = true;
	for (size_t i = 0; i < n; i++) {
		double s = (double)g[i].samples;
		if (adjust < 0 && s > 0)
			s -= 1;
		else if (adjust > 0)
			s += 1;
		if (s == 0 || g[i].rate == 1)
			continue;
		if (rate0 == 0)
			rate0 = g[i].rate;
		else if (g[i].rate != rate0)
			one_rate = false;
		mean += s * (g[i].rate - 1);
		var += s * (g[i].rate - 1) * g[i].rate;
		s_total += s;
	}
	if (mean == 0) {
		*f = 0;
		return 0;
	}
	if (one_rate)
		return nb_bound(s_total, 1.0 / rate0, q, f);
	double pstar = mean / var;
	return nb_bound(mean * pstar / (1.0 - pstar), pstar, q, f);
}

static bool valid_group(const ap_nb_group *g)
{
	return valid_rate(g->rate) && valid_amount(g->u) &&
	       (double)g->samples <= MAX_EXACT_COUNT &&
	       (g->samples > 0 || g->u == 0);
}

int ap_nb_interval_groups(const ap_nb_group *groups, size_t n, double level,
			  bool open_start, bool open_end, ap_interval *out)
{
	if (!out || !groups || n == 0 || !valid_level(level)) {
		set_nan(out);
		return AP_EINVAL;
	}
	double estimate = 0, u = 0;
	for (size_t i = 0; i < n; i++) {
		if (!valid_group(&groups[i])) {
			set_nan(out);
			return AP_EINVAL;
		}
		/* s q / p + u, with q / p = R - 1. */
		estimate += (double)groups[i].samples * (groups[i].rate - 1) +
			    groups[i].u;
		u += groups[i].u;
	}
	double f_lo, f_hi, tail = 0.5 * (1.0 - level);
	int rc = groups_bound(groups, n, open_start ? -1 : 0, tail, &f_lo);
	if (rc == 0)
		rc = groups_bound(groups, n, open_end ? 1 : 0, 1.0 - tail,
				  &f_hi);
	if (rc != 0) {
		set_nan(out);
		return rc;
	}
	out->estimate = estimate;
	out->lo = f_lo + u;
	out->hi = f_hi + u;
	return 0;
}

int ap_nb_interval(uint64_t samples, double u, double rate, double level,
		   bool open_start, bool open_end, ap_interval *out)
{
	ap_nb_group g = {samples, u, rate};
	return ap_nb_interval_groups(&g, 1, level, open_start, open_end, out);
}

/* ---- the intervals reports use ---------------------------------------- */

int ap_bytes_interval(uint64_t samples, double u, double rate,
		      double ht_bytes, double ht_var, double level,
		      ap_interval *out, bool *used_nb)
{
	if (used_nb)
		*used_nb = false;
	if (samples >= AP_NB_MAX_SAMPLES || rate == 0)
		return ap_ht_interval(ht_bytes, ht_var, level, out);
	if (!valid_amount(ht_bytes) || !valid_amount(ht_var)) {
		set_nan(out);
		return AP_EINVAL;
	}
	/* Every sample certain (pi = 1: exact records): nothing to estimate. */
	if (samples > 0 && ht_var == 0)
		return ap_ht_interval(ht_bytes, 0, level, out);
	/* A profile window starts and ends between events: open both ends. */
	int rc = ap_nb_interval(samples, u, rate, level, true, true, out);
	if (rc != 0)
		return rc;
	out->estimate = ht_bytes;
	out->lo = fmin(out->lo, ht_bytes);
	out->hi = fmax(out->hi, ht_bytes);
	if (used_nb)
		*used_nb = true;
	return 0;
}

/*
 * Garwood's exact interval, for a real-valued count k >= 0: lo solves
 * P(X >= k; lo) = alpha/2, i.e. the lower gamma tail P(k, lo) = alpha/2;
 * hi solves P(X <= k; hi) = alpha/2, i.e. the upper tail Q(k + 1, hi) =
 * alpha/2.
 */
static int garwood(double k, double level, double *lo, double *hi)
{
	double tail = 0.5 * (1.0 - level);
	double l = k == 0 ? 0.0 : apx_specfun_gamma_quantile(k, tail, false);
	double h = apx_specfun_gamma_quantile(k + 1.0, tail, true);
	if (isnan(l) || isnan(h))
		return AP_ERANGE;
	*lo = l;
	*hi = h;
	return 0;
}

int ap_poisson_interval(uint64_t k, double level, double *lo, double *hi)
{
	if (lo)
		*lo = (double)NAN;
	if (hi)
		*hi = (double)NAN;
	if (!lo || !hi || !valid_level(level))
		return AP_EINVAL;
	return garwood((double)k, level, lo, hi);
}

/*
 * Objects are a weighted count: objects_hat = y = sum of w_i = 1/pi_i, with
 * variance estimate v = sum (1 - pi_i) w_i^2. Fay and Feuer's gamma
 * interval for weighted Poisson counts (1997) fits: the lower bound is the
 * alpha/2 quantile of a gamma with y's mean and variance (shape y^2/v,
 * scale v/y); the upper one adds one more sample of weight w first (shape
 * (y+w)^2/(v+w^2), scale (v+w^2)/(y+w)), the counterpart of the NB
 * interval's s+1. With equal small weights this is Garwood's exact
 * interval times the weight. Fay and Feuer take w = the largest weight,
 * which we do not keep; we use the larger of the mean weight y/s and the
 * weight-weighted mean v/y. The extra sample matters: scaling by the raw
 * sample count covered 0.74-0.80 on mixed sites (large objects add samples
 * but no uncertainty), and without it five objects with pi = 0.97 cover
 * ~0.86 (one miss moves y by a whole object while v stays tiny).
 */
int ap_objects_interval(uint64_t samples, double ht_objects, double ht_var,
			double level, ap_interval *out)
{
	if (!out || !valid_amount(ht_objects) || !valid_amount(ht_var) ||
	    !valid_level(level) || (samples == 0 && ht_objects > 0)) {
		set_nan(out);
		return AP_EINVAL;
	}
	/*
	 * No samples: nothing seen. Zero variance: every sample had pi = 1
	 * (R = 1, or exactly recorded sizes), so the count is exact.
	 */
	if (samples == 0 || ht_var == 0)
		return ap_ht_interval(ht_objects, 0, level, out);
	double y = ht_objects, v = ht_var;
	if (samples >= AP_NB_MAX_SAMPLES && y * y / v >= AP_NB_MAX_SAMPLES)
		return ap_ht_interval(y, v, level, out);
	double w = fmax(y / (double)samples, v / y);
	double tail = 0.5 * (1.0 - level);
	double lo = apx_specfun_gamma_quantile(y * y / v, tail, false) * (v / y);
	double hi = apx_specfun_gamma_quantile((y + w) * (y + w) / (v + w * w), tail,
					   true) *
		    ((v + w * w) / (y + w));
	if (isnan(lo) || isnan(hi)) {
		set_nan(out);
		return AP_ERANGE;
	}
	out->estimate = y;
	out->lo = fmin(lo, y);
	out->hi = fmax(hi, y);
	return 0;
}

/* ---- other estimators and jeprof ---------------------------------------- */

double ap_count_estimate(uint64_t count, double rate)
{
	if (!valid_rate(rate))
		return (double)NAN;
	return (double)count * rate;
}

int ap_jeprof_transform(double objects, double bytes, double rate,
			uint64_t *objects_out, uint64_t *bytes_out)
{
	if (objects_out)
		*objects_out = 0;
	if (bytes_out)
		*bytes_out = 0;
	if (!objects_out || !bytes_out || !valid_amount(objects) ||
	    !valid_amount(bytes) || !valid_rate(rate) ||
	    (objects == 0 && bytes > 0))
		return AP_EINVAL;
	if (bytes == 0)
		return 0;
	if (bytes >= 0x1p64 || objects >= 0x1p64)
		return AP_ERANGE;
	/*
	 * [R1] / STATISTICS.md section 3: with x = bytes / objects and
	 * f = 1 - exp(-x/R), writing (objects f, bytes f) makes jeprof print
	 * (objects, bytes). The count must be an integer >= 1. Rounding it
	 * while keeping the average x = s / c exact scales both printed
	 * values by the same factor c / (objects f), in [c/(c+.5), c/(c-.5)];
	 * fitting bytes exactly instead would distort the object count many
	 * times over, as jeprof's scaling is flat in x for x << R.
	 */
	double x = bytes / objects;
	double c = fmax(1.0, round(objects * -expm1(-x / rate)));
	double s = fmax(1.0, round(c * x));
	if (s >= 0x1p64)
		return AP_ERANGE;
	*objects_out = (uint64_t)c;
	*bytes_out = (uint64_t)s;
	return 0;
}
