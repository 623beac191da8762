/*
 * leak.c: per-site growth rates of live bytes over the later half of a
 * series, one-sided tests and Benjamini-Hochberg across sites
 * (allocprof/leak.h; docs/TIME.md, "Leaks").
 *
 * Why increments and a random walk: the live estimate at t is the sum of
 * the weights of the sampled blocks alive at t, so successive points share
 * most of their sampling error; their difference only involves the blocks
 * allocated or freed in between. A block allocated in one interval and
 * freed in a later one adds +e to one increment and -e to the other, so
 * increments are independent (a leak: blocks never freed) or negatively
 * correlated, and summing their variances over-states the variance of the
 * change: the test errs towards "no leak".
 */
#include "allocprof/leak.h"

#include <math.h>
#include <stddef.h>

#include "allocprof/difftest.h"
#include "allocprof/estimate.h"
#include "fdr.h"

double ap_student_sf(double t, double df)
{
	if (isnan(t) || !(df > 0) || isinf(df))
		return (double)NAN;
	if (isinf(t))
		return t > 0 ? 0 : 1;
	double tail = 0.5 * ap_betainc(df / 2, 0.5, df / (df + t * t));
	return t >= 0 ? tail : 1 - tail;
}

double ap_student_quantile(double p, double df)
{
	if (!(p > 0 && p < 1) || !(df > 0) || isinf(df))
		return (double)NAN;
	/* Bracket then bisect on the survival function (monotone in t). */
	double lo = -1, hi = 1;
	while (ap_student_sf(lo, df) < 1 - p)
		lo *= 2;
	while (ap_student_sf(hi, df) > 1 - p)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-13 * (1 + fabs(lo)); i++) {
		double mid = 0.5 * (lo + hi);
		if (ap_student_sf(mid, df) > 1 - p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

static void result_nan(ap_leak_result *out)
{
	out->rate = out->rate_lo = out->rate_hi = (double)NAN;
	out->p = out->q = (double)NAN;
	out->leak = false;
	out->points = 0;
}

int ap_leak_trend(const ap_leak_point *pts, size_t n, double level,
		  ap_leak_result *out)
{
	if (!out)
		return AP_EINVAL;
	result_nan(out);
	if ((n > 0 && !pts) || !(level > 0 && level < 1))
		return AP_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(pts[i].t_s) || !isfinite(pts[i].bytes) ||
		    !isfinite(pts[i].var) || pts[i].var < 0)
			return AP_EINVAL;
		if (i > 0 && !(pts[i].t_s > pts[i - 1].t_s))
			return AP_EINVAL;
	}
	size_t k0 = 0;
	if (n > 0) {
		double mid = 0.5 * (pts[0].t_s + pts[n - 1].t_s);
		while (k0 + 1 < n && pts[k0 + 1].t_s <= mid)
			k0++;
	}
	size_t m = n - k0; /* points in the later half */
	if (n == 0 || m < AP_LEAK_MIN_POINTS) {
		out->rate = n >= 2 ? (pts[n - 1].bytes - pts[k0].bytes) /
					     (pts[n - 1].t_s - pts[k0].t_s)
				   : (double)NAN;
		out->rate_lo = -(double)INFINITY;
		out->rate_hi = (double)INFINITY;
		out->p = out->q = 1;
		out->points = 0;
		return 0;
	}
	const ap_leak_point *a = &pts[k0], *b = &pts[n - 1];
	double span = b->t_s - a->t_s;
	double rate = (b->bytes - a->bytes) / span;
	/* Random walk with drift: sigma^2 per second from the increments. */
	double ss = 0;
	for (size_t k = k0 + 1; k < n; k++) {
		double dt = pts[k].t_s - pts[k - 1].t_s;
		double r = pts[k].bytes - pts[k - 1].bytes - rate * dt;
		ss += r * r / dt;
	}
	double df = (double)(m - 2); /* m - 1 increments, one rate fitted */
	double var = ss / df / span;
	/* Var(Y_b - Y_a) = v_a + v_b - 2 Cov >= |v_b - v_a| (Cov <= min). */
	double floor_var = fabs(b->var - a->var) / (span * span);
	if (var < floor_var)
		var = floor_var;
	double se = sqrt(var);
	out->rate = rate;
	out->points = m;
	if (se > 0) {
		double tq = ap_student_quantile(0.5 + level / 2, df);
		out->rate_lo = rate - tq * se;
		out->rate_hi = rate + tq * se;
		out->p = ap_student_sf(rate / se, df);
	} else {
		out->rate_lo = out->rate_hi = rate;
		out->p = rate > 0 ? 0 : 1;
	}
	out->q = out->p;
	return 0;
}

int ap_leak_fdr(const ap_leak_series *sites, size_t nsites, double level,
		double fdr, const ap_allocator *alloc, ap_leak_result *out)
{
	if ((nsites > 0 && (!sites || !out)) || !(fdr > 0 && fdr < 1))
		return AP_EINVAL;
	for (size_t i = 0; i < nsites; i++) {
		int rc = ap_leak_trend(sites[i].pts, sites[i].n, level, &out[i]);
		if (rc != 0)
			return rc;
	}
	int rc = apx_qvalues_strided(out, nsites, sizeof *out,
				     offsetof(ap_leak_result, p),
				     offsetof(ap_leak_result, q), alloc);
	for (size_t i = 0; rc == 0 && i < nsites; i++)
		out[i].leak = out[i].q <= fdr;
	return rc;
}
