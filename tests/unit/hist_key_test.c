/*
 * hist_key_test.c: the value <-> key arithmetic of ap_hist, exhaustively: for
 * every sigbits 1..15 and every key, both edges of the bucket map back to the
 * key, neighbouring buckets tile the whole uint64 range without gap or
 * overlap (0 and UINT64_MAX included), and every bucket is narrower than
 * 2^-sigbits of its lower edge. Runs under UBSan in CI, which also checks
 * the shifts never exceed the word.
 */
#include <math.h>

#include "allocprof/hist.h"
#include "aptest.h"

AP_TEST(key_count_matches_formula)
{
	for (unsigned s = 1; s <= 15; s++)
		AP_CHECK_EQ_U64(ap_hist_key_count(s), (uint64_t)(65 - s) << s);
	AP_CHECK_EQ_U64(ap_hist_key_count(0), 0);
	AP_CHECK_EQ_U64(ap_hist_key_count(16), 0);
}

AP_TEST(every_bucket_edge_round_trips_for_every_sigbits)
{
	for (unsigned s = 1; s <= 15; s++) {
		uint32_t n = ap_hist_key_count(s);
		uint64_t prev_hi = 0;
		for (uint32_t k = 0; k < n; k++) {
			uint64_t lo, hi;
			AP_CHECK_EQ_INT(ap_hist_key_bounds(s, k, &lo, &hi), 0);
			AP_CHECK_MSG(lo <= hi, "s=%u key %u: lo > hi", s, k);
			/* Tiling: this bucket starts right after the last. */
			if (k == 0)
				AP_CHECK_EQ_U64(lo, 0);
			else
				AP_CHECK_MSG(lo == prev_hi + 1,
					     "s=%u key %u: gap or overlap", s, k);
			AP_CHECK_MSG(ap_hist_value_to_key(s, lo) == k &&
					     ap_hist_value_to_key(s, hi) == k,
				     "s=%u key %u: edges [%llu, %llu] map elsewhere",
				     s, k, (unsigned long long)lo,
				     (unsigned long long)hi);
			if (k)
				AP_CHECK_EQ_U64(ap_hist_value_to_key(s, lo - 1),
						k - 1);
			if (k + 1 < n)
				AP_CHECK_EQ_U64(ap_hist_value_to_key(s, hi + 1),
						k + 1);
			/* Width: exact below 2^(s+1), else hi - lo + 1 <= lo / 2^s. */
			if (lo < (UINT64_C(2) << s))
				AP_CHECK_MSG(lo == hi, "s=%u: small value %llu shares",
					     s, (unsigned long long)lo);
			else
				AP_CHECK_MSG(hi - lo + 1 <= lo >> s,
					     "s=%u key %u too wide", s, k);
			prev_hi = hi;
		}
		AP_CHECK_EQ_U64(prev_hi, UINT64_MAX);
		AP_CHECK_EQ_U64(ap_hist_value_to_key(s, UINT64_MAX), n - 1);
		AP_CHECK_EQ_U64(ap_hist_value_to_key(s, 0), 0);
	}
}

AP_TEST(key_bounds_rejects_bad_sigbits_and_keys)
{
	uint64_t lo = 7, hi = 7;
	AP_CHECK_EQ_INT(ap_hist_key_bounds(0, 0, &lo, &hi), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_key_bounds(16, 0, &lo, &hi), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_key_bounds(5, ap_hist_key_count(5), &lo, &hi),
			AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_key_bounds(5, UINT32_MAX, &lo, &hi), AP_EINVAL);
	AP_CHECK(lo == 7 && hi == 7); /* untouched on error */
}

AP_TEST(sigbits_for_digits_is_the_smallest_sufficient_precision)
{
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(1), 4);  /* 6.25% <= 10% */
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(2), 7);  /* 0.78% <= 1% */
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(3), 10); /* 0.098% */
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(4), 14);
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(4.5), 15);
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(0.3), 1);
	for (double d = 0.1; d < 4.5; d += 0.1) {
		unsigned s = ap_hist_sigbits_for_digits(d);
		AP_CHECK(s >= 1 && s <= 15);
		AP_CHECK(ldexp(1, -(int)s) <= pow(10, -d) * (1 + 1e-9));
		AP_CHECK(s == 1 || ldexp(1, 1 - (int)s) > pow(10, -d));
	}
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(5), 0);
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(0), 0);
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits(-1), 0);
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits((double)NAN), 0);
	AP_CHECK_EQ_U64(ap_hist_sigbits_for_digits((double)INFINITY), 0);
}
