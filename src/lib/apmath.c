/*
 * apmath.c: log, log1p and expm1 without libm (apmath.h).
 *
 * Both kernels work on a reduced argument whose leading term is exact, so
 * the rounding errors of the series only touch a correction several times
 * smaller than the result:
 *
 *   log(1 + f) = 2 atanh(s) with s = f / (2 + f), and since 2s = f - s f,
 *              = f - s (f - R),  R = 2s^2/3 + 2s^4/5 + ... + 2s^22/23,
 *   for 1 + f in [sqrt(1/2), sqrt(2)], where |s| <= 0.1716: the first
 *   term left out, 2 s^24 / 25 times s, is below 2^-53 |f|;
 *
 *   expm1(r) = r + r^2 (1/2! + r/3! + ... + r^12/14!) for |r| <= ln(2)/2,
 *   where the first term left out, r^15/15!, is below 2^-53 |r|.
 *
 * Arguments outside those intervals are reduced by powers of two: x =
 * 2^e m for the log, x = k ln 2 + r for expm1, with ln 2 split in two
 * parts (its leading 32 bits, so that k ln2_hi is exact for any k that
 * can occur, and the rest).
 */
#include "apmath.h"

#include <math.h> /* HUGE_VAL and NAN only: no libm function is called */
#include <stdint.h>
#include <string.h>

/* ln 2 = LN2_HI + LN2_LO, LN2_HI with its low 21 mantissa bits zero. */
#define LN2_HI 0x1.62e42fee00000p-1
#define LN2_LO 0x1.a39ef35793c76p-33
#define INV_LN2 0x1.71547652b82fep+0
#define SQRT2 0x1.6a09e667f3bcdp+0

static uint64_t bits_of(double x)
{
	uint64_t b;
	memcpy(&b, &x, sizeof b);
	return b;
}

static double from_bits(uint64_t b)
{
	double x;
	memcpy(&x, &b, sizeof x);
	return x;
}

/* 2^k for -1022 <= k <= 1023. */
static double pow2(int k)
{
	return from_bits((uint64_t)(k + 1023) << 52);
}

/* The exact sum a + b as hi + *lo (Fast2Sum: the larger magnitude first). */
static double two_sum(double a, double b, double *lo)
{
	double hi = a + b;
	*lo = fabs(a) >= fabs(b) ? (a - hi) + b : (b - hi) + a;
	return hi;
}

/*
 * The two polynomials' coefficients, together on a few cache lines: the
 * runtime's sampler evaluates them about once per sample, when they are
 * cold, and the compiler's constant pool had them on as many lines as it
 * pleased (cachegrind: 6 misses a sample in ap_expm1 and log_c). coef()
 * hides the array's contents from the optimiser, which would otherwise
 * turn each load back into a pool constant. The values and the order of
 * evaluation are those of the nested Horner forms they replace.
 */
enum { LOG1P_N = 11, EXPM1_N = 13 };
static const double coefs[LOG1P_N + EXPM1_N] __attribute__((aligned(64))) = {
	/* log1p_tail: 2 / (2i + 3), i = 0..10 */
	2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13, 2.0 / 15,
	2.0 / 17, 2.0 / 19, 2.0 / 21, 2.0 / 23,
	/* expm1_tail: 1 / (i + 2)!, i = 0..12 */
	1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
	1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800,
	1.0 / 479001600, 1.0 / 6227020800.0, 1.0 / 87178291200.0,
};

static const double *coef(void)
{
	const double *c = coefs;
	__asm__("" : "+r"(c));
	return c;
}

/* c[0] + z (c[1] + z (... + z c[n - 1])) */
static double horner(const double *c, int n, double z)
{
	double p = c[n - 1];
	for (int i = n - 2; i >= 0; i--)
		p = c[i] + z * p;
	return p;
}

/* log(1 + f) - f for 1 + f in [sqrt(1/2), sqrt(2)], f exact: the small
 * part, which callers add last. */
static double log1p_tail(double f)
{
	double s = f / (2.0 + f), z = s * s;
	double r = z * horner(coef(), LOG1P_N, z);
	return -s * (f - r);
}

/* log(x + c) for x > 0 normal or subnormal, finite, and |c| below half
 * an ulp of x (c = 0: log(x)); c enters with the small parts. */
static double log_c(double x, double c)
{
	uint64_t b = bits_of(x);
	int e = 0;
	if (b < 0x0010000000000000ULL) { /* subnormal: make it normal */
		x *= 0x1p54;
		b = bits_of(x);
		e = -54;
		c = 0; /* only log1p passes one, and never with such an x */
	}
	double cx = c / x;
	e += (int)(b >> 52) - 1023;
	double m = from_bits((b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
	if (m > SQRT2) { /* into [sqrt(1/2), sqrt(2)]: both steps exact */
		m *= 0.5;
		e++;
	}
	double f = m - 1.0; /* exact (Sterbenz) */
	double tail = log1p_tail(f) + cx;
	if (e == 0)
		return f + tail;
	/* e ln2_hi is exact (at most 43 significant bits); adding f exactly
	 * (two_sum) keeps x just below 1/sqrt(2), where e ln 2 and log(m)
	 * nearly cancel, as accurate as elsewhere. */
	double lo, hi = two_sum((double)e * LN2_HI, f, &lo);
	return hi + (lo + (tail + (double)e * LN2_LO));
}

double ap_log(double x)
{
	if (x != x)
		return x + x;
	if (x <= 0)
		return x == 0 ? -HUGE_VAL : (double)NAN;
	if (x == HUGE_VAL)
		return x;
	return log_c(x, 0.0);
}

double ap_log1p(double x)
{
	if (x != x)
		return x + x;
	if (x <= -1.0)
		return x == -1.0 ? -HUGE_VAL : (double)NAN;
	if (x >= -0.29289321881345248 && x <= 0.41421356237309503)
		return x + log1p_tail(x); /* 1 + x within [sqrt(1/2), sqrt(2)] */
	if (x == HUGE_VAL)
		return x;
	/* u = 1 + x rounded and c its rounding error, exactly:
	 * log(1 + x) = log(u + c) */
	double c, u = two_sum(1.0, x, &c);
	return log_c(u, c);
}

/* expm1(r) - r for |r| <= ln(2)/2 (slightly more after rounding k): the
 * small part, which callers add last. */
static double expm1_tail(double r)
{
	double p = horner(coef() + LOG1P_N, EXPM1_N, r);
	return r * r * p;
}

double ap_expm1(double x)
{
	if (x != x)
		return x + x;
	if (x > 709.782712893384) /* e^x overflows (also +inf) */
		return HUGE_VAL;
	if (x < -38.0) /* e^x < 2^-54: -1 is the rounded result */
		return -1.0;
	if (x > -0x1p-54 && x < 0x1p-54) /* x itself, and -0 stays -0 */
		return x;
	if (x >= -0.34657359027997264 && x <= 0.34657359027997264)
		return x + expm1_tail(x);
	/* x = k ln 2 + r + c with |r| <= ln(2)/2 (plus rounding): x - k
	 * ln2_hi is exact (Sterbenz), and c carries what r lost of ln2_lo. */
	int k = (int)(x * INV_LN2 + (x > 0 ? 0.5 : -0.5));
	double hi = x - (double)k * LN2_HI, lo = (double)k * LN2_LO;
	double r = hi - lo, c = (hi - r) - lo;
	/* e^(r + c) - 1 = r + t + c (1 + r + t) to first order in c */
	double t = expm1_tail(r);
	double small = t + c * (1.0 + r + t);
	double p = pow2(k < 1024 ? k : 1023), err, sum;
	if (k <= 52) {
		/* e^x - 1 = (2^k - 1) + 2^k r + 2^k small, the first two
		 * exact and summed exactly, so that the cancellation for x
		 * just past -ln(2)/2 costs nothing */
		sum = two_sum(p - 1.0, p * r, &err);
		return sum + (err + p * small);
	}
	/* 2^k (1 + r) exactly, then the rest; the -1 is still worth up to
	 * an ulp for k = 53 */
	sum = two_sum(1.0, r, &err);
	if (k < 1024)
		return p * sum + (p * (err + small) - 1.0);
	return (p * sum + p * (err + small)) * 2.0;
}
