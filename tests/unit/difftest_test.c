/*
 * difftest_test.c: the per-site diff tests and q-values of
 * allocprof/difftest.h on hand-checked values (reference p-values from
 * exact binomial sums and mpmath's incomplete beta). Calibration and power
 * are measured in tests/stats/diff_fdr_test.c.
 */
#include "aptest.h"

#include <math.h>
#include <string.h>

#include "allocprof/difftest.h"

AP_TEST(binomial_test_values)
{
	AP_CHECK_NEAR(ap_binom_test(5, 10, 0.5), 1, 1e-15, 0);
	AP_CHECK_NEAR(ap_binom_test(0, 10, 0.5), 2 * pow(0.5, 10), 1e-12, 0);
	AP_CHECK_NEAR(ap_binom_test(10, 10, 0.5), 2 * pow(0.5, 10), 1e-12, 0);
	/* P(X <= 3) = 176 / 1024 */
	AP_CHECK_NEAR(ap_binom_test(3, 10, 0.5), 2 * 176 / 1024.0, 1e-12, 0);
	/* Binomial(20, 0.8): P(X <= 10) = 0.00259482740067402 */
	AP_CHECK_NEAR(ap_binom_test(10, 20, 0.8), 0.00518965480134804, 1e-10, 0);
	AP_CHECK(isnan(ap_binom_test(11, 10, 0.5)));
	AP_CHECK(isnan(ap_binom_test(1, 10, 1)));
}

AP_TEST(benjamini_hochberg_qvalues)
{
	double p[4] = {0.01, 0.04, 0.03, 0.5}, q[4];
	AP_CHECK_EQ_INT(ap_diff_qvalues(p, 4, q, NULL), 0);
	AP_CHECK_NEAR(q[0], 0.04, 1e-15, 0);
	AP_CHECK_NEAR(q[1], 0.16 / 3, 1e-15, 0);
	AP_CHECK_NEAR(q[2], 0.16 / 3, 1e-15, 0);
	AP_CHECK_NEAR(q[3], 0.5, 1e-15, 0);
	/* In place. */
	AP_CHECK_EQ_INT(ap_diff_qvalues(p, 4, p, NULL), 0);
	AP_CHECK_NEAR(p[1], 0.16 / 3, 1e-15, 0);
	double bad[2] = {0.1, (double)NAN};
	AP_CHECK_EQ_INT(ap_diff_qvalues(bad, 2, q, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_diff_qvalues(NULL, 0, NULL, NULL), 0);

	ap_diff_result r[3] = {{.p = 0.001}, {.p = 0.02}, {.p = 0.9}};
	AP_CHECK_EQ_INT(ap_diff_fdr(r, 3, 0.05, NULL), 0);
	AP_CHECK(r[0].significant && r[1].significant && !r[2].significant);
	AP_CHECK_NEAR(r[1].q, 0.03, 1e-15, 0);
	AP_CHECK_EQ_INT(ap_diff_fdr(r, 3, 0, NULL), AP_EINVAL);
}

static ap_row small_row(uint64_t s, double rate)
{
	/* s samples of 64-byte objects: weight ~R, variance term ~R^2. */
	double pi = ap_prob_sampled(64, rate);
	ap_ht h = {0};
	for (uint64_t i = 0; i < s; i++)
		ap_ht_add(&h, 64, pi);
	ap_row r;
	ap_row_from_ht(&h, 32.0 * (double)s, rate, &r);
	return r;
}

AP_TEST(which_test_a_site_gets)
{
	ap_diff_result d;
	/* Both exact: the difference is the truth. */
	ap_row e1 = {.samples = 3, .exact_samples = 3, .bytes = 300, .rate = 1},
	       e2 = e1;
	AP_CHECK_EQ_INT(ap_diff_test(&e1, &e2, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_EXACT && d.p == 1 && d.lo == 0);
	e2.bytes = 301;
	AP_CHECK_EQ_INT(ap_diff_test(&e1, &e2, 0.95, &d), 0);
	AP_CHECK(d.p == 0 && d.significant);

	/* Neither sampled. */
	ap_row z = {.rate = 4096};
	AP_CHECK_EQ_INT(ap_diff_test(&z, &z, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_NONE && d.p == 1 && !d.significant);
	AP_CHECK(!strcmp(ap_diff_method_name(d.method), "none sampled"));

	/* Small objects, different rates: 10 samples at R = 4096 and 10 at
	 * R = 1024. With no change NEW would hold 4096/5120 = 0.8 of the
	 * samples; 10 of 20 gives p = 0.0052 (Binomial(20, 0.8)). */
	ap_row b = small_row(10, 4096), n = small_row(10, 1024);
	AP_CHECK_EQ_INT(ap_diff_test(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_CONDITIONAL);
	AP_CHECK_NEAR(d.p, 0.00518965480134804, 1e-10, 0);
	AP_CHECK(d.significant && d.hi < 0 && d.lo < d.change);
	/* A side without samples against a few. */
	ap_row n0 = {.rate = 4096};
	b = small_row(3, 4096);
	AP_CHECK_EQ_INT(ap_diff_test(&b, &n0, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_CONDITIONAL);
	AP_CHECK_NEAR(d.p, 2 * pow(0.5, 3), 1e-12, 0);
	AP_CHECK(d.lo < d.change && d.hi > 0);

	/* Many samples on both sides: Wald. */
	b = small_row(400, 4096);
	n = small_row(400, 4096);
	n.bytes *= 1.2;
	AP_CHECK_EQ_INT(ap_diff_test(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_WALD);
	double z2 = d.change / sqrt(b.var_bytes + n.var_bytes);
	AP_CHECK_NEAR(d.p, 2 * ap_normal_cdf(-z2), 1e-12, 0);

	/* Near-certain large objects beside a few small ones: the split test;
	 * identical rows give p = 1, a 2 MiB jump in the certain part (a
	 * certain change, sd of the rest ~ R) p ~ 0. */
	ap_ht h = {0};
	for (int i = 0; i < 20; i++)
		ap_ht_add(&h, 65536, ap_prob_sampled(65536, 4096));
	for (int i = 0; i < 2; i++)
		ap_ht_add(&h, 64, ap_prob_sampled(64, 4096));
	ap_row_from_ht(&h, 20 * 61440.0 + 64, 4096, &b);
	n = b;
	AP_CHECK_EQ_INT(ap_diff_test(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_SPLIT && d.p == 1);
	n.bytes += 2097152;
	AP_CHECK_EQ_INT(ap_diff_test(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_SPLIT && d.p < 1e-6 && d.lo > 0);
	/* ... while one more small-object event (weight ~R) is no evidence. */
	n.bytes = b.bytes + 4096;
	AP_CHECK_EQ_INT(ap_diff_test(&b, &n, 0.95, &d), 0);
	AP_CHECK(d.p > 0.3);

	AP_CHECK_EQ_INT(ap_diff_test(&b, &n, 1, &d), AP_EINVAL);
	AP_CHECK(isnan(d.p));
	AP_CHECK_EQ_INT(ap_diff_test(NULL, &n, 0.95, &d), AP_EINVAL);
}

AP_TEST(welch_over_replicated_runs)
{
	ap_row b[3] = {{.bytes = 100}, {.bytes = 110}, {.bytes = 90}};
	ap_row n[3] = {{.bytes = 130}, {.bytes = 140}, {.bytes = 120}};
	ap_diff_result d;
	AP_CHECK_EQ_INT(ap_diff_test_runs(b, 3, n, 3, 0.95, &d), 0);
	/* t = 30 / sqrt(100/3 + 100/3) = 3.674, df = 4: p from mpmath's
	 * I_{4/(4+t^2)}(2, 1/2). */
	AP_CHECK(d.method == AP_DIFF_WELCH);
	AP_CHECK_NEAR(d.df, 4, 1e-12, 0);
	AP_CHECK_NEAR(d.p, 0.0213116411287567, 1e-9, 0);
	/* t_{4, 0.975} = 2.776445 */
	AP_CHECK_NEAR(d.hi - d.change, 2.776445 * sqrt(200 / 3.0), 1e-6, 0);
	/* One run on a side: its HT variance, infinite degrees of freedom
	 * for it; Welch-Satterthwaite then gives df = 2 (the other side's). */
	ap_row single = {.samples = 200, .bytes = 100, .var_bytes = 100 / 3.0,
			 .var2_bytes = 1, .objects = 1, .rate = 1e6};
	AP_CHECK_EQ_INT(ap_diff_test_runs(&single, 1, n, 3, 0.95, &d), 0);
	AP_CHECK_NEAR(d.df, 2 * pow(200 / 3.0, 2) / pow(100 / 3.0, 2), 1e-9, 0);
	AP_CHECK_EQ_INT(ap_diff_test_runs(b, 0, n, 3, 0.95, &d), AP_EINVAL);
	/* One run each: the single-run test. */
	ap_row one_b = {.samples = 1, .exact_samples = 1, .bytes = 1, .rate = 1};
	ap_row one_n = one_b;
	AP_CHECK_EQ_INT(ap_diff_test_runs(&one_b, 1, &one_n, 1, 0.95, &d), 0);
	AP_CHECK(d.method == AP_DIFF_EXACT);
}
