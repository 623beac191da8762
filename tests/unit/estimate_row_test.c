/*
 * estimate_row_test.c: the row rule of src/lib/estimate_row.c (issue 12,
 * items 3, 4 and 6): per-sample terms, the effective sample size, which
 * interval a row gets, the zero-sample bounds, "exact", rounding helpers.
 * Coverage is measured in tests/stats/row_interval_test.c; here the
 * numbers and the choices.
 */
#include "aptest.h"

#include <math.h>
#include <string.h>

#include "allocprof/estimate.h"

#define R 524288.0

AP_TEST(sample_terms_are_the_ht_sums_of_one_sample)
{
	ap_sample_terms t;
	AP_CHECK_EQ_INT(ap_sample_terms_of(10, 0.5, &t), 0);
	AP_CHECK_NEAR(t.objects, 2, 1e-15, 0);
	AP_CHECK_NEAR(t.bytes, 20, 1e-15, 0);
	AP_CHECK_NEAR(t.var_objects, 2, 1e-15, 0);
	AP_CHECK_NEAR(t.var_bytes, 200, 1e-15, 0);
	AP_CHECK_NEAR(t.var2_objects, 4, 1e-15, 0);
	AP_CHECK_NEAR(t.var2_bytes, 40000, 1e-15, 0);
	AP_CHECK_EQ_U64(t.exact, 0);
	AP_CHECK_EQ_INT(ap_sample_terms_of(10, 1, &t), 0);
	AP_CHECK_EQ_U64(t.exact, 1);
	AP_CHECK(t.var_bytes == 0);
	AP_CHECK_EQ_INT(ap_sample_terms_of(10, 0, &t), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_sample_terms_of(-1, 0.5, &t), AP_EINVAL);
	AP_CHECK(t.bytes == 0);
	/* ap_ht_add keeps the same sums. */
	ap_ht h = {0};
	ap_ht_add(&h, 10, 0.5);
	ap_ht_add(&h, 10, 1);
	AP_CHECK_NEAR(h.var2_bytes, 40000, 1e-15, 0);
	AP_CHECK_NEAR(h.var2_objects, 4, 1e-15, 0);
	AP_CHECK_EQ_U64(h.exact_samples, 1);
	ap_ht m = {0};
	ap_ht_merge(&m, &h);
	ap_ht_merge(&m, &h);
	AP_CHECK_NEAR(m.var2_bytes, 80000, 1e-15, 0);
	AP_CHECK_EQ_U64(m.exact_samples, 2);
}

AP_TEST(var2_fixed_point_round_trips_and_stays_within_int64)
{
	/* The largest per-sample term is below R^2 (docs/STATISTICS.md):
	 * stored at most 2^32 per sample. */
	ap_sample_terms t;
	AP_CHECK_EQ_INT(ap_sample_terms_of(1, ap_prob_sampled(1, R), &t), 0);
	double enc = ap_var2_encode(t.var2_objects, R);
	AP_CHECK(enc <= AP_VAR2_SCALE && enc > 0.99 * AP_VAR2_SCALE);
	AP_CHECK_NEAR(ap_var2_decode(enc, R), t.var2_objects, 1e-14, 0);
	AP_CHECK(isnan(ap_var2_encode(1, 0.5)));
}

AP_TEST(effective_sample_size)
{
	AP_CHECK_NEAR(ap_ess(5 * 3.0, 5 * 9.0), 5, 1e-14, 0);
	/* One dominant term: about one. */
	AP_CHECK_NEAR(ap_ess(100 + 1e-6 * 110, 1e4 + 1e-12 * 110), 1, 1e-5, 0);
	AP_CHECK(ap_ess(0, 0) == 0);
	AP_CHECK(isnan(ap_ess(1, 0)));
	AP_CHECK(isnan(ap_ess(-1, 1)));
}

AP_TEST(exact_means_every_sample_certain)
{
	AP_CHECK(!ap_row_is_exact(0, 0));
	AP_CHECK(ap_row_is_exact(3, 3));
	AP_CHECK(!ap_row_is_exact(3, 2));
	/*
	 * Five objects of 2 R: variance term e^-2 / (1 - e^-2)^2 = 0.18 each,
	 * which the old writer rounded to 0, and the report then printed a
	 * point "exact". They are not exact: the interval has width and the
	 * method says so.
	 */
	double pi = ap_prob_sampled((uint64_t)(2 * R), R);
	ap_ht h = {0};
	for (int i = 0; i < 5; i++)
		ap_ht_add(&h, 2 * R, pi);
	ap_row row;
	ap_row_from_ht(&h, 5 * 1.5 * R, R, &row);
	row.var_objects = 0; /* as the old writer stored it */
	ap_interval iv;
	ap_ci_method m;
	AP_CHECK_EQ_INT(ap_row_objects_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m != AP_CI_EXACT);
	AP_CHECK(iv.hi > iv.estimate + 1);
	/* The legacy function calls it exact. */
	AP_CHECK_EQ_INT(ap_objects_interval(5, h.objects, 0, 0.95, &iv), 0);
	AP_CHECK(iv.lo == iv.hi);
}

AP_TEST(zero_samples_one_bound_everywhere)
{
	double b, o;
	AP_CHECK_EQ_INT(ap_zero_sample_bound(R, 0.95, 64, &b, &o), 0);
	/* (1 - 1/R)^b = 0.05: the most bytes that leave no sample 5% of the
	 * time; ~2.996 R, not 0 (report), 3.69 R (metrics) or 4.37 R (diff). */
	AP_CHECK_NEAR(pow(1 - 1 / R, b), 0.05, 1e-9, 0);
	AP_CHECK_NEAR(b / R, -log(0.05), 1e-5, 0);
	AP_CHECK_NEAR(o, b / 64, 1e-15, 0);
	AP_CHECK_EQ_INT(ap_zero_sample_bound(R, 0.95, 0, &b, &o), 0);
	AP_CHECK(isinf(o) && o > 0);
	AP_CHECK_EQ_INT(ap_zero_sample_bound(1, 0.95, 0, &b, &o), 0);
	AP_CHECK(b == 0 && o == 0);
	AP_CHECK_EQ_INT(ap_zero_sample_bound(0.5, 0.95, 0, &b, &o), AP_EINVAL);
	AP_CHECK(isnan(b) && isnan(o));
	AP_CHECK_EQ_INT(ap_zero_sample_bound(R, 1, 0, &b, &o), AP_EINVAL);

	/* Rows use the same bound, from the coarsest rate of a mixed view. */
	double rates[3] = {4096, 65536, 1024};
	AP_CHECK(ap_coarsest_rate(rates, 3) == 65536);
	rates[1] = 0;
	AP_CHECK(ap_coarsest_rate(rates, 3) == 0);
	ap_row row = {.rate = 0, .rate_max = 65536, .z_min = 16};
	ap_interval iv;
	ap_ci_method m = AP_CI_NORMAL;
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_NONE && iv.lo == 0);
	AP_CHECK_NEAR(iv.hi, log(0.05) / log1p(-1 / 65536.0), 1e-15, 0);
	AP_CHECK_EQ_INT(ap_row_objects_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK_NEAR(iv.hi, log(0.05) / log1p(-1 / 65536.0) / 16, 1e-15, 0);
	row.z_min = 0;
	AP_CHECK_EQ_INT(ap_row_objects_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(isinf(iv.hi));
	AP_CHECK(!strcmp(ap_ci_method_name(m), "none sampled"));
}

/* The mix, one replay's sums: 110 x 16 MiB, one 64 B sample. */
static void mix_row(ap_row *row, ap_ht *h)
{
	*h = (ap_ht){0};
	double big = 16.0 * 1048576;
	for (int i = 0; i < 110; i++)
		ap_ht_add(h, big, ap_prob_sampled((uint64_t)big, R));
	ap_ht_add(h, 64, ap_prob_sampled(64, R));
	ap_row_from_ht(h, 110 * (big - R) + 32, R, row);
}

AP_TEST(which_interval_a_row_gets)
{
	ap_row row;
	ap_ht h;
	ap_interval iv, legacy;
	ap_ci_method m;
	mix_row(&row, &h);
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_SPLIT);
	/* The small part is one event of weight ~R: the interval spans a few
	 * R around it, while the legacy rule (111 samples: normal) gives
	 * about +-2 R. */
	AP_CHECK(iv.hi - iv.estimate > 3 * R);
	bool nb;
	AP_CHECK_EQ_INT(ap_bytes_interval(h.samples, row.u, R, h.bytes,
					  h.var_bytes, 0.95, &legacy, &nb), 0);
	AP_CHECK(!nb && legacy.hi - legacy.estimate < 2.1 * R);

	/* All small objects, 50 samples: the NB interval, as before. */
	ap_ht s = {0};
	for (int i = 0; i < 50; i++)
		ap_ht_add(&s, 64, ap_prob_sampled(64, R));
	ap_row_from_ht(&s, 50 * 32, R, &row);
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_NB);
	AP_CHECK_EQ_INT(ap_bytes_interval(50, 50 * 32, R, s.bytes, s.var_bytes,
					  0.95, &legacy, &nb), 0);
	AP_CHECK(iv.lo == legacy.lo && iv.hi == legacy.hi);
	/* 200: normal. */
	for (int i = 0; i < 150; i++)
		ap_ht_add(&s, 64, ap_prob_sampled(64, R));
	ap_row_from_ht(&s, 200 * 32, R, &row);
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_NORMAL);
	AP_CHECK_EQ_INT(ap_row_objects_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_NORMAL);
	/* Without the squared sums (an older profile) ESS = samples. */
	row.var2_bytes = row.var2_objects = 0;
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_NORMAL);
	/* Several rates: no NB (one p), split instead. */
	ap_row_from_ht(&s, 200 * 32, R, &row);
	row.var_bytes = 0.3 * 200 * R * R;
	row.rate = 0;
	row.rate_max = R;
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_SPLIT);
	/* Every sample exact: the point. */
	row = (ap_row){.samples = 4, .exact_samples = 4, .bytes = 4e6,
		       .objects = 4, .rate = R};
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK(m == AP_CI_EXACT && iv.lo == 4e6 && iv.hi == 4e6);
	AP_CHECK(!strcmp(ap_ci_method_name(AP_CI_SPLIT), "split"));
}

AP_TEST(row_errors)
{
	ap_row row = {.samples = 2, .bytes = 1e6, .var_bytes = 1e12,
		      .objects = 2, .var_objects = 1, .rate = R};
	ap_interval iv;
	ap_ci_method m;
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), 0);
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 1.5, &iv, &m), AP_EINVAL);
	AP_CHECK(isnan(iv.lo));
	AP_CHECK_EQ_INT(ap_row_bytes_interval(NULL, 0.95, &iv, &m), AP_EINVAL);
	row.bytes = (double)NAN;
	AP_CHECK_EQ_INT(ap_row_objects_interval(&row, 0.95, &iv, &m), AP_EINVAL);
	row.bytes = 1e6;
	row.rate = 0; /* several rates but no coarsest one given */
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), AP_EINVAL);
	row.rate = R;
	row.exact_samples = 3;
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &iv, &m), AP_EINVAL);
}

AP_TEST(unbiased_rounding_edges)
{
	AP_CHECK(ap_round_unbiased(5, 123) == 5);
	AP_CHECK(ap_round_unbiased(-2.5, 1) == -3 || ap_round_unbiased(-2.5, 1) == -2);
	AP_CHECK(ap_round_unbiased((double)NAN, 1) == 0);
	AP_CHECK(ap_round_unbiased(1e30, 1) == INT64_MAX);
	AP_CHECK(ap_round_unbiased(-1e30, 1) == INT64_MIN);
	uint64_t a[2] = {1, 2}, b[2] = {2, 1};
	AP_CHECK(ap_round_key(a, 2, 0) != ap_round_key(b, 2, 0));
	AP_CHECK(ap_round_key(a, 2, 0) != ap_round_key(a, 2, 1));
	AP_CHECK(ap_round_key(a, 2, 0) == ap_round_key(a, 2, 0));
}
