/*
 * specfun.c: the special functions behind allocprof's intervals: the
 * regularized incomplete beta (the NB CDF, [R4]), the
 * regularized incomplete gamma (exact Poisson intervals) and the standard
 * normal CDF and quantile (HT normal intervals, Camp-Paulson).
 *
 * Accuracy strategy. Both incomplete functions are a prefactor times a
 * continued fraction (or series). The prefactor, e.g. x^a (1-x)^b / B(a,b),
 * is where naive code loses digits: with a, b ~ 1e6 the logs of its pieces
 * are ~1e7 and cancel to O(1), leaving ~1e-9 relative error. We instead write
 * every Gamma function in Stirling form, Gamma(z) = sqrt(2 pi) z^(z-1/2)
 * e^(-z) e^(delta(z)), so the prefactor becomes
 *
 *   x^a (1-x)^b / B(a,b) = sqrt(a b / (2 pi n)) *
 *       exp(delta(n) - delta(a) - delta(b) - bd0(a, x n) - bd0(b, (1-x) n))
 *
 * with n = a + b and bd0(v, m) = v log(v/m) + m - v >= 0, computed by a
 * series when v is close to m (Loader's deviance form, "Fast and Accurate
 * Computation of Binomial Probabilities", 2000). All terms are then small,
 * and errors stay near machine precision for parameters up to ~1e7 and
 * beyond. The continued fractions are evaluated with the modified Lentz
 * method (Thompson and Barnett, 1986), after the symmetry swap that keeps
 * them in their fast-converging region.
 */
#define _DEFAULT_SOURCE /* lgamma_r: lgamma writes the global signgam */
#include "specfun.h"

#include <float.h>
#include <math.h>

#include "allocprof/estimate.h"

#define LN_SQRT_2PI 0.91893853320467274178
#define SQRT_2PI 2.50662827463100050242
#define CF_EPS 1e-15
#define CF_TINY 1e-300
#define CF_MAX_ITER 1000000

/*
 * delta(z) = lgamma(z) - [(z - 1/2) log z - z + log sqrt(2 pi)], the error of
 * Stirling's formula. For z >= 15 the asymptotic series (coefficients
 * B_2k / (2k (2k-1))) is accurate to < 1e-16 absolute with five terms; below
 * that the difference is formed directly, where its terms are small.
 */
static double stirling_error(double z)
{
	if (z >= 15.0) {
		double r = 1.0 / z, r2 = r * r;
		return r * (1.0 / 12 -
			    r2 * (1.0 / 360 -
				  r2 * (1.0 / 1260 -
					r2 * (1.0 / 1680 - r2 / 1188))));
	}
	int sign;
	return lgamma_r(z, &sign) - ((z - 0.5) * log(z) - z + LN_SQRT_2PI);
}

/* bd0(v, m) = v log(v/m) + m - v, the deviance term, m > 0, v >= 0. */
static double deviance(double v, double m)
{
	if (v == 0)
		return m;
	if (fabs(v - m) < 0.1 * (v + m)) {
		/*
		 * With w = (v-m)/(v+m): v log(v/m) = 2v atanh(w), and
		 * m - v = -w (v+m), so bd0 = w (v-m) + 2v (w^3/3 + w^5/5 ...).
		 */
		double w = (v - m) / (v + m);
		double w2 = w * w;
		double sum = w * (v - m);
		double pw = 2.0 * v * w;
		for (int j = 1; j < 1000; j++) {
			pw *= w2;
			double next = sum + pw / (2 * j + 1);
			if (next == sum)
				break;
			sum = next;
		}
		return sum;
	}
	/* log v - log m: v / m may underflow when v << m. */
	return v * (log(v) - log(m)) + m - v;
}

/*
 * Modified Lentz evaluation of b0 + a1/(b1 + a2/(b2 + ...)); term(ctx, m,
 * &a_m, &b_m) supplies the partial numerators and denominators for m >= 1.
 * NaN when it has not converged after CF_MAX_ITER terms.
 */
typedef void (*cf_term_fn)(const void *ctx, int m, double *num, double *den);

static double lentz(double b0, cf_term_fn term, const void *ctx)
{
	double f = b0 == 0 ? CF_TINY : b0;
	double c = f, d = 0;
	for (int m = 1; m <= CF_MAX_ITER; m++) {
		double am, bm;
		term(ctx, m, &am, &bm);
		d = bm + am * d;
		if (fabs(d) < CF_TINY)
			d = CF_TINY;
		c = bm + am / c;
		if (fabs(c) < CF_TINY)
			c = CF_TINY;
		d = 1.0 / d;
		double delta = c * d;
		f *= delta;
		if (fabs(delta - 1.0) < CF_EPS)
			return f;
	}
	return (double)NAN;
}

/* ---- incomplete beta -------------------------------------------------- */

struct beta_cf {
	double a, b, x, y; /* y = 1 - x, exact as the caller knows it */
};

/*
 * I_x(a,b) = front / (1 + d1/(1 + d2/(1 + ...))) with
 * d_{2k+1} = -(a+k)(a+b+k) x / ((a+2k)(a+2k+1)),
 * d_{2k}   = k (b-k) x / ((a+2k-1)(a+2k))   (DLMF 8.17.22).
 */
static double beta_d(const struct beta_cf *p, int m)
{
	double k = (double)(m / 2), a = p->a, b = p->b;
	if (m % 2) /* m = 2k + 1 */
		return -(a + k) * (a + b + k) * p->x /
		       ((a + 2 * k) * (a + 2 * k + 1));
	return k * (b - k) * p->x / ((a + 2 * k - 1) * (a + 2 * k));
}

/*
 * e_m = 1 + d_m for odd m. After the symmetry swap x is close to 1 and d_m
 * close to -1, so 1 + d_m would cancel and lose the digits of the small
 * 1 - x (at p = 1e-9 the NB CDF came out ~1e-6 wrong). Expanded with
 * y = 1 - x it is
 *   [a(2k+1-b) + k(3k+2-b) + (a+k)(a+b+k) y] / ((a+2k)(a+2k+1)),
 * free of that cancellation. For x <= 1/2, 1 + d_m is already accurate.
 */
static double beta_e(const struct beta_cf *p, int m)
{
	if (p->x <= 0.5)
		return 1.0 + beta_d(p, m);
	double k = (double)(m / 2), a = p->a, b = p->b;
	return (a * (2 * k + 1 - b) + k * (3 * k + 2 - b) +
		(a + k) * (a + b + k) * p->y) /
	       ((a + 2 * k) * (a + 2 * k + 1));
}

/*
 * The fraction contracted so every 1 + d_odd appears as e_odd: with
 * S_m = 1 + d_m / S_{m+1}, the identity S_m = 1 + d_m - d_m d_{m+1} /
 * (S_{m+2} + d_{m+1}) gives W_k = S_{2k} + d_{2k-1} =
 * e_{2k-1} + d_{2k} - d_{2k} d_{2k+1} / W_{k+1}, and the whole fraction is
 * S_1 = (e_1 + t) / (1 + t), t = d_2 - d_2 d_3 / W_2. W_2 is evaluated by
 * Lentz with partial denominators e_{2j+3} + d_{2j+4} and numerators
 * -d_{2j+2} d_{2j+3}.
 */
static void beta_w_term(const void *ctx, int j, double *num, double *den)
{
	const struct beta_cf *p = ctx;
	*num = -beta_d(p, 2 * j + 2) * beta_d(p, 2 * j + 3);
	*den = beta_e(p, 2 * j + 3) + beta_d(p, 2 * j + 4);
}

static double beta_fraction(const struct beta_cf *p)
{
	double d2 = beta_d(p, 2), t = d2;
	if (d2 != 0) { /* b = 1 ends the fraction at d_1 */
		double w2 = lentz(beta_e(p, 3) + beta_d(p, 4), beta_w_term, p);
		t = d2 - d2 * beta_d(p, 3) / w2;
	}
	return (beta_e(p, 1) + t) / (1.0 + t);
}

/* log of x^a y^b / (a B(a, b)), y = 1 - x, in the Stirling form above. */
static double beta_log_front(double a, double b, double x, double y)
{
	double n = a + b;
	return 0.5 * log(a * b / n) - LN_SQRT_2PI + stirling_error(n) -
	       stirling_error(a) - stirling_error(b) - deviance(a, x * n) -
	       deviance(b, y * n) - log(a);
}

/* I_x(a, b) for x below the mean region, where the fraction converges. */
static double betainc_cf(double a, double b, double x, double y)
{
	double lfront = beta_log_front(a, b, x, y);
	if (lfront < -745.0)
		return 0.0; /* below the smallest subnormal */
	struct beta_cf ctx = {a, b, x, y};
	return exp(lfront) / beta_fraction(&ctx);
}

double ap_betainc(double a, double b, double x)
{
	if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1) || isinf(a) ||
	    isinf(b))
		return (double)NAN;
	if (x == 0)
		return 0.0;
	if (x == 1)
		return 1.0;
	double y = 1.0 - x;
	/* Symmetry I_x(a,b) = 1 - I_{1-x}(b,a) keeps the fraction fast. */
	if (x > (a + 1) / (a + b + 2))
		return 1.0 - betainc_cf(b, a, y, x);
	return betainc_cf(a, b, x, y);
}

/* ---- incomplete gamma ------------------------------------------------- */

/*
 * Above this shape the series and the fraction need more than ~3e5 terms
 * (about 9 sqrt(a)); there the Wilson-Hilferty cube-root normal form is
 * used instead. Its error shrinks like 1/a: measured against the series,
 * 4.5e-10 absolute at a = 1e7, 8.6e-12 at 1e9.
 */
#define GAMMA_ASYMPTOTIC_A 1e9

static double wilson_hilferty_z(double a, double x)
{
	return (cbrt(x / a) - (1.0 - 1.0 / (9.0 * a))) * 3.0 * sqrt(a);
}

/* log of x^a e^-x / Gamma(a), Stirling form: sqrt(a/2pi) e^(-bd0 - delta). */
static double gamma_log_front(double a, double x)
{
	return 0.5 * log(a) - LN_SQRT_2PI - deviance(a, x) - stirling_error(a);
}

/* Q(a,x) = front / (x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - ...))). */
static void gamma_term(const void *ctx, int m, double *num, double *den)
{
	const double *ax = ctx; /* {a, x} */
	*num = m == 1 ? 1.0 : -(double)(m - 1) * ((double)(m - 1) - ax[0]);
	*den = ax[1] + 2.0 * m - 1.0 - ax[0];
}

double apx_specfun_gammainc(double a, double x, bool upper)
{
	if (!(a > 0) || !(x >= 0) || isinf(a))
		return (double)NAN;
	if (x == 0)
		return upper ? 1.0 : 0.0;
	if (isinf(x))
		return upper ? 0.0 : 1.0;
	if (a > GAMMA_ASYMPTOTIC_A) {
		double z = wilson_hilferty_z(a, x);
		return ap_normal_cdf(upper ? -z : z);
	}
	double lfront = gamma_log_front(a, x);
	if (x < a + 1) {
		/* P = x^a e^-x / Gamma(a+1) * sum x^n / ((a+1)...(a+n)). */
		double term = 1.0, sum = 1.0;
		int n;
		for (n = 1; n < CF_MAX_ITER; n++) {
			term *= x / (a + n);
			sum += term;
			if (term < sum * CF_EPS)
				break;
		}
		if (n == CF_MAX_ITER)
			return (double)NAN;
		double p = exp(lfront - log(a)) * sum;
		return upper ? 1.0 - p : p;
	}
	double ax[2] = {a, x};
	double q = exp(lfront) * lentz(0.0, gamma_term, ax);
	return upper ? q : 1.0 - q;
}

double apx_specfun_gamma_quantile(double a, double target, bool upper)
{
	if (!(a > 0) || isinf(a) || !(target > 0) || !(target < 1))
		return (double)NAN;
	if (a > GAMMA_ASYMPTOTIC_A) { /* invert the same approximation */
		double z = ap_normal_quantile(target);
		double t = 1.0 - 1.0 / (9.0 * a) + (upper ? -z : z) / (3.0 * sqrt(a));
		return t > 0 ? a * t * t * t : 0.0;
	}
	/*
	 * Bracket by doubling or halving from x = a + 1, so that lo >= hi / 2,
	 * then bisect. P(a, x) rises in x; solve in the tail the caller names
	 * so small targets keep their relative precision.
	 */
	double lo = a + 1, hi = a + 1;
	double v = apx_specfun_gammainc(a, lo, upper);
	if (isnan(v))
		return (double)NAN;
	bool below = upper ? v > target : v < target; /* x too small */
	while ((upper ? v > target : v < target) == below) {
		if (below) {
			lo = hi;
			hi *= 2;
			if (isinf(hi))
				return (double)NAN;
			v = apx_specfun_gammainc(a, hi, upper);
		} else {
			hi = lo;
			lo *= 0.5;
			if (lo == 0)
				return 0.0; /* below the smallest double */
			v = apx_specfun_gammainc(a, lo, upper);
		}
		if (isnan(v))
			return (double)NAN;
	}
	for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; i++) {
		double mid = 0.5 * (lo + hi);
		v = apx_specfun_gammainc(a, mid, upper);
		if (upper ? v > target : v < target)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/* ---- normal distribution ---------------------------------------------- */

double ap_normal_cdf(double x)
{
	if (isnan(x))
		return (double)NAN;
	return 0.5 * erfc(-x / M_SQRT2);
}

double ap_normal_quantile(double p)
{
	if (isnan(p) || p < 0 || p > 1)
		return (double)NAN;
	if (p == 0)
		return -(double)INFINITY;
	if (p == 1)
		return (double)INFINITY;
	/* Work in the lower tail, where Phi keeps relative precision. */
	bool flip = p > 0.5;
	double t = flip ? 1.0 - p : p;
	/*
	 * Starting point: Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4),
	 * then Halley steps on Phi(x) - t, which converge cubically.
	 */
	double r = sqrt(-2.0 * log(t));
	double x = -(r - (2.515517 + r * (0.802853 + r * 0.010328)) /
			     (1.0 + r * (1.432788 + r * (0.189269 + r * 0.001308))));
	for (int i = 0; i < 6; i++) {
		double dens = exp(-0.5 * x * x) / SQRT_2PI;
		if (dens == 0)
			break;
		double u = (ap_normal_cdf(x) - t) / dens;
		double step = u / (1.0 + 0.5 * x * u);
		x -= step;
		if (fabs(step) <= 1e-15 * fabs(x))
			break;
	}
	return flip ? -x : x;
}
