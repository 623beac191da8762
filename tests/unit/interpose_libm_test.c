/*
 * interpose_libm_test.c: the math functions the runtime defines for its own
 * code instead of linking libm (src/preload/interpose_libm.c), against
 * libm's. The file is compiled here with every function renamed (t_round
 * for round, ...), so both sets live in one program.
 *
 * Expected: the computed ones (sqrt, sqrtl, ceil, round, llround, fmin,
 * fmax) are exact operations, so they must equal libm's bit for bit,
 * signed zeros included, on every point; log, log1p and expm1 are
 * apmath's (within 1 ulp, tests/unit/apmath_test.c), so here only that
 * they are wired to it; the forwarded ones (exp, log2, cbrt, erfc,
 * lgamma_r, ldexp) must return exactly libm's results, since they call it.
 */
#define _GNU_SOURCE /* lgamma_r */
#include "aptest.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "allocprof/prng.h"
#include "apmath.h"

#define log t_log
#define log1p t_log1p
#define expm1 t_expm1
#define sqrt t_sqrt
#define sqrtl t_sqrtl
#define fmin t_fmin
#define fmax t_fmax
#define ceil t_ceil
#define round t_round
#define llround t_llround
#define exp t_exp
#define log2 t_log2
#define cbrt t_cbrt
#define erfc t_erfc
#define lgamma_r t_lgamma_r
#define ldexp t_ldexp
#include "../../src/preload/interpose_libm.c"
#undef log
#undef log1p
#undef expm1
#undef sqrt
#undef sqrtl
#undef fmin
#undef fmax
#undef ceil
#undef round
#undef llround
#undef exp
#undef log2
#undef cbrt
#undef erfc
#undef lgamma_r
#undef ldexp

/* Bit-for-bit equality (NaN equal to NaN). */
static bool same(double a, double b)
{
	if (a != a && b != b)
		return true;
	uint64_t x, y;
	memcpy(&x, &a, sizeof x);
	memcpy(&y, &b, sizeof y);
	return x == y;
}

/* A spread of doubles: halves and near-halves, tiny, huge, both signs. */
static double point(ap_prng *g, int i)
{
	uint64_t r = ap_prng_next(g);
	double x;
	switch (i % 5) {
	case 0:
		memcpy(&x, &r, sizeof x); /* any double, NaN and inf included */
		/* NaNs made quiet: libm's fmin and fmax follow IEEE minNum
		 * for a signaling NaN, which no computation ever produces */
		return x != x ? (double)NAN : x;
	case 1:
		return (double)(int64_t)(r >> 40) / 2 - 4000; /* k / 2 */
	case 2:
		return nextafter((double)(int64_t)(r >> 44) + 0.5,
				 r & 1 ? HUGE_VAL : -HUGE_VAL); /* just off .5 */
	case 3:
		return ((double)(r >> 11) * 0x1p-53 - 0.5) * 8;
	default:
		return ldexp((double)(r >> 11) * 0x1p-53, (int)(r % 120) - 60) *
		       (r & 1 ? 1 : -1);
	}
}

AP_TEST(computed_functions_equal_libm_bit_for_bit)
{
	ap_prng g;
	AP_CHECK_EQ_INT(ap_prng_seed(&g, 77), 0);
	const double fixed[] = {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
				0.49999999999999994, -0.49999999999999994,
				0x1p52, -0x1p52, 0x1p52 + 1, 0x1p63, -0x1p63,
				0x1p64, 1e300, -1e300, HUGE_VAL, -HUGE_VAL,
				(double)NAN, 4.9e-324, -4.9e-324, 1.0, -1.0};
	size_t nfixed = sizeof fixed / sizeof *fixed;
	AP_CHECK(isnan(t_sqrt(-1.0)));
	for (size_t i = 0; i < 400000 + nfixed; i++) {
		double x = i < nfixed ? fixed[i] : point(&g, (int)i);
		double y = i < nfixed ? fixed[nfixed - 1 - i] : point(&g, (int)i + 1);
		AP_CHECK_MSG(same(t_ceil(x), ceil(x)), "ceil(%a): %a, libm %a", x, t_ceil(x), ceil(x));
		AP_CHECK_MSG(same(t_round(x), round(x)), "round(%a): %a, libm %a", x, t_round(x), round(x));
		if (fabs(x) < 0x1p62) /* in range: C leaves the rest unspecified */
			AP_CHECK_MSG(t_llround(x) == llround(x), "llround(%a)", x);
		if (x >= 0 || x != x)
			AP_CHECK_MSG(same(t_sqrt(x), sqrt(x)), "sqrt(%a)", x);
		long double lx = (long double)fabs(x);
		AP_CHECK_MSG(t_sqrtl(lx) == sqrtl(lx) || (isnan(x) && isnan(t_sqrtl(lx))),
			     "sqrtl(%a)", fabs(x));
		if (!(x == 0 && y == 0)) { /* fmin(+0, -0) may be either */
			AP_CHECK_MSG(same(t_fmin(x, y), fmin(x, y)), "fmin(%a, %a)", x, y);
			AP_CHECK_MSG(same(t_fmax(x, y), fmax(x, y)), "fmax(%a, %a)", x, y);
		}
	}
}

AP_TEST(log_functions_are_apmath_and_the_rest_is_libm)
{
	const double xs[] = {1e-300, 0.001, 0.3, 1.0, 2.5, 17.0, 700.0, -0.7, -30.0};
	for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
		double x = xs[i];
		AP_CHECK(same(t_log(x), ap_log(x)));
		AP_CHECK(same(t_log1p(x), ap_log1p(x)));
		AP_CHECK(same(t_expm1(x), ap_expm1(x)));
		AP_CHECK(same(t_exp(x), exp(x)));
		AP_CHECK(same(t_log2(x), log2(x)));
		AP_CHECK(same(t_cbrt(x), cbrt(x)));
		AP_CHECK(same(t_erfc(x), erfc(x)));
		int s1 = 0, s2 = 0;
		AP_CHECK(same(t_lgamma_r(x, &s1), lgamma_r(x, &s2)) && s1 == s2);
		AP_CHECK(same(t_ldexp(x, -7), ldexp(x, -7)));
	}
}
