/*
 * prng_test.c: the sampler's random source. Determinism per seed, distinct
 * streams, the (0, 1] contract of ap_prng_uniform at both ends, and the first
 * two moments of uniform and bounded draws against theory.
 *
 * Tolerances: every statistical check allows 5 standard errors of the
 * statistic under the null hypothesis (a correct generator), computed from
 * the known moments of the target law: a false alarm has probability below
 * 1e-6 per check, while a real defect of the size tested shows as tens of
 * standard errors. Seeds are fixed, so the outcome is reproducible.
 */
#include "aptest.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "allocprof/prng.h"

AP_TEST(same_seed_gives_same_stream)
{
	ap_prng a, b;
	AP_CHECK_EQ_INT(ap_prng_seed(&a, 12345), 0);
	AP_CHECK_EQ_INT(ap_prng_seed(&b, 12345), 0);
	for (int i = 0; i < 10000; i++) {
		uint64_t x = ap_prng_next(&a), y = ap_prng_next(&b);
		AP_CHECK_EQ_U64(x, y);
	}
}

AP_TEST(nearby_seeds_give_unrelated_streams)
{
	/* Seeds 1..64: first outputs pairwise distinct, and the bitwise
	 * agreement of two streams is ~32 of 64 bits (binomial(64, 1/2), sd 4):
	 * a mean agreement over 1000 outputs far from 32 would mean the
	 * SplitMix64 expansion failed to decorrelate adjacent seeds. */
	uint64_t first[64];
	for (int s = 0; s < 64; s++) {
		ap_prng r;
		AP_CHECK_EQ_INT(ap_prng_seed(&r, (uint64_t)s + 1), 0);
		first[s] = ap_prng_next(&r);
		for (int t = 0; t < s; t++)
			AP_CHECK(first[t] != first[s]);
	}
	ap_prng a, b;
	ap_prng_seed(&a, 1);
	ap_prng_seed(&b, 2);
	double agree = 0;
	for (int i = 0; i < 1000; i++)
		agree += 64 - __builtin_popcountll(ap_prng_next(&a) ^ ap_prng_next(&b));
	agree /= 1000;
	/* se of the mean agreement: 4 / sqrt(1000) = 0.126; 5 se = 0.63. */
	AP_CHECK_NEAR(agree, 32.0, 0, 0.63);
}

AP_TEST(streams_of_one_seed_differ_and_stream_zero_is_the_seed)
{
	ap_prng plain, s0, s1, s2, s1b;
	ap_prng_seed(&plain, 99);
	ap_prng_seed_stream(&s0, 99, 0);
	ap_prng_seed_stream(&s1, 99, 1);
	ap_prng_seed_stream(&s2, 99, 2);
	ap_prng_seed_stream(&s1b, 99, 1);
	AP_CHECK(memcmp(&plain, &s0, sizeof plain) == 0);
	AP_CHECK(memcmp(&s1, &s1b, sizeof s1) == 0);
	uint64_t a = ap_prng_next(&s0), b = ap_prng_next(&s1), c = ap_prng_next(&s2);
	AP_CHECK(a != b && b != c && a != c);
	/* Stream 1 of seed 99 must not be seed 98 or 100 shifted by a step. */
	ap_prng n98, n100;
	ap_prng_seed(&n98, 98);
	ap_prng_seed(&n100, 100);
	uint64_t x98 = ap_prng_next(&n98), x100 = ap_prng_next(&n100);
	AP_CHECK(b != x98 && b != x100);
}

AP_TEST(seed_zero_draws_a_random_seed)
{
	ap_prng a, b;
	AP_CHECK_EQ_INT(ap_prng_seed(&a, 0), 0);
	AP_CHECK_EQ_INT(ap_prng_seed(&b, 0), 0);
	/* Equal only with probability ~2^-64 per word if getrandom works. */
	AP_CHECK(memcmp(&a, &b, sizeof a) != 0);
	AP_CHECK((a.s[0] | a.s[1] | a.s[2] | a.s[3]) != 0);
}

AP_TEST(null_generator_is_rejected)
{
	AP_CHECK_EQ_INT(ap_prng_seed(NULL, 1), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_prng_seed_stream(NULL, 1, 2), AP_EINVAL);
}

/* Multiplicative inverse of odd a modulo 2^64 (Newton: each step doubles the
 * number of correct low bits, 3 -> 6 -> ... -> 96). */
static uint64_t inverse_mod64(uint64_t a)
{
	uint64_t x = a;
	for (int i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

/* State whose next output is exactly `out`: xoshiro256** outputs
 * rotl(s[1] * 5, 7) * 9, so invert each step. */
static ap_prng state_for_output(uint64_t out)
{
	uint64_t v = out * inverse_mod64(9);
	v = (v >> 7) | (v << 57); /* rotr 7 */
	ap_prng r = {{1, v * inverse_mod64(5), 0, 0}};
	return r;
}

AP_TEST(uniform_endpoints_are_2pow_minus53_and_1)
{
	ap_prng lo = state_for_output(0);
	ap_prng lo_check = lo;
	AP_CHECK_EQ_U64(ap_prng_next(&lo_check), 0);
	double u = ap_prng_uniform(&lo);
	AP_CHECK(u > 0.0);
	AP_CHECK(u == 0x1.0p-53);
	ap_prng hi = state_for_output(UINT64_MAX);
	ap_prng hi_check = hi;
	AP_CHECK_EQ_U64(ap_prng_next(&hi_check), UINT64_MAX);
	AP_CHECK(ap_prng_uniform(&hi) == 1.0);
	AP_CHECK(isfinite(log(0x1.0p-53)));
}

AP_TEST(uniform_moments_match_theory)
{
	/* n = 1e6 draws of U in (0, 1]: mean 1/2 (+2^-54), variance 1/12.
	 * se(mean) = sqrt(1/12 / n) = 2.89e-4 -> 5 se = 1.44e-3.
	 * se(sample variance) = sqrt((mu4 - sigma^4) / n) with mu4 = 1/80 and
	 * sigma^4 = 1/144: sqrt(5.56e-3 / n) = 7.45e-5 -> 5 se = 3.73e-4. */
	ap_prng r;
	ap_prng_seed(&r, 2024);
	const int n = 1000000;
	double sum = 0, sum2 = 0, mn = 2, mx = -1;
	for (int i = 0; i < n; i++) {
		double u = ap_prng_uniform(&r);
		sum += u;
		sum2 += u * u;
		mn = u < mn ? u : mn;
		mx = u > mx ? u : mx;
	}
	double mean = sum / n;
	double var = (sum2 - n * mean * mean) / (n - 1);
	AP_CHECK(mn > 0.0);
	AP_CHECK(mx <= 1.0);
	AP_CHECK_NEAR(mean, 0.5, 0, 1.44e-3);
	AP_CHECK_NEAR(var, 1.0 / 12, 0, 3.73e-4);
}

AP_TEST(below_is_in_range_and_even)
{
	ap_prng r;
	ap_prng_seed(&r, 7);
	AP_CHECK_EQ_U64(ap_prng_below(&r, 0), 0);
	AP_CHECK_EQ_U64(ap_prng_below(&r, 1), 0);
	/* n = 10 classes, 1e5 draws: each count ~ Binomial(1e5, 0.1), sd 94.9;
	 * 5 sd = 474. */
	unsigned counts[10] = {0};
	for (int i = 0; i < 100000; i++) {
		uint64_t k = ap_prng_below(&r, 10);
		AP_CHECK(k < 10);
		counts[k]++;
	}
	for (int k = 0; k < 10; k++)
		AP_CHECK_NEAR(counts[k], 10000, 0, 474);
	/* A bound just above 2^63 rejects almost half of all 64-bit values;
	 * results must still be below it and reach its upper half (P(miss in
	 * 1000 draws) = 2^-1000). */
	uint64_t big = (UINT64_C(1) << 63) + 12345;
	bool upper = false;
	for (int i = 0; i < 1000; i++) {
		uint64_t k = ap_prng_below(&r, big);
		AP_CHECK(k < big);
		upper |= k >= big / 2;
	}
	AP_CHECK(upper);
}
