/*
 * tune.c: the solver of the optimal per-class sampling problem
 * (allocprof/tune.h; derivation in docs/STATISTICS.md "Optimal per-class
 * sampling"). The objective sum A_c (1 - p_c)/p_c is strictly convex in
 * each p_c with A_c > 0 and the constraints are linear, so the KKT point
 * is the unique optimum. For fixed multipliers (lambda, mu) each p_c
 * minimises A_c/p_c + (lambda N_c + mu L_c Z_c) p_c on [p_min,c, 1],
 * which is the clipped square root. The budget used falls monotonically
 * in lambda, so lambda is found by bisection (water-filling); the
 * memory used at lambda(mu) is the derivative of a concave dual function
 * of mu, hence non-increasing in mu, so mu is found by bisection too.
 */
#include "allocprof/tune.h"

#include <math.h>

#define TUNE_ITERS 200
#define TUNE_RATE_MAX 4503599627370496.0 /* 2^52, AP_SAMPLER_RATE_MAX */

double ap_tune_coef(const ap_tune_class *c, const ap_tune_weights *w)
{
	double z2 = c->size * c->size;
	return w->alloc * c->allocs * z2 + w->inuse * c->live * z2 +
	       w->objects * c->allocs;
}

static int class_ok(const ap_tune_class *c)
{
	return isfinite(c->size) && c->size > 0 && isfinite(c->allocs) &&
	       c->allocs >= 0 && isfinite(c->live) && c->live >= 0 &&
	       c->live <= c->allocs && c->p_min >= 0 && c->p_min <= 1 &&
	       (c->p_max == 0 || (c->p_max >= c->p_min && c->p_max <= 1));
}

static double cap_of(const ap_tune_class *c)
{
	return c->p_max > 0 ? c->p_max : 1.0;
}

static double p_at(const ap_tune_class *c, double a, double lambda, double mu)
{
	double den = lambda * c->allocs + mu * c->live * c->size;
	double p;
	if (c->allocs == 0)
		return cap_of(c);
	if (a == 0)
		return c->p_min;
	p = den > 0 ? sqrt(a / den) : 1.0;
	if (p > cap_of(c))
		p = cap_of(c);
	if (p < c->p_min)
		p = c->p_min;
	return p;
}

struct tune_ctx {
	const ap_tune_class *cls;
	size_t n;
	const ap_tune_weights *w;
	double *p;
};

/* Fill p for (lambda, mu); return the budget used, *mem the memory used. */
static double fill(const struct tune_ctx *t, double lambda, double mu,
		   double *mem)
{
	double k = 0, m = 0;
	for (size_t i = 0; i < t->n; i++) {
		const ap_tune_class *c = &t->cls[i];
		t->p[i] = p_at(c, ap_tune_coef(c, t->w), lambda, mu);
		k += c->allocs * t->p[i];
		m += c->live * c->size * t->p[i];
	}
	if (mem)
		*mem = m;
	return k;
}

/*
 * The smallest lambda >= 0 meeting the budget for this mu (bisection on
 * log lambda; the budget used is continuous and non-increasing). Leaves
 * p at the solution.
 */
static double solve_lambda(const struct tune_ctx *t, double budget, double mu)
{
	double lo, hi = 1.0;
	if (fill(t, 0, mu, NULL) <= budget)
		return 0;
	while (fill(t, hi, mu, NULL) > budget && hi < 1e300)
		hi *= 16;
	lo = hi / 16;
	while (lo > 1e-300 && fill(t, lo, mu, NULL) <= budget)
		lo /= 16;
	for (int i = 0; i < TUNE_ITERS && hi > lo * (1 + 1e-15); i++) {
		double mid = sqrt(lo * hi);
		if (fill(t, mid, mu, NULL) > budget)
			lo = mid;
		else
			hi = mid;
	}
	fill(t, hi, mu, NULL);
	return hi;
}

int ap_tune_solve(const ap_tune_class *cls, size_t n,
		  const ap_tune_weights *w, double budget, double memory,
		  double *p, double *lambda, double *mu)
{
	struct tune_ctx t = {cls, n, w, p};
	double kmin = 0, mmin = 0, lam, m, mu_lo, mu_hi;
	if (!cls || !w || !p || n == 0 || !(budget > 0) || !isfinite(budget) ||
	    !(memory >= 0) || !isfinite(memory) || !(w->alloc >= 0) ||
	    !(w->inuse >= 0) || !(w->objects >= 0) ||
	    !isfinite(w->alloc + w->inuse + w->objects) ||
	    w->alloc + w->inuse + w->objects == 0)
		return AP_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!class_ok(&cls[i]))
			return AP_EINVAL;
		p[i] = cls[i].allocs == 0 ? cap_of(&cls[i]) : cls[i].p_min;
		kmin += cls[i].allocs * p[i];
		mmin += cls[i].live * cls[i].size * p[i];
	}
	if (lambda)
		*lambda = 0;
	if (mu)
		*mu = 0;
	if (kmin > budget || (memory > 0 && mmin > memory))
		return AP_ERANGE;
	lam = solve_lambda(&t, budget, 0);
	fill(&t, lam, 0, &m);
	if (memory > 0 && m > memory) {
		/* Memory binds: bisection on mu, lambda re-solved inside. */
		mu_lo = 0;
		mu_hi = 1.0;
		for (;;) {
			lam = solve_lambda(&t, budget, mu_hi);
			fill(&t, lam, mu_hi, &m);
			if (m <= memory || mu_hi > 1e300)
				break;
			mu_lo = mu_hi;
			mu_hi *= 16;
		}
		for (int i = 0; i < TUNE_ITERS &&
				mu_hi > mu_lo * (1 + 1e-15) + 1e-300; i++) {
			double mid = mu_lo > 0 ? sqrt(mu_lo * mu_hi)
					       : mu_hi / 16;
			lam = solve_lambda(&t, budget, mid);
			fill(&t, lam, mid, &m);
			if (m > memory)
				mu_lo = mid;
			else
				mu_hi = mid;
			if (mu_lo == 0 && mu_hi < 1e-300)
				break;
		}
		lam = solve_lambda(&t, budget, mu_hi);
		fill(&t, lam, mu_hi, NULL);
		if (mu)
			*mu = mu_hi;
	}
	if (lambda)
		*lambda = lam;
	return 0;
}

void ap_tune_variance(const ap_tune_class *cls, size_t n, const double *p,
		      ap_tune_var *out)
{
	ap_tune_var v = {0, 0, 0, 0, 0};
	for (size_t i = 0; i < n; i++) {
		const ap_tune_class *c = &cls[i];
		double odds = (1 - p[i]) / p[i];
		double z2 = c->size * c->size;
		if (c->allocs == 0)
			continue;
		v.alloc += c->allocs * z2 * odds;
		/* No live objects: no in-use term, even at p = 0. */
		if (c->live > 0)
			v.inuse += c->live * z2 * odds;
		v.objects += c->allocs * odds;
		v.samples += c->allocs * p[i];
		v.live_bytes += c->live * c->size * p[i];
	}
	*out = v;
}

void ap_tune_perbyte(const ap_tune_class *cls, size_t n, double rate,
		     double *p)
{
	double lq = rate > 1 ? log1p(-1 / rate) : 0;
	for (size_t i = 0; i < n; i++) {
		if (rate > 1)
			p[i] = -expm1(cls[i].size * lq);
		else
			p[i] = rate == 1 ? 1.0 : (double)NAN;
	}
}

static double perbyte_samples(const ap_tune_class *cls, size_t n, double r)
{
	double lq = log1p(-1 / r), k = 0;
	for (size_t i = 0; i < n; i++)
		k += cls[i].allocs * -expm1(cls[i].size * lq);
	return k;
}

double ap_tune_perbyte_rate(const ap_tune_class *cls, size_t n, double budget)
{
	double lo = 1, hi = TUNE_RATE_MAX, total = 0;
	if (!cls || n == 0 || !(budget > 0))
		return (double)NAN;
	for (size_t i = 0; i < n; i++) {
		if (!class_ok(&cls[i]))
			return (double)NAN;
		total += cls[i].allocs;
	}
	if (budget >= total)
		return 1;
	/* samples(R) falls from total at R = 1 to ~0: keep lo above budget. */
	for (int i = 0; i < TUNE_ITERS && hi > lo * (1 + 1e-15); i++) {
		double mid = sqrt(lo * hi);
		if (mid <= 1 || perbyte_samples(cls, n, mid) > budget)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

double ap_tune_floor(double size, double rate, double factor)
{
	double pb;
	if (!(size > 0) || !(rate >= 1) || !(factor >= 1) || !isfinite(factor))
		return (double)NAN;
	pb = rate == 1 ? 1.0 : -expm1(size * log1p(-1 / rate));
	return pb / (pb + factor * (1 - pb));
}

double ap_tune_virtual_size(double p, double rate)
{
	if (!(p >= 0 && p <= 1) || !(rate > 1) || !isfinite(rate))
		return (double)NAN;
	if (p == 1)
		return (double)INFINITY;
	return log1p(-p) / log1p(-1 / rate);
}

int ap_tune_gap_units(double p, double rate, unsigned shift, uint64_t *units,
		      double *p_real)
{
	double g, scaled, u;
	if (!units || !p_real || shift > 16 || !(p > 0 && p <= 1) ||
	    !(rate > 1) || !isfinite(rate))
		return AP_EINVAL;
	g = ap_tune_virtual_size(p, rate);
	scaled = ldexp(g, (int)shift);
	if (!(scaled < 4611686018427387904.0)) /* 2^62 */
		return AP_ERANGE;
	u = nearbyint(scaled);
	if (u < 1)
		u = 1;
	*units = (uint64_t)u;
	*p_real = -expm1(ldexp(u, -(int)shift) * log1p(-1 / rate));
	return 0;
}

double ap_tune_effective_rate(double size, double p, double rate)
{
	double g = ap_tune_virtual_size(p, rate);
	if (!(size > 0) || !(g > 0))
		return (double)NAN;
	return isinf(g) ? 1.0 : rate * size / g;
}

double ap_tune_class_rate(double p, double size)
{
	if (!(p >= 0 && p <= 1) || !(size > 0) || !isfinite(size))
		return (double)NAN;
	if (p == 1)
		return 1.0;
	if (p == 0)
		return (double)INFINITY;
	return -1 / expm1(log1p(-p) / size);
}

static uint64_t grid_rate(double r, uint64_t base)
{
	double k;
	if (r >= TUNE_RATE_MAX)
		return (uint64_t)TUNE_RATE_MAX;
	k = r <= (double)base ? 0 : nearbyint(log2(r / (double)base));
	if (ldexp((double)base, (int)(k < 60 ? k : 60)) >= TUNE_RATE_MAX)
		return (uint64_t)TUNE_RATE_MAX;
	return base << (int)k;
}

uint64_t ap_tune_table_rate(double p, double p_min, double size, uint64_t base)
{
	double r = ap_tune_class_rate(p, size);
	double rmax = p_min > 0 ? ap_tune_class_rate(p_min, size) : TUNE_RATE_MAX;
	uint64_t g;
	if (isnan(r) || isnan(rmax) || base == 0 || (double)base > TUNE_RATE_MAX)
		return 0;
	g = grid_rate(r, base);
	while (g > base && (double)g > rmax)
		g = g / 2 < base ? base : g / 2;
	return g;
}
