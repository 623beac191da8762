/*
 * hist_merge_test.c: merging snapshots into histograms of the same, coarser
 * and finer precision, and re-bucketing. Finer-into-coarser must equal
 * recording directly at the coarser precision (buckets nest); coarser-into-
 * finer must keep count, sum, min and max exact, keep every count inside
 * [min, max], and split each bucket's count proportionally with integer
 * shares that add up exactly.
 */
#include <stdlib.h>

#include "allocprof/hist.h"
#include "aptest.h"

static uint64_t lcg = 12345;

static uint64_t next_value(void)
{
	lcg = lcg * 6364136223846793005u + 1442695040888963407u;
	/* spread over ~40 binary orders: shift a 64-bit draw by 0..40 */
	return (lcg >> 24) >> ((lcg >> 8) % 41);
}

static ap_hist_snap *record(unsigned sigbits, uint64_t seed, size_t n)
{
	ap_hist *h;
	ap_hist_snap *s = NULL;
	if (ap_hist_create(&h, sigbits, NULL))
		return NULL;
	lcg = seed;
	for (size_t i = 0; i < n; i++)
		ap_hist_add(h, next_value());
	if (ap_hist_snapshot(h, NULL, &s))
		s = NULL;
	ap_hist_destroy(h);
	return s;
}

AP_TEST(same_precision_merge_equals_recording_everything_in_one)
{
	ap_hist *h;
	ap_hist_snap *a = record(7, 1, 5000), *b = record(7, 2, 7000), *m = NULL;
	AP_CHECK(a && b);
	AP_CHECK_EQ_INT(ap_hist_create(&h, 7, NULL), 0);
	lcg = 1;
	for (int i = 0; i < 5000; i++)
		AP_CHECK_EQ_INT(ap_hist_add(h, next_value()), 0);
	lcg = 2;
	for (int i = 0; i < 7000; i++)
		AP_CHECK_EQ_INT(ap_hist_add(h, next_value()), 0);
	ap_hist_snap *direct;
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &direct), 0);
	ap_hist_destroy(h);
	AP_CHECK_EQ_INT(ap_hist_create(&h, 7, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_merge(h, a), 0);
	AP_CHECK_EQ_INT(ap_hist_merge(h, b), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &m), 0);
	AP_CHECK(ap_hist_snap_equal(m, direct));
	ap_hist_snap_destroy(a);
	ap_hist_snap_destroy(b);
	ap_hist_snap_destroy(m);
	ap_hist_snap_destroy(direct);
	ap_hist_destroy(h);
}

AP_TEST(finer_into_coarser_is_exact_for_every_pair_of_precisions)
{
	for (unsigned fine = 2; fine <= 15; fine += 3) {
		ap_hist_snap *f = record(fine, 99, 3000);
		AP_CHECK(f);
		for (unsigned coarse = 1; coarse <= fine; coarse++) {
			ap_hist_snap *direct = record(coarse, 99, 3000), *r = NULL;
			AP_CHECK(direct);
			AP_CHECK_EQ_INT(ap_hist_snap_rebucket(f, coarse, NULL, &r), 0);
			AP_CHECK_MSG(ap_hist_snap_equal(r, direct),
				     "%u -> %u differs", fine, coarse);
			ap_hist_snap_destroy(r);
			ap_hist_snap_destroy(direct);
		}
		ap_hist_snap_destroy(f);
	}
}

AP_TEST(coarser_into_finer_splits_proportionally_within_min_max)
{
	ap_hist *h;
	ap_hist_snap *s, *r;
	/* sigbits 1: [8, 11] is one bucket. Put 8 values at 8 and 11:
	 * min 8, max 11, so the split is even over 8, 9, 10, 11. */
	AP_CHECK_EQ_INT(ap_hist_create(&h, 1, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 8, 4), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 11, 4), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_bucket_count(s), 1);
	AP_CHECK_EQ_INT(ap_hist_snap_rebucket(s, 5, NULL, &r), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_bucket_count(r), 4);
	for (size_t i = 0; i < 4; i++) {
		ap_hist_bucket b;
		AP_CHECK_EQ_INT(ap_hist_snap_bucket(r, i, &b), 0);
		AP_CHECK(b.lo == 8 + i && b.hi == b.lo && b.count == 2);
	}
	AP_CHECK(ap_hist_snap_mean(r) == ap_hist_snap_mean(s));
	ap_hist_snap_destroy(r);
	ap_hist_snap_destroy(s);
	/* Clipping: only 9s in [8, 11] -> all counts land on 9. */
	ap_hist_reset(h);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 9, 7), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_INT(ap_hist_snap_rebucket(s, 9, NULL, &r), 0);
	ap_hist_bucket b;
	AP_CHECK_EQ_U64(ap_hist_snap_bucket_count(r), 1);
	AP_CHECK(!ap_hist_snap_bucket(r, 0, &b) && b.lo == 9 && b.count == 7);
	ap_hist_snap_destroy(r);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(coarser_into_finer_keeps_exact_totals_on_wide_data)
{
	ap_hist_snap *c = record(2, 7, 20000), *f = NULL;
	AP_CHECK(c);
	AP_CHECK_EQ_INT(ap_hist_snap_rebucket(c, 12, NULL, &f), 0);
	uint64_t a_hi, a_lo, b_hi, b_lo, mn1, mn2, mx1, mx2;
	AP_CHECK_EQ_U64(ap_hist_snap_count(f), ap_hist_snap_count(c));
	ap_hist_snap_sum(c, &a_hi, &a_lo);
	ap_hist_snap_sum(f, &b_hi, &b_lo);
	AP_CHECK(a_hi == b_hi && a_lo == b_lo);
	AP_CHECK(!ap_hist_snap_min(c, &mn1) && !ap_hist_snap_min(f, &mn2) &&
		 mn1 == mn2);
	AP_CHECK(!ap_hist_snap_max(c, &mx1) && !ap_hist_snap_max(f, &mx2) &&
		 mx1 == mx2);
	AP_CHECK(ap_hist_snap_stddev(c) == ap_hist_snap_stddev(f));
	ap_hist_bucket first, last;
	AP_CHECK_EQ_INT(ap_hist_snap_bucket(f, 0, &first), 0);
	AP_CHECK_EQ_INT(ap_hist_snap_bucket(
				f, ap_hist_snap_bucket_count(f) - 1, &last), 0);
	AP_CHECK(first.hi >= mn2 && last.lo <= mx2);
	/* Each coarse bucket's count is redistributed exactly: the finer
	 * buckets inside it add up to it. */
	for (size_t i = 0; i < ap_hist_snap_bucket_count(c); i++) {
		ap_hist_bucket cb, fb;
		uint64_t total = 0;
		AP_CHECK_EQ_INT(ap_hist_snap_bucket(c, i, &cb), 0);
		for (size_t j = 0; j < ap_hist_snap_bucket_count(f); j++) {
			AP_CHECK_EQ_INT(ap_hist_snap_bucket(f, j, &fb), 0);
			if (fb.lo >= cb.lo && fb.hi <= cb.hi)
				total += fb.count;
		}
		AP_CHECK_EQ_U64(total, cb.count);
	}
	ap_hist_snap_destroy(c);
	ap_hist_snap_destroy(f);
}

AP_TEST(merge_rejects_null_and_rebucket_rejects_bad_sigbits)
{
	ap_hist_snap *s = record(4, 3, 10), *r = NULL;
	AP_CHECK(s);
	AP_CHECK_EQ_INT(ap_hist_merge(NULL, s), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_snap_rebucket(s, 0, NULL, &r), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_snap_rebucket(s, 16, NULL, &r), AP_EINVAL);
	AP_CHECK(r == NULL);
	ap_hist_snap_destroy(s);
}
