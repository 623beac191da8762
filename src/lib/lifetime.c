/*
 * lifetime.c: weighted Kaplan-Meier over sampled blocks (allocprof/
 * lifetime.h), the influence-function variance and Brookmeyer-Crowley
 * quantile intervals; the short-lived bytes rate. docs/TIME.md, "Lifetimes".
 *
 * One pass over the observations sorted by time gives, at every distinct
 * event time t_j, the risk set Y_j = sum of weights with T >= t_j, the
 * weighted events d_j, S = prod (1 - d_j / Y_j) and the variance of the
 * cumulative hazard sum_i w_i^2 z_i(t)^2, z_i the influence of block i.
 * z_i(t) = delta_i 1{T_i <= t} / Y(T_i) - H(min(T_i, t)) with
 * H(t) = sum_{t_j <= t} d_j / Y_j^2, so blocks with T_i > t share z = -H(t)
 * and the sum splits into a prefix sum and H(t)^2 times the w^2 still at
 * risk: O(n log n) for the whole curve.
 */
#include "allocprof/lifetime.h"

#include <math.h>
#include <stdlib.h>

typedef struct life_point {
	double t, surv, se;
} life_point;

static int obs_valid(const ap_life_obs *o)
{
	return isfinite(o->lifetime_ns) && o->lifetime_ns >= 0 &&
	       isfinite(o->weight) && o->weight >= 1 && isfinite(o->size) &&
	       o->size >= 0;
}

/* An observation with the sum of squared weights it stands for. */
typedef struct lobs {
	ap_life_obs o;
	double w2;
} lobs;

static int cmp_obs(const void *a, const void *b)
{
	const ap_life_obs *x = &((const lobs *)a)->o, *y = &((const lobs *)b)->o;
	if (x->lifetime_ns != y->lifetime_ns)
		return x->lifetime_ns < y->lifetime_ns ? -1 : 1;
	return (int)x->censored - (int)y->censored;
}

/*
 * The curve at each distinct event time into pts (capacity n); returns the
 * number of points, or a negative error. Censoring leaves S and its
 * variance unchanged (a censored block's influence after T_i is the same
 * -H(T_i) it had while at risk), so event times carry every step.
 */
static long life_curve(const ap_life_obs *obs, const double *w2, size_t n,
		       const ap_allocator *alloc, life_point **pts_out,
		       double *total_w)
{
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	*pts_out = NULL;
	*total_w = 0;
	if (n == 0)
		return 0;
	if (!obs)
		return AP_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!obs_valid(&obs[i]) ||
		    (w2 && !(isfinite(w2[i]) && w2[i] >= obs[i].weight)))
			return AP_EINVAL;
	lobs *s = a->alloc(a->ctx, n * sizeof *s);
	life_point *pts = a->alloc(a->ctx, n * sizeof *pts);
	if (!s || !pts) {
		if (s)
			a->free(a->ctx, s, n * sizeof *s);
		if (pts)
			a->free(a->ctx, pts, n * sizeof *pts);
		return AP_ENOMEM;
	}
	double risk = 0, risk2 = 0;
	for (size_t i = 0; i < n; i++) {
		s[i].o = obs[i];
		s[i].w2 = w2 ? w2[i] : obs[i].weight * obs[i].weight;
		risk += obs[i].weight;
		risk2 += s[i].w2;
	}
	*total_w = risk;
	qsort(s, n, sizeof *s, cmp_obs);
	double surv = 1, h = 0, prefix = 0;
	long np = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double d = 0, gw = 0, gw2 = 0;
		while (j < n && s[j].o.lifetime_ns == s[i].o.lifetime_ns) {
			if (!s[j].o.censored)
				d += s[j].o.weight;
			gw += s[j].o.weight;
			gw2 += s[j].w2;
			j++;
		}
		double y = risk;
		if (d > 0) {
			surv *= d >= y ? 0 : 1 - d / y;
			h += d / (y * y);
		}
		for (size_t k = i; k < j; k++) {
			double z = (s[k].o.censored ? 0 : 1 / y) - h;
			prefix += s[k].w2 * z * z;
		}
		risk -= gw;
		risk2 -= gw2;
		if (risk2 < 0)
			risk2 = 0;
		if (d > 0) {
			double var = prefix + h * h * risk2;
			pts[np].t = s[i].o.lifetime_ns;
			pts[np].surv = surv;
			pts[np].se = surv * sqrt(var);
			np++;
		}
		i = j;
	}
	a->free(a->ctx, s, n * sizeof *s);
	*pts_out = pts;
	return np;
}

static void free_curve(const ap_allocator *alloc, life_point *pts, size_t n)
{
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	if (pts)
		a->free(a->ctx, pts, n * sizeof *pts);
}

/*
 * Brookmeyer-Crowley: the interval is the set of t whose S(t) is not
 * rejected as equal to 1 - p, |S(t) - (1 - p)| <= z se(t). S decreases, so
 * it runs from the first t with S - z se <= 1 - p to the first t with
 * S + z se < 1 - p (+inf when none: the upper bound is not reached).
 */
static void life_quantile(const life_point *pts, long np, double p, double z,
			  double t_max, ap_life_quantile *q)
{
	double target = 1 - p, eps = 1e-12;
	q->p = p;
	q->estimate = q->lo = q->hi = (double)INFINITY;
	for (long k = 0; k < np; k++) {
		if (pts[k].surv - z * pts[k].se <= target + eps &&
		    q->lo == (double)INFINITY)
			q->lo = pts[k].t;
		if (pts[k].surv <= target + eps && q->estimate == (double)INFINITY)
			q->estimate = pts[k].t;
		if (pts[k].surv + z * pts[k].se < target - eps) {
			q->hi = pts[k].t;
			break;
		}
	}
	/* Not even the lower band reaches 1 - p: S is significantly above
	 * 1 - p over everything observed, so the quantile lies beyond the
	 * oldest observation (freed or censored), where the bound sits. */
	if (q->lo == (double)INFINITY)
		q->lo = t_max;
}

static void summary_nan(ap_life_summary *out)
{
	ap_life_quantile nq = {(double)NAN, (double)NAN, (double)NAN, (double)NAN};
	out->q25 = out->median = out->q75 = nq;
	out->objects = out->freed_fraction = (double)NAN;
	out->samples = out->censored = 0;
}

int ap_life_km(const ap_life_obs *obs, size_t n, double level,
	       const ap_allocator *alloc, ap_life_summary *out)
{
	return ap_life_km_binned(obs, NULL, n, level, alloc, out);
}

int ap_life_km_binned(const ap_life_obs *obs, const double *weight_sq, size_t n,
		      double level, const ap_allocator *alloc, ap_life_summary *out)
{
	if (!out)
		return AP_EINVAL;
	summary_nan(out);
	if (!(level > 0 && level < 1))
		return AP_EINVAL;
	life_point *pts;
	double w;
	long np = life_curve(obs, weight_sq, n, alloc, &pts, &w);
	if (np < 0)
		return (int)np;
	if (n == 0)
		return 0;
	double z = ap_normal_quantile(0.5 + level / 2), t_max = 0;
	for (size_t i = 0; i < n; i++)
		t_max = fmax(t_max, obs[i].lifetime_ns);
	life_quantile(pts, np, 0.25, z, t_max, &out->q25);
	life_quantile(pts, np, 0.5, z, t_max, &out->median);
	life_quantile(pts, np, 0.75, z, t_max, &out->q75);
	out->objects = w;
	out->freed_fraction = np > 0 ? 1 - pts[np - 1].surv : 0;
	out->samples = n;
	for (size_t i = 0; i < n; i++)
		out->censored += obs[i].censored;
	free_curve(alloc, pts, n);
	return 0;
}

int ap_life_survival(const ap_life_obs *obs, size_t n, double t_ns,
		     const ap_allocator *alloc, double *surv, double *se)
{
	if (!surv || !se)
		return AP_EINVAL;
	*surv = *se = (double)NAN;
	if (isnan(t_ns))
		return AP_EINVAL;
	life_point *pts;
	double w;
	long np = life_curve(obs, NULL, n, alloc, &pts, &w);
	if (np < 0)
		return (int)np;
	*surv = 1;
	*se = 0;
	for (long k = 0; k < np && pts[k].t <= t_ns; k++) {
		*surv = pts[k].surv;
		*se = pts[k].se;
	}
	free_curve(alloc, pts, n);
	return 0;
}

int ap_life_short_rate(const ap_life_obs *obs, size_t n, double threshold_ns,
		       double run_seconds, double level, ap_interval *out)
{
	if (!out)
		return AP_EINVAL;
	out->estimate = out->lo = out->hi = (double)NAN;
	if ((n > 0 && !obs) || !(threshold_ns >= 0) ||
	    !(run_seconds > 0 && isfinite(run_seconds)))
		return AP_EINVAL;
	ap_ht acc = {0};
	for (size_t i = 0; i < n; i++) {
		if (!obs_valid(&obs[i]))
			return AP_EINVAL;
		if (!obs[i].censored && obs[i].lifetime_ns <= threshold_ns)
			ap_ht_add(&acc, obs[i].size, 1 / obs[i].weight);
	}
	return ap_ht_interval(acc.bytes / run_seconds,
			      acc.var_bytes / (run_seconds * run_seconds),
			      level, out);
}
