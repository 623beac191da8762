/*
 * apmath_test.c: liballocprof's own log, log1p and expm1 (src/lib/apmath.h),
 * which the runtime uses instead of libm, against extended-precision
 * references (libm's logl, log1pl, expm1l on the x87's 64-bit significand,
 * whose own error is under 2^-11 of a double's ulp).
 *
 * Tolerance, from the construction (apmath.c): every result is a leading
 * part computed exactly plus a smaller correction. The final addition
 * rounds once (at most half an ulp); the correction is at most about a
 * fifth of the result and carries a few roundings of its own (the series'
 * Horner steps, the division in s = f / (2 + f)), under half an ulp of the
 * result in all. So every point must be within 1 ulp; libm itself, for
 * comparison, stays within about 0.85 here. Points: 4 x 500,000 from a fixed
 * seed of ap_prng over every finite double, [0, 2), [-0.75, 0.75] and
 * [-750, 750], plus the edges of each branch and the special values.
 */
#include "aptest.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "allocprof/prng.h"
#include "apmath.h"

/* |got - want| in ulps of the double nearest to want. */
static double ulps(double got, long double want)
{
	if (isnan(want))
		return isnan(got) ? 0 : HUGE_VAL;
	double w = (double)want;
	if (isinf(w))
		return got == w ? 0 : HUGE_VAL;
	if (isnan(got) || isinf(got))
		return HUGE_VAL;
	int e;
	frexpl(want, &e);
	int ue = e - 53 < -1074 ? -1074 : e - 53;
	return (double)(fabsl((long double)got - want) / ldexpl(1.0L, ue));
}

typedef struct worst {
	double ulps, at;
} worst;

static void note(worst *w, double u, double x)
{
	if (u > w->ulps) {
		w->ulps = u;
		w->at = x;
	}
}

static void check_point(double x, worst *wl, worst *wp, worst *we)
{
	long double lx = (long double)x;
	if (x > 0)
		note(wl, ulps(ap_log(x), logl(lx)), x);
	if (x > -1)
		note(wp, ulps(ap_log1p(x), log1pl(lx)), x);
	note(we, ulps(ap_expm1(x), expm1l(lx)), x);
}

AP_TEST(log_log1p_expm1_are_within_one_ulp)
{
	worst wl = {0, 0}, wp = {0, 0}, we = {0, 0};
	ap_prng g;
	AP_CHECK_EQ_INT(ap_prng_seed(&g, 20261127), 0);
	for (int i = 0; i < 2000000; i++) {
		uint64_t r = ap_prng_next(&g);
		double x;
		switch (i % 4) {
		case 0: /* any finite double, either sign */
			memcpy(&x, &r, sizeof x);
			if (!isfinite(x))
				continue;
			break;
		case 1:
			x = (double)(r >> 11) * 0x1p-52;
			break;
		case 2:
			x = ((double)(r >> 11) * 0x1p-53 - 0.5) * 1.5;
			break;
		default:
			x = ((double)(r >> 11) * 0x1p-53 - 0.5) * 1500;
			break;
		}
		check_point(x, &wl, &wp, &we);
	}
	/* the edges of the branches, and 64 neighbours on each side: log's
	 * reduction into [sqrt(1/2), sqrt(2)], log1p's direct interval,
	 * expm1's kernel interval, its switches of reconstruction where k
	 * goes from 52 to 53 and from 1023 to 1024 ((k + 1/2) ln 2), its
	 * overflow and its -1 */
	const double edges[] = {1.0, 0.70710678118654752, 1.4142135623730951,
				-0.29289321881345248, 0.41421356237309503,
				0.34657359027997264, -0.34657359027997264,
				36.39022697939713, 709.436139303104,
				709.782712893384, -38.0, DBL_MIN, 0x1p-1074, 1e-300,
				-1e-300, 0x1p-54, -0x1p-54, 1e300, DBL_MAX};
	for (size_t k = 0; k < sizeof edges / sizeof *edges; k++) {
		double x = edges[k];
		for (int j = 0; j < 64; j++)
			x = nextafter(x, -HUGE_VAL);
		for (int j = 0; j < 129; j++, x = nextafter(x, HUGE_VAL))
			check_point(x, &wl, &wp, &we);
	}
	AP_CHECK_MSG(wl.ulps < 1.0, "log: %.3f ulp at %a", wl.ulps, wl.at);
	AP_CHECK_MSG(wp.ulps < 1.0, "log1p: %.3f ulp at %a", wp.ulps, wp.at);
	AP_CHECK_MSG(we.ulps < 1.0, "expm1: %.3f ulp at %a", we.ulps, we.at);
	printf("worst: log %.3f ulp at %a, log1p %.3f at %a, expm1 %.3f at %a\n",
	       wl.ulps, wl.at, wp.ulps, wp.at, we.ulps, we.at);
}

AP_TEST(special_values_are_those_of_c)
{
	AP_CHECK(ap_log(0.0) == -HUGE_VAL && ap_log(-0.0) == -HUGE_VAL);
	AP_CHECK(isnan(ap_log(-1.0)) && isnan(ap_log(-HUGE_VAL)));
	AP_CHECK(ap_log(HUGE_VAL) == HUGE_VAL && isnan(ap_log((double)NAN)));
	AP_CHECK(ap_log(1.0) == 0.0);
	AP_CHECK(ap_log1p(-1.0) == -HUGE_VAL && isnan(ap_log1p(-1.5)));
	AP_CHECK(ap_log1p(HUGE_VAL) == HUGE_VAL && isnan(ap_log1p((double)NAN)));
	AP_CHECK(ap_log1p(0.0) == 0.0 && signbit(ap_log1p(-0.0)));
	AP_CHECK(ap_log1p(0x1p-60) == 0x1p-60); /* log1p(x) = x for tiny x */
	AP_CHECK(ap_expm1(HUGE_VAL) == HUGE_VAL && ap_expm1(-HUGE_VAL) == -1.0);
	AP_CHECK(ap_expm1(710.0) == HUGE_VAL && isnan(ap_expm1((double)NAN)));
	AP_CHECK(ap_expm1(0.0) == 0.0 && signbit(ap_expm1(-0.0)));
	AP_CHECK(ap_expm1(0x1p-60) == 0x1p-60);
	AP_CHECK(ap_expm1(-100.0) == -1.0);
	/* the sampler's own uses: log q for R = 2 and 2^40, a draw's log U at
	 * its smallest U, pi(Z) for one byte at R = 512 KiB */
	AP_CHECK(ulps(ap_log1p(-0.5), log1pl(-0.5L)) < 1.0);
	AP_CHECK(ulps(ap_log1p(-0x1p-40), log1pl(-0x1p-40L)) < 1.0);
	AP_CHECK(ulps(ap_log(0x1p-53), logl(0x1p-53L)) < 1.0);
	double lq = ap_log1p(-1.0 / 524288);
	AP_CHECK(ulps(-ap_expm1(lq), -expm1l((long double)lq)) < 1.0);
}
