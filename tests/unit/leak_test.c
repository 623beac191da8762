/*
 * leak_test.c: the leak trend of allocprof/leak.h against values computed
 * by hand, the Student t functions against tables, plateaus, too-short
 * series, Benjamini-Hochberg and bad input.
 */
#include "aptest.h"

#include <math.h>

#include "allocprof/leak.h"

AP_TEST(student_t_table)
{
	/* Standard tables: t_{0.975} at 1 and 10 df, t_{0.95} at 5 df. */
	AP_CHECK_NEAR(ap_student_quantile(0.975, 1), 12.706204736, 1e-8, 0);
	AP_CHECK_NEAR(ap_student_quantile(0.975, 10), 2.228138852, 1e-8, 0);
	AP_CHECK_NEAR(ap_student_quantile(0.05, 5), -2.015048373, 1e-8, 0);
	/* 1 df is Cauchy: P(T > 1) = 1/4. */
	AP_CHECK_NEAR(ap_student_sf(1, 1), 0.25, 1e-12, 0);
	AP_CHECK_NEAR(ap_student_sf(0, 7), 0.5, 1e-12, 0);
	AP_CHECK(isnan(ap_student_sf(1, 0)));
	AP_CHECK(isnan(ap_student_quantile(1, 3)));
}

/*
 * Points at t = 0..4; the later half starts at the last point at or before
 * t = 2. Increments 10, 10: no empirical spread, so the floor
 * |var_4 - var_2| / 2^2 = 0.5 sets the variance; 1 degree of freedom.
 */
AP_TEST(trend_by_hand)
{
	ap_leak_point p[5] = {{0, 0, 0}, {1, 0, 0}, {2, 10, 1}, {3, 20, 2},
			      {4, 30, 3}};
	ap_leak_result r;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 5, 0.95, &r), 0);
	AP_CHECK_EQ_U64(r.points, 3);
	AP_CHECK_NEAR(r.rate, 10, 1e-15, 0);
	double se = sqrt(0.5);
	AP_CHECK_NEAR(r.rate_hi, 10 + 12.706204736 * se, 1e-8, 0);
	AP_CHECK_NEAR(r.p, ap_student_sf(10 / se, 1), 1e-12, 0);
	AP_CHECK_NEAR(r.q, r.p, 0, 0);
	/* Uneven increments 4 and 16 over 1 s each: rate 10, sigma^2 per
	 * second = (36 + 36) / 1 df, Var(rate) = 72 / 2. */
	p[3].bytes = 14;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 5, 0.95, &r), 0);
	AP_CHECK_NEAR(r.rate, 10, 1e-15, 0);
	AP_CHECK_NEAR(r.p, ap_student_sf(10 / 6.0, 1), 1e-12, 0);
}

/* Grew then stopped: the later half is flat, no evidence of growth. */
AP_TEST(plateau_is_not_growth)
{
	ap_leak_point p[10];
	for (int i = 0; i < 10; i++)
		p[i] = (ap_leak_point){i, i < 4 ? 100.0 * i : 300, 50};
	ap_leak_result r;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 10, 0.95, &r), 0);
	AP_CHECK_NEAR(r.rate, 0, 0, 0);
	AP_CHECK_NEAR(r.p, 1, 0, 0);
}

AP_TEST(too_short)
{
	ap_leak_point p[3] = {{0, 0, 0}, {1, 5, 1}, {2, 10, 2}};
	ap_leak_result r;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 3, 0.95, &r), 0);
	AP_CHECK_EQ_U64(r.points, 0);
	AP_CHECK_NEAR(r.p, 1, 0, 0);
	AP_CHECK(isinf(r.rate_hi));
	AP_CHECK_EQ_INT(ap_leak_trend(NULL, 0, 0.95, &r), 0);
}

AP_TEST(fdr_across_sites)
{
	ap_leak_point grow[6], flat[6];
	for (int i = 0; i < 6; i++) {
		grow[i] = (ap_leak_point){i, 1000.0 * i + (i % 2) * 10, i};
		flat[i] = (ap_leak_point){i, 500 + (i % 2) * 10, 1};
	}
	ap_leak_series s[2] = {{grow, 6}, {flat, 6}};
	ap_leak_result r[2];
	AP_CHECK_EQ_INT(ap_leak_fdr(s, 2, 0.95, 0.05, NULL, r), 0);
	AP_CHECK(r[0].leak && !r[1].leak);
	AP_CHECK(r[0].q >= r[0].p && r[0].q <= 2 * r[0].p);
	AP_CHECK(r[0].rate_lo > 0);
}

AP_TEST(bad_input)
{
	ap_leak_point p[4] = {{0, 0, 0}, {1, 5, 1}, {1, 10, 2}, {3, 1, 1}};
	ap_leak_result r;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 4, 0.95, &r), AP_EINVAL);
	AP_CHECK(isnan(r.rate));
	p[2].t_s = 2;
	p[1].var = -1;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 4, 0.95, &r), AP_EINVAL);
	p[1].var = 1;
	p[3].bytes = (double)NAN;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 4, 0.95, &r), AP_EINVAL);
	p[3].bytes = 1;
	AP_CHECK_EQ_INT(ap_leak_trend(p, 4, 0, &r), AP_EINVAL);
	ap_leak_series s = {p, 4};
	AP_CHECK_EQ_INT(ap_leak_fdr(&s, 1, 0.95, 1, NULL, &r), AP_EINVAL);
}
