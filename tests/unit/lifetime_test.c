/*
 * lifetime_test.c: the weighted Kaplan-Meier of allocprof/lifetime.h
 * against curves and variances computed by hand, the quantile rules, the
 * short-lived bytes rate and bad input.
 */
#include "aptest.h"

#include <math.h>

#include "allocprof/lifetime.h"

/* Four unit-weight blocks freed at 1, 3, 4, one censored at 2. */
AP_TEST(km_unweighted_by_hand)
{
	ap_life_obs o[4] = {{1, 1, 8, false}, {2, 1, 8, true},
			    {3, 1, 8, false}, {4, 1, 8, false}};
	double s, se;
	AP_CHECK_EQ_INT(ap_life_survival(o, 4, 1, NULL, &s, &se), 0);
	/* S(1) = 3/4; the hazard's influence variance d (Y - d) / Y^3 =
	 * 3/64 (one event z = 1/4 - 1/16, three at risk z = -1/16). */
	AP_CHECK_NEAR(s, 0.75, 1e-15, 0);
	AP_CHECK_NEAR(se, 0.75 * sqrt(3.0 / 64), 1e-14, 0);
	/* Censoring at 2 changes neither. */
	AP_CHECK_EQ_INT(ap_life_survival(o, 4, 2.5, NULL, &s, &se), 0);
	AP_CHECK_NEAR(s, 0.75, 1e-15, 0);
	AP_CHECK_NEAR(se, 0.75 * sqrt(3.0 / 64), 1e-14, 0);
	/* t = 3: risk set {3, 4}, S = 3/4 * 1/2. */
	AP_CHECK_EQ_INT(ap_life_survival(o, 4, 3, NULL, &s, &se), 0);
	AP_CHECK_NEAR(s, 0.375, 1e-15, 0);
	/* Var of the hazard at 3: H = 1/16 + 1/4. Blocks: freed at 1:
	 * (1/4 - 1/16)^2; censored at 2: (1/16)^2; freed at 3:
	 * (1/2 - 5/16)^2; at risk (4): (5/16)^2. */
	double v = pow(3.0 / 16, 2) + pow(1.0 / 16, 2) + pow(3.0 / 16, 2) +
		   pow(5.0 / 16, 2);
	AP_CHECK_NEAR(se, 0.375 * sqrt(v), 1e-14, 0);
	ap_life_summary sum;
	AP_CHECK_EQ_INT(ap_life_km(o, 4, 0.95, NULL, &sum), 0);
	AP_CHECK_NEAR(sum.median.estimate, 3, 0, 0);
	AP_CHECK_NEAR(sum.q25.estimate, 1, 0, 0);
	AP_CHECK_NEAR(sum.q75.estimate, 4, 0, 0);
	AP_CHECK_EQ_U64(sum.samples, 4);
	AP_CHECK_EQ_U64(sum.censored, 1);
	AP_CHECK_NEAR(sum.freed_fraction, 1, 0, 0);
}

/* Weights enter the risk sets: (1, w2) (2c, w1) (3, w1) (4, w2). */
AP_TEST(km_weighted_by_hand)
{
	ap_life_obs o[4] = {{4, 2, 8, false}, {2, 1, 8, true},
			    {3, 1, 8, false}, {1, 2, 8, false}};
	double s, se;
	AP_CHECK_EQ_INT(ap_life_survival(o, 4, 1, NULL, &s, &se), 0);
	AP_CHECK_NEAR(s, 4.0 / 6, 1e-15, 0);
	AP_CHECK_EQ_INT(ap_life_survival(o, 4, 3, NULL, &s, &se), 0);
	AP_CHECK_NEAR(s, 4.0 / 9, 1e-15, 0); /* 2/3 * (1 - 1/3) */
	AP_CHECK_EQ_INT(ap_life_survival(o, 4, 4, NULL, &s, &se), 0);
	AP_CHECK_NEAR(s, 0, 0, 0);
	ap_life_summary sum;
	AP_CHECK_EQ_INT(ap_life_km(o, 4, 0.95, NULL, &sum), 0);
	AP_CHECK_NEAR(sum.median.estimate, 3, 0, 0);
	AP_CHECK_NEAR(sum.objects, 6, 0, 0);
}

/*
 * Doubling every weight (each sample stands for twice the objects) leaves
 * S and its standard error unchanged: the information is in the samples.
 */
AP_TEST(km_scale_invariant)
{
	ap_life_obs o[6], o2[6];
	for (int i = 0; i < 6; i++) {
		o[i] = (ap_life_obs){(double)(i * 7 % 5 + 1), 1 + i % 3, 8,
				     i == 2};
		o2[i] = o[i];
		o2[i].weight *= 2;
	}
	for (double t = 0; t < 6; t += 0.5) {
		double s, se, s2, se2;
		AP_CHECK_EQ_INT(ap_life_survival(o, 6, t, NULL, &s, &se), 0);
		AP_CHECK_EQ_INT(ap_life_survival(o2, 6, t, NULL, &s2, &se2), 0);
		AP_CHECK_NEAR(s2, s, 1e-14, 1e-15);
		AP_CHECK_NEAR(se2, se, 1e-12, 1e-15);
	}
}

/* Blocks alive until exit: every observation censored, no quantile. */
AP_TEST(km_all_censored_not_reached)
{
	ap_life_obs o[3] = {{5, 3, 8, true}, {6, 3, 8, true}, {7, 3, 8, true}};
	ap_life_summary sum;
	AP_CHECK_EQ_INT(ap_life_km(o, 3, 0.95, NULL, &sum), 0);
	AP_CHECK(isinf(sum.median.estimate) && isinf(sum.median.hi));
	/* Nothing was freed by age 7: the median is at least that. */
	AP_CHECK_NEAR(sum.median.lo, 7, 0, 0);
	AP_CHECK_NEAR(sum.freed_fraction, 0, 0, 0);
	AP_CHECK_EQ_U64(sum.censored, 3);
}

AP_TEST(km_bad_input)
{
	ap_life_obs o[2] = {{1, 1, 8, false}, {2, 0.5, 8, false}};
	ap_life_summary sum;
	AP_CHECK_EQ_INT(ap_life_km(o, 2, 0.95, NULL, &sum), AP_EINVAL);
	AP_CHECK(isnan(sum.median.estimate));
	o[1].weight = 1;
	o[1].lifetime_ns = (double)NAN;
	AP_CHECK_EQ_INT(ap_life_km(o, 2, 0.95, NULL, &sum), AP_EINVAL);
	o[1].lifetime_ns = 2;
	AP_CHECK_EQ_INT(ap_life_km(o, 2, 1.0, NULL, &sum), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_life_km(NULL, 2, 0.95, NULL, &sum), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_life_km(NULL, 0, 0.95, NULL, &sum), 0);
	AP_CHECK_EQ_U64(sum.samples, 0);
}

/* Short-lived bytes: only freed blocks within the threshold count. */
AP_TEST(short_rate_by_hand)
{
	ap_life_obs o[4] = {{1e6, 4, 100, false},  /* 400 bytes, var 4*3*1e4 */
			    {2e6, 1, 50, false},   /* 50 bytes, exact */
			    {5e6, 2, 100, false},  /* too old */
			    {1e5, 2, 100, true}};  /* still alive */
	ap_interval iv;
	AP_CHECK_EQ_INT(ap_life_short_rate(o, 4, 2e6, 2, 0.95, &iv), 0);
	AP_CHECK_NEAR(iv.estimate, 225, 1e-14, 0);
	double sd = sqrt(4.0 * 3 * 1e4) / 2;
	AP_CHECK_NEAR(iv.hi, 225 + ap_normal_quantile(0.975) * sd, 1e-9, 0);
	AP_CHECK_EQ_INT(ap_life_short_rate(o, 4, 2e6, 0, 0.95, &iv),
			AP_EINVAL);
}
