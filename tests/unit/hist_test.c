/*
 * hist_test.c: recording into ap_hist and its recorders: exact count, sum,
 * sum of squares, min and max; weighted recording; lazy memory; allocation
 * failures; reset; the standard deviation against exact moments.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist.h"
#include "aptest.h"

/* The default header is opaque: the recorder's layout is published only by
 * the opt-in allocprof/hist_inline.h. */
#if defined(AP_HIST_INLINE_RECORD) || defined(ALLOCPROF_HIST_INLINE_H)
#error "allocprof/hist.h publishes the recorder layout"
#endif

/* An allocator that fails every allocation after the first `budget`. */
struct failing {
	int budget;
	long live;
};

static void *f_alloc(void *ctx, size_t n)
{
	struct failing *f = ctx;
	if (f->budget-- <= 0)
		return NULL;
	f->live++;
	return malloc(n);
}

static void *f_realloc(void *ctx, void *p, size_t o, size_t n)
{
	struct failing *f = ctx;
	(void)o;
	if (f->budget-- <= 0)
		return NULL;
	return realloc(p, n);
}

static void f_free(void *ctx, void *p, size_t n)
{
	struct failing *f = ctx;
	(void)n;
	f->live--;
	free(p);
}

static ap_hist_snap *snap_of(ap_hist *h)
{
	ap_hist_snap *s = NULL;
	return ap_hist_snapshot(h, NULL, &s) ? NULL : s;
}

AP_TEST(create_rejects_sigbits_outside_1_to_15)
{
	ap_hist *h = NULL;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 0, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_create(&h, 16, NULL), AP_EINVAL);
	AP_CHECK(h == NULL);
	AP_CHECK_EQ_INT(ap_hist_create(&h, 15, NULL), 0);
	AP_CHECK_EQ_U64(ap_hist_sigbits(h), 15);
	ap_hist_destroy(h);
	ap_hist_destroy(NULL);
}

AP_TEST(empty_snapshot_answers_not_found_and_nan)
{
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, NULL), 0);
	ap_hist_snap *s = snap_of(h);
	AP_CHECK(s);
	uint64_t v = 42;
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), 0);
	AP_CHECK_EQ_INT(ap_hist_snap_min(s, &v), AP_ENOTFOUND);
	AP_CHECK_EQ_INT(ap_hist_snap_max(s, &v), AP_ENOTFOUND);
	AP_CHECK_EQ_INT(ap_hist_snap_value_at_rank(s, 0, &v), AP_ENOTFOUND);
	AP_CHECK_EQ_INT(ap_hist_snap_value_at_quantile(s, 0.5, &v), AP_ENOTFOUND);
	AP_CHECK(isnan(ap_hist_snap_mean(s)) && isnan(ap_hist_snap_stddev(s)));
	AP_CHECK(isnan(ap_hist_snap_quantile_of_value(s, 3)));
	AP_CHECK(ap_hist_snap_count_below(s, 3, NULL, NULL) == 0);
	AP_CHECK_EQ_U64(ap_hist_snap_bucket_count(s), 0);
	AP_CHECK_EQ_U64(v, 42);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(count_sum_min_max_are_exact_including_extremes)
{
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 3, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_add(h, UINT64_MAX), 0);
	AP_CHECK_EQ_INT(ap_hist_add(h, 0), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 1000, 3), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 5, 0), 0); /* no-op */
	ap_hist_snap *s = snap_of(h);
	AP_CHECK(s);
	uint64_t mn, mx, hi, lo;
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), 5);
	AP_CHECK(!ap_hist_snap_min(s, &mn) && mn == 0);
	AP_CHECK(!ap_hist_snap_max(s, &mx) && mx == UINT64_MAX);
	ap_hist_snap_sum(s, &hi, &lo);
	/* (2^64 - 1) + 3000 = 2^64 + 2999 */
	AP_CHECK(hi == 1 && lo == 2999);
	AP_CHECK_EQ_U64(ap_hist_snap_bucket_count(s), 3);
	ap_hist_bucket b;
	AP_CHECK_EQ_INT(ap_hist_snap_bucket(s, 1, &b), 0);
	AP_CHECK(b.count == 3 && b.lo <= 1000 && 1000 <= b.hi);
	AP_CHECK_EQ_INT(ap_hist_snap_bucket(s, 3, &b), AP_ERANGE);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

/* Population standard deviation by two passes in long double: the reference. */
static double exact_sd(const uint64_t *x, size_t n)
{
	long double m = 0, v = 0;
	for (size_t i = 0; i < n; i++)
		m += x[i];
	m /= n;
	for (size_t i = 0; i < n; i++)
		v += ((long double)x[i] - m) * ((long double)x[i] - m);
	return (double)sqrtl(v / n);
}

AP_TEST(stddev_matches_exact_moments_even_with_a_huge_mean)
{
	/* {1,2,3,4}: variance 1.25. 1e18 + {0,1,2}: variance 2/3, where
	 * sumsq/n - mean^2 in doubles would cancel to garbage. */
	static const uint64_t a[] = {1, 2, 3, 4};
	static const uint64_t b[] = {1000000000000000000u,
				     1000000000000000001u,
				     1000000000000000002u};
	static const uint64_t c[] = {0, 0, 0, 7, UINT32_MAX, 123456789};
	const uint64_t *sets[] = {a, b, c};
	size_t lens[] = {4, 3, 6};
	for (int t = 0; t < 3; t++) {
		ap_hist *h;
		AP_CHECK_EQ_INT(ap_hist_create(&h, 4, NULL), 0);
		for (size_t i = 0; i < lens[t]; i++)
			AP_CHECK_EQ_INT(ap_hist_add(h, sets[t][i]), 0);
		ap_hist_snap *s = snap_of(h);
		AP_CHECK(s);
		/* Both sides are exact to double rounding: 1e-12 relative. */
		AP_CHECK_NEAR(ap_hist_snap_stddev(s), exact_sd(sets[t], lens[t]),
			      1e-12, 0);
		ap_hist_snap_destroy(s);
		ap_hist_destroy(h);
	}
}

AP_TEST(constant_input_has_zero_stddev_and_exact_quantiles)
{
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 2, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 1234567, 1000), 0);
	ap_hist_snap *s = snap_of(h);
	AP_CHECK(s);
	uint64_t v;
	AP_CHECK(ap_hist_snap_stddev(s) == 0.0);
	AP_CHECK(ap_hist_snap_mean(s) == 1234567.0);
	AP_CHECK(!ap_hist_snap_value_at_quantile(s, 0.37, &v) && v == 1234567);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(sum_of_squares_saturates_with_a_flag_and_stddev_stays_finite)
{
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 7, NULL), 0);
	/* (2^64-1)^2 * 4 > 2^128: saturates; a second value keeps spread. */
	AP_CHECK_EQ_INT(ap_hist_add_n(h, UINT64_MAX, 4), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, UINT64_MAX / 2, 4), 0);
	ap_hist_snap *s = snap_of(h);
	AP_CHECK(s);
	uint64_t hi, lo;
	AP_CHECK(!ap_hist_snap_sumsq(s, &hi, &lo));
	AP_CHECK(hi == UINT64_MAX && lo == UINT64_MAX);
	/* True sd is (2^64-1)/4 ~ 4.61e18; the bucket estimate is within a
	 * bucket width (2^-7 relative). */
	AP_CHECK_NEAR(ap_hist_snap_stddev(s), (double)UINT64_MAX / 4, 1.0 / 128,
		      0);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(weighted_recording_keeps_total_weight)
{
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_add_weight(h, 10, (double)NAN), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_add_weight(h, 10, -1), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_add_weight(h, 10, (double)INFINITY), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_add_weight(h, 10, 1e19), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_add_weight(h, 10, 0), 0);
	/* 1000 weights of 1/pi = 2.7: total 2700 within 1. */
	for (int i = 0; i < 1000; i++)
		AP_CHECK_EQ_INT(ap_hist_add_weight(h, 100 + (uint64_t)i, 2.7), 0);
	ap_hist_snap *s = snap_of(h);
	AP_CHECK(s);
	uint64_t n = ap_hist_snap_count(s), hi, lo;
	AP_CHECK_MSG(n >= 2699 && n <= 2700, "count %llu", (unsigned long long)n);
	/* The sum grows by v * (count actually added): mean stays in range. */
	ap_hist_snap_sum(s, &hi, &lo);
	AP_CHECK(hi == 0 && lo >= 100 * n && lo <= 1099 * n);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(memory_is_allocated_per_exponent_and_stays_small)
{
	/* What one recorder object costs (ap_hist_add records into one per
	 * thread, docs/HISTOGRAMS.md), measured on a second histogram. */
	ap_hist *h, *g;
	ap_hist_recorder *r;
	AP_CHECK_EQ_INT(ap_hist_create(&g, 5, NULL), 0);
	size_t g0 = ap_hist_memory(g);
	AP_CHECK_EQ_INT(ap_hist_recorder_get(g, &r), 0);
	size_t rec = ap_hist_memory(g) - g0;
	ap_hist_destroy(g);

	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, NULL), 0);
	size_t empty = ap_hist_memory(h);
	AP_CHECK_EQ_INT(ap_hist_add(h, 1000), 0);
	size_t one = ap_hist_memory(h);
	/* This thread's recorder and one chunk of counters. */
	AP_CHECK_EQ_U64(one - empty, rec + 32 * sizeof(uint64_t));
	AP_CHECK_EQ_INT(ap_hist_add(h, 1001), 0);
	AP_CHECK_EQ_U64(ap_hist_memory(h), one);
	/* Values spread over 1e3..1e10: 25 exponents of 256 bytes, and the
	 * objects. */
	for (double v = 1e3; v <= 1e10; v *= 1.01)
		AP_CHECK_EQ_INT(ap_hist_add(h, (uint64_t)v), 0);
	AP_CHECK_MSG(ap_hist_memory(h) <= empty + rec + 25 * 32 * sizeof(uint64_t),
		     "%zu bytes", ap_hist_memory(h));
	AP_CHECK_MSG(ap_hist_memory(h) <= 8192 + rec, "%zu bytes",
		     ap_hist_memory(h));
	ap_hist_destroy(h);
}

AP_TEST(allocation_failure_drops_the_value_and_says_so)
{
	struct failing f = {1, 0}; /* the histogram object only */
	ap_allocator a = {f_alloc, f_realloc, f_free, &f};
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, &a), 0);
	AP_CHECK_EQ_INT(ap_hist_add(h, 77), AP_ENOMEM);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 77, 5), AP_ENOMEM);
	f.budget = 10;
	ap_hist_snap *s = NULL;
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, &a, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_dropped(s), 6);
	ap_hist_snap_destroy(s);
	f.budget = 0;
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, &a, &s), AP_ENOMEM);
	ap_hist_recorder *r;
	AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r), AP_ENOMEM);
	ap_hist_destroy(h);
	AP_CHECK_EQ_INT(f.live, 0); /* nothing leaked on any path */
	f.budget = 0;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, &a), AP_ENOMEM);
}

AP_TEST(every_allocation_failure_point_of_a_snapshot_is_clean)
{
	for (int budget = 0; budget < 40; budget++) {
		struct failing f = {1000, 0};
		ap_allocator a = {f_alloc, f_realloc, f_free, &f};
		ap_hist *h;
		AP_CHECK_EQ_INT(ap_hist_create(&h, 3, &a), 0);
		for (uint64_t v = 0; v < 100000; v += 37)
			AP_CHECK_EQ_INT(ap_hist_add(h, v * v), 0);
		f.budget = budget;
		ap_hist_snap *s = NULL;
		int rc = ap_hist_snapshot(h, &a, &s);
		AP_CHECK(rc == 0 || rc == AP_ENOMEM);
		if (!rc)
			AP_CHECK_EQ_U64(ap_hist_snap_count(s), 2703);
		ap_hist_snap_destroy(s);
		ap_hist_destroy(h);
		AP_CHECK_EQ_INT(f.live, 0);
	}
}

AP_TEST(reset_empties_histogram_and_recorders)
{
	ap_hist *h;
	ap_hist_recorder *r;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r), 0);
	AP_CHECK_EQ_INT(ap_hist_add(h, 5), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_add(r, 500), 0);
	ap_hist_reset(h);
	ap_hist_snap *s = snap_of(h);
	AP_CHECK(s && ap_hist_snap_count(s) == 0);
	ap_hist_snap_destroy(s);
	AP_CHECK_EQ_INT(ap_hist_recorder_add(r, 9), 0);
	s = snap_of(h);
	uint64_t mn, mx;
	AP_CHECK(s && !ap_hist_snap_min(s, &mn) && !ap_hist_snap_max(s, &mx));
	AP_CHECK(mn == 9 && mx == 9 && ap_hist_snap_count(s) == 1);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(recorders_merge_on_read_and_are_reused_after_release)
{
	ap_hist *h;
	ap_hist_recorder *r1, *r2, *r3;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r1), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r2), 0);
	AP_CHECK(r1 != r2);
	AP_CHECK_EQ_INT(ap_hist_recorder_add(r1, 10), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_add_n(r2, 20, 2), 0);
	AP_CHECK_EQ_INT(ap_hist_recorder_add_weight(r2, 30, 1.0), 0);
	AP_CHECK_EQ_INT(ap_hist_add(h, 40), 0);
	ap_hist_recorder_release(r1);
	AP_CHECK_EQ_INT(ap_hist_recorder_get(h, &r3), 0);
	AP_CHECK(r3 == r1); /* reused, counts kept */
	ap_hist_snap *s = snap_of(h);
	uint64_t hi, lo;
	AP_CHECK(s && ap_hist_snap_count(s) == 5);
	ap_hist_snap_sum(s, &hi, &lo);
	AP_CHECK(hi == 0 && lo == 10 + 40 + 30 + 40);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}

AP_TEST(a_total_count_past_2_pow_64_is_reported_not_wrapped)
{
	ap_hist *h;
	ap_hist_snap *s = NULL;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 5, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_add_n(h, 1, UINT64_MAX), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(s), UINT64_MAX);
	ap_hist_snap_destroy(s);
	s = NULL;
	/* One more in another bucket: the total no longer fits. */
	AP_CHECK_EQ_INT(ap_hist_add(h, 1000), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), AP_ERANGE);
	AP_CHECK(s == NULL);
	ap_hist_destroy(h);
}

AP_TEST(batch_recording_equals_one_by_one_including_rare_cases)
{
	/* Run 0: values below 2^44 (many >= 2^32, whose squares pass 64
	 * bits; 5000 squares < 2^101: no saturation) with new exponents
	 * arriving mid-batch. Run 1: full-range values with UINT64_MAX, whose
	 * squares saturate the 128-bit sum of squares. */
	static uint64_t v[5000];
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (int run = 0; run < 2; run++) {
		for (int i = 0; i < 5000; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			v[i] = (x >> (x % 64)) >> (run ? 0 : 20);
		}
		v[10] = 0;
		if (run)
			v[20] = v[21] = UINT64_MAX;
		ap_hist *a, *b;
		ap_hist_recorder *ra, *rb;
		AP_CHECK_EQ_INT(ap_hist_create(&a, 6, NULL), 0);
		AP_CHECK_EQ_INT(ap_hist_create(&b, 6, NULL), 0);
		AP_CHECK(!ap_hist_recorder_get(a, &ra) && !ap_hist_recorder_get(b, &rb));
		for (size_t i = 0; i < 5000; i++)
			AP_CHECK_EQ_INT(ap_hist_recorder_add(ra, v[i]), 0);
		AP_CHECK_EQ_INT(ap_hist_recorder_add_many(rb, v, 2500), 0);
		AP_CHECK_EQ_INT(ap_hist_recorder_add_many(rb, v + 2500, 2500), 0);
		AP_CHECK_EQ_INT(ap_hist_recorder_add_many(rb, NULL, 0), 0);
		ap_hist_snap *sa, *sb;
		AP_CHECK_EQ_INT(ap_hist_snapshot(a, NULL, &sa), 0);
		AP_CHECK_EQ_INT(ap_hist_snapshot(b, NULL, &sb), 0);
		uint64_t hi, lo;
		AP_CHECK(ap_hist_snap_equal(sa, sb));
		AP_CHECK(ap_hist_snap_sumsq(sa, &hi, &lo) == !run);
		ap_hist_snap_destroy(sa);
		ap_hist_snap_destroy(sb);
		ap_hist_destroy(a);
		ap_hist_destroy(b);
	}
}

/* Min and max of a snapshot of h (0, 0 if it fails or is empty). */
static void snap_min_max(ap_hist *h, uint64_t *mn, uint64_t *mx)
{
	ap_hist_snap *s = snap_of(h);
	*mn = *mx = 0;
	if (s && (ap_hist_snap_min(s, mn) || ap_hist_snap_max(s, mx)))
		*mn = *mx = 0;
	ap_hist_snap_destroy(s);
}

AP_TEST(batch_keeps_its_min_and_max_across_a_new_exponent)
{
	/* A batch holds min and max in registers; a value whose counters are
	 * not allocated yet goes through the general path, which updates the
	 * recorder's min and max itself. The batch's earlier extremes must
	 * survive that. Values are off bucket edges (a snapshot clamps min and
	 * max into the outermost buckets, which could hide a loss). */
	static const uint64_t warm[] = {100001, 100002};
	/* 100000: a new minimum, then 10^9 needs a new exponent. */
	static const uint64_t low[] = {100000, 1000000000};
	/* 10^9 + 1: a new maximum, then 7 needs exponent 0's counters. */
	static const uint64_t high[] = {1000000001, 7};
	/* After a reset (counters kept): 2^40 needs a new exponent. */
	static const uint64_t again[] = {100000, UINT64_C(1) << 40};
	ap_hist *h = NULL;
	ap_hist_recorder *r = NULL;
	AP_CHECK(!ap_hist_create(&h, 5, NULL) && !ap_hist_recorder_get(h, &r));
	uint64_t mn, mx;
	AP_CHECK(!ap_hist_recorder_add_many(r, warm, 2) &&
		 !ap_hist_recorder_add_many(r, low, 2) &&
		 !ap_hist_recorder_add_many(r, high, 2));
	snap_min_max(h, &mn, &mx);
	AP_CHECK_EQ_U64(mn, 7);
	AP_CHECK_EQ_U64(mx, 1000000001);
	ap_hist_reset(h);
	AP_CHECK(!ap_hist_recorder_add_many(r, warm, 1) &&
		 !ap_hist_recorder_add_many(r, again, 2));
	snap_min_max(h, &mn, &mx);
	AP_CHECK_EQ_U64(mn, 100000);
	AP_CHECK_EQ_U64(mx, UINT64_C(1) << 40);
	ap_hist_destroy(h);
}
