/*
 * difftest.c: per-site tests of "no change" between two profiles (Wald,
 * the exact conditional binomial test, an exact test under the split
 * model), MOVER intervals for the change, Welch's test over replicated
 * runs, and Benjamini-Hochberg q-values. docs/DIFF.md says when each
 * applies; docs/STATISTICS.md section 8 derives them.
 */
#include "allocprof/difftest.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fdr.h"
#include "specfun.h"

/* A side's uncertain samples behave like small objects' (pi ~ Z / R, so
 * counts are Poisson with mean bytes / R) when every variance term is
 * close to R^2: f(Z/R) >= 0.95 holds for Z <~ 0.4 R. */
#define SMALL_OBJECT_VAR 0.95

const char *ap_diff_method_name(ap_diff_method m)
{
	switch (m) {
	case AP_DIFF_NONE: return "none sampled";
	case AP_DIFF_EXACT: return "exact";
	case AP_DIFF_WALD: return "wald";
	case AP_DIFF_CONDITIONAL: return "conditional";
	case AP_DIFF_SPLIT: return "split";
	case AP_DIFF_WELCH: return "welch";
	}
	return "?";
}

static void result_nan(ap_diff_result *out)
{
	const double nan = (double)NAN;
	if (out)
		*out = (ap_diff_result){nan, nan, nan, nan, nan, false,
					AP_DIFF_NONE, 0};
}

double ap_binom_test(uint64_t k, uint64_t n, double p0)
{
	if (k > n || !(p0 > 0 && p0 < 1))
		return (double)NAN;
	double kk = (double)k, nn = (double)n;
	/* P(X <= k) = I_{1-p}(n-k, k+1); P(X >= k) = I_p(k, n-k+1). */
	double le = k == n ? 1.0 : ap_betainc(nn - kk, kk + 1, 1 - p0);
	double ge = k == 0 ? 1.0 : ap_betainc(kk, nn - kk + 1, p0);
	return fmin(1.0, 2 * fmin(le, ge));
}

static double side_rate(const ap_row *r)
{
	return r->rate_max > 0 ? fmax(r->rate_max, r->rate) : r->rate;
}

static bool side_exact(const ap_row *r)
{
	return side_rate(r) == 1 ||
	       (r->samples > 0 && r->exact_samples == r->samples);
}

/* Every sample uncertain like a small object's, one rate; or no sample. */
static bool side_small(const ap_row *r)
{
	if (r->samples == 0)
		return true;
	double R = r->rate;
	return R > 1 && r->rate_max <= R && r->exact_samples == 0 &&
	       r->var_bytes >= SMALL_OBJECT_VAR * (double)r->samples * R * R;
}

/* The split model of a side: y = c + w N, N ~ Poisson, observed n. */
struct split {
	double c, w, n;
};

static struct split split_of(const ap_row *r)
{
	struct split s = {r->bytes, 0, 0};
	if (side_exact(r))
		return s;
	double ess = r->var_bytes > 0 && r->var2_bytes == 0
			     ? (double)r->samples
			     : ap_ess(r->var_bytes, r->var2_bytes);
	if (ess > 0) {
		s.n = ess;
		s.w = sqrt(r->var_bytes / ess);
		s.c = r->bytes - ess * s.w;
	} else {
		/* Nothing uncertain seen: what could hide are small objects,
		 * events of weight ~R, of which 0 were seen. */
		s.w = side_rate(r);
	}
	return s;
}

/*
 * Common total T under "no change": the restricted maximum likelihood of
 * the two Poisson counts with c_j + w_j mu_j = T, i.e. the root of
 * sum n_j / (T - c_j) = sum 1 / w_j (decreasing in T) above max c_j.
 */
static double common_total(const struct split *a, const struct split *b)
{
	if (a->w == 0)
		return a->c;
	if (b->w == 0)
		return b->c;
	double lo = fmax(a->c, b->c), inv = 1 / a->w + 1 / b->w;
	double hi = lo + 2 * (a->n + b->n + 1) * fmax(a->w, b->w);
	for (int i = 0; i < 200 && hi - lo > 1e-12 * fmax(1.0, hi); i++) {
		double t = 0.5 * (lo + hi);
		double f = (a->n > 0 ? a->n / (t - a->c) : 0) +
			   (b->n > 0 ? b->n / (t - b->c) : 0) - inv;
		if (f > 0)
			lo = t;
		else
			hi = t;
	}
	return 0.5 * (lo + hi);
}

/* P(N <= k) and P(N >= k) for N ~ Poisson(mu). */
static double pois_le(double k, double mu)
{
	if (k < 0)
		return 0;
	if (mu == 0)
		return 1;
	return apx_specfun_gammainc(floor(k) + 1, mu, true);
}

static double pois_ge(double k, double mu)
{
	if (k <= 0)
		return 1;
	if (mu == 0)
		return 0;
	return apx_specfun_gammainc(ceil(k), mu, false);
}

/*
 * P(|D*| >= d) for D* = k + w_in N_in - w_out N_out under "no change",
 * summed over N_out ~ Poisson(mu_out) (the side with fewer events) of the
 * inner Poisson(mu_in) tails.
 */
static double split_tail(double k, double d, double w_in, double mu_in,
			 double w_out, double mu_out)
{
	double p = 0;
	double amax = mu_out == 0 ? 0 : ceil(mu_out + 12 * sqrt(mu_out) + 30);
	for (double a = 0; a <= amax; a++) {
		double pa = mu_out == 0 ? 1.0
				       : exp(a * log(mu_out) - mu_out - lgamma(a + 1));
		/* D* (or -D*) = base + w_in N_in. */
		double base = k - w_out * a;
		double t;
		if (w_in == 0) {
			t = fabs(base) >= d ? 1 : 0;
		} else {
			t = pois_ge((d - base) / w_in * (1 - 1e-12), mu_in) +
			    pois_le((-d - base) / w_in * (1 + 1e-12), mu_in);
		}
		p += pa * fmin(1.0, t);
	}
	return fmin(1.0, p);
}

static double split_pvalue(const ap_row *base, const ap_row *nw)
{
	struct split b = split_of(base), n = split_of(nw);
	double d = fabs(nw->bytes - base->bytes);
	if (d == 0)
		return 1;
	double t0 = common_total(&b, &n);
	double mb = b.w > 0 ? fmax(0.0, (t0 - b.c) / b.w) : 0;
	double mn = n.w > 0 ? fmax(0.0, (t0 - n.c) / n.w) : 0;
	double k = n.c - b.c;
	/* D* = k + w_n N_n - w_b N_b; sum over the side with fewer events. */
	if (b.w > 0 && (mb <= mn || n.w == 0))
		return split_tail(k, d, n.w, mn, b.w, mb);
	return split_tail(-k, d, b.w, mb, n.w, mn);
}

/* MOVER: each bound of new - base from the sides' own intervals. */
static int mover(const ap_row *base, const ap_row *nw, double level,
		 ap_diff_result *out)
{
	ap_interval ib, in;
	int rc = ap_row_bytes_interval(base, level, &ib, NULL);
	if (rc == 0)
		rc = ap_row_bytes_interval(nw, level, &in, NULL);
	if (rc)
		return rc;
	double lb = ib.estimate - ib.lo, ub = ib.hi - ib.estimate;
	double ln = in.estimate - in.lo, un = in.hi - in.estimate;
	out->lo = out->change - sqrt(ln * ln + ub * ub);
	out->hi = out->change + sqrt(un * un + lb * lb);
	return 0;
}

static void set_flags(ap_diff_result *out, double level)
{
	out->q = out->p;
	out->significant = out->p <= 1 - level;
}

int ap_diff_test(const ap_row *base, const ap_row *nw, double level,
		 ap_diff_result *out)
{
	result_nan(out);
	if (!base || !nw || !out || !(level > 0 && level < 1))
		return AP_EINVAL;
	ap_interval tmp;
	ap_ci_method mb, mn;
	int rc = ap_row_bytes_interval(base, level, &tmp, &mb);
	if (rc == 0)
		rc = ap_row_bytes_interval(nw, level, &tmp, &mn);
	if (rc)
		return rc;
	*out = (ap_diff_result){.change = nw->bytes - base->bytes};
	if (side_exact(base) && side_exact(nw)) {
		out->method = AP_DIFF_EXACT;
		out->p = out->change == 0 ? 1 : 0;
		out->lo = out->hi = out->change;
	} else if (base->samples == 0 && nw->samples == 0) {
		out->method = AP_DIFF_NONE;
		out->p = 1;
		rc = mover(base, nw, level, out);
	} else if (mb == AP_CI_NORMAL && mn == AP_CI_NORMAL) {
		out->method = AP_DIFF_WALD;
		double se = sqrt(base->var_bytes + nw->var_bytes);
		out->p = se > 0 ? 2 * ap_normal_cdf(-fabs(out->change) / se)
				: (out->change == 0 ? 1 : 0);
		double h = ap_normal_quantile(0.5 + 0.5 * level) * se;
		out->lo = out->change - h;
		out->hi = out->change + h;
	} else if (side_small(base) && side_small(nw)) {
		out->method = AP_DIFF_CONDITIONAL;
		double rb = side_rate(base), rn = side_rate(nw);
		uint64_t n = base->samples + nw->samples;
		out->p = n ? ap_binom_test(nw->samples, n, rb / (rb + rn)) : 1;
		rc = mover(base, nw, level, out);
	} else {
		out->method = AP_DIFF_SPLIT;
		out->p = split_pvalue(base, nw);
		rc = mover(base, nw, level, out);
	}
	if (rc || isnan(out->p)) {
		result_nan(out);
		return rc ? rc : AP_ERANGE;
	}
	set_flags(out, level);
	return 0;
}

/* Two-sided tail of Student's t with df degrees of freedom (inf: normal). */
static double t_two_sided(double t, double df)
{
	if (isinf(df))
		return 2 * ap_normal_cdf(-fabs(t));
	return ap_betainc(0.5 * df, 0.5, df / (df + t * t));
}

static double t_quantile(double level, double df)
{
	double z = ap_normal_quantile(0.5 + 0.5 * level);
	if (isinf(df))
		return z;
	double lo = 0, hi = z;
	while (t_two_sided(hi, df) > 1 - level)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double m = 0.5 * (lo + hi);
		if (t_two_sided(m, df) > 1 - level)
			lo = m;
		else
			hi = m;
	}
	return hi;
}

/* Mean, variance of the mean and degrees of freedom of one side's runs. */
static int side_runs(const ap_row *r, size_t m, double *mean, double *var,
		     double *df)
{
	double s = 0, v = 0;
	for (size_t i = 0; i < m; i++) {
		if (!(r[i].bytes >= 0) || !(r[i].var_bytes >= 0) ||
		    !isfinite(r[i].bytes) || !isfinite(r[i].var_bytes))
			return AP_EINVAL;
		s += r[i].bytes;
		v += r[i].var_bytes;
	}
	*mean = s / (double)m;
	if (m == 1) {
		*var = v; /* sampling noise only: nothing shows the rest */
		*df = (double)INFINITY;
		return 0;
	}
	double ss = 0;
	for (size_t i = 0; i < m; i++)
		ss += (r[i].bytes - *mean) * (r[i].bytes - *mean);
	/* The runs' spread contains their sampling noise and the program's
	 * own variation; Student's t accounts for estimating it from m. */
	*var = ss / (double)(m - 1) / (double)m;
	*df = (double)(m - 1);
	return 0;
}

int ap_diff_test_runs(const ap_row *base, size_t nb, const ap_row *nw,
		      size_t nn, double level, ap_diff_result *out)
{
	result_nan(out);
	if (!base || !nw || !out || nb == 0 || nn == 0 ||
	    !(level > 0 && level < 1))
		return AP_EINVAL;
	if (nb == 1 && nn == 1)
		return ap_diff_test(base, nw, level, out);
	double mb, vb, db, mn, vn, dn;
	if (side_runs(base, nb, &mb, &vb, &db) ||
	    side_runs(nw, nn, &mn, &vn, &dn))
		return AP_EINVAL;
	double se2 = vb + vn;
	double den = (isinf(db) ? 0 : vb * vb / db) + (isinf(dn) ? 0 : vn * vn / dn);
	double df = den > 0 ? se2 * se2 / den : (double)INFINITY;
	*out = (ap_diff_result){.change = mn - mb, .method = AP_DIFF_WELCH,
				.df = df};
	double se = sqrt(se2);
	out->p = se > 0 ? t_two_sided(out->change / se, df)
			: (out->change == 0 ? 1 : 0);
	double h = se > 0 ? t_quantile(level, df) * se : 0;
	out->lo = out->change - h;
	out->hi = out->change + h;
	set_flags(out, level);
	return 0;
}

struct ranked {
	double p;
	size_t i;
};

static int by_p(const void *a, const void *b)
{
	double x = ((const struct ranked *)a)->p, y = ((const struct ranked *)b)->p;
	return (x > y) - (x < y);
}

int ap_diff_qvalues(const double *p, size_t n, double *q,
		    const ap_allocator *alloc)
{
	if (n == 0)
		return 0;
	if (!p || !q)
		return AP_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!(p[i] >= 0 && p[i] <= 1))
			return AP_EINVAL;
	if (!alloc)
		alloc = ap_allocator_libc();
	struct ranked *r = alloc->alloc(alloc->ctx, n * sizeof *r);
	if (!r)
		return AP_ENOMEM;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct ranked){p[i], i};
	qsort(r, n, sizeof *r, by_p);
	double run = 1;
	for (size_t j = n; j-- > 0;) {
		run = fmin(run, r[j].p * (double)n / (double)(j + 1));
		q[r[j].i] = run;
	}
	alloc->free(alloc->ctx, r, n * sizeof *r);
	return 0;
}

int apx_qvalues_strided(void *items, size_t n, size_t stride, size_t p_off,
			size_t q_off, const ap_allocator *alloc)
{
	if (n == 0)
		return 0;
	if (!items)
		return AP_EINVAL;
	if (!alloc)
		alloc = ap_allocator_libc();
	double *p = alloc->alloc(alloc->ctx, n * sizeof *p);
	if (!p)
		return AP_ENOMEM;
	unsigned char *base = items;
	for (size_t i = 0; i < n; i++)
		memcpy(&p[i], base + i * stride + p_off, sizeof p[i]);
	int rc = ap_diff_qvalues(p, n, p, alloc);
	for (size_t i = 0; rc == 0 && i < n; i++)
		memcpy(base + i * stride + q_off, &p[i], sizeof p[i]);
	alloc->free(alloc->ctx, p, n * sizeof *p);
	return rc;
}

int ap_diff_fdr(ap_diff_result *r, size_t n, double fdr,
		const ap_allocator *alloc)
{
	if (n > 0 && (!r || !(fdr > 0 && fdr < 1)))
		return AP_EINVAL;
	int rc = apx_qvalues_strided(r, n, sizeof *r, offsetof(ap_diff_result, p),
				     offsetof(ap_diff_result, q), alloc);
	for (size_t i = 0; rc == 0 && i < n; i++)
		r[i].significant = r[i].q <= fdr;
	return rc;
}
