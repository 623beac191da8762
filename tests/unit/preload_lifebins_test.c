/*
 * preload_lifebins_test.c: a site's lifetime bins (src/preload/lifebins.h):
 * each lifetime lands in the bin of its key, bins stay sorted and
 * distinct, nothing is lost when a site's bins are merged into wider ones,
 * and the sums are the ones Kaplan-Meier reads.
 */
#include <stdint.h>
#include <string.h>

#include "allocprof/hist.h"
#include "aptest.h"
#include "lifebins.h"

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Keys strictly increasing; sums over bins equal to what went in. */
static int check_bins(const life_bins *b, uint32_t n_in, double w_in,
		      double bytes_in)
{
	uint64_t n = 0;
	double w = 0, bytes = 0;
	for (uint32_t i = 0; i < b->n; i++) {
		if (i > 0 && b->keys[i - 1] >= b->keys[i])
			return 1;
		n += lifebins_at(b, i)->n;
		w += lifebins_at(b, i)->w;
		bytes += lifebins_at(b, i)->bytes;
	}
	if (b->n > LIFE_BINS_MAX || n != n_in)
		return 2;
	/* Sums of at most a few thousand doubles of similar size: relative
	 * rounding below 1e-12. */
	if (w < w_in * (1 - 1e-12) || w > w_in * (1 + 1e-12))
		return 3;
	if (bytes < bytes_in * (1 - 1e-12) || bytes > bytes_in * (1 + 1e-12))
		return 4;
	return 0;
}

AP_TEST(each_lifetime_lands_in_its_own_key_and_bins_stay_sorted)
{
	arena a;
	arena_init(&a);
	life_bins *b = NULL;
	/* Few distinct lifetimes, added in a scrambled order, some twice. */
	static const uint64_t t[] = { 5000, 17, 1u << 20, 17, 900, 5000, 3,
				      123456789, 900, 1 };
	double w_in = 0, bytes_in = 0;
	for (uint32_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		lifebins_add(&a, &b, t[i], 2.0, 64);
		w_in += 2.0;
		bytes_in += 2.0 * 64;
	}
	AP_CHECK(b != NULL);
	AP_CHECK_EQ_INT(b->sigbits, LIFE_SIGBITS);
	AP_CHECK_EQ_INT(b->n, 7); /* 10 values, 17, 900 and 5000 twice */
	AP_CHECK_EQ_INT(check_bins(b, 10, w_in, bytes_in), 0);
	for (uint32_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		uint32_t key = ap_hist_value_to_key(LIFE_SIGBITS, t[i]);
		uint32_t j = 0;
		while (j < b->n && b->keys[j] != key)
			j++;
		AP_CHECK(j < b->n);
		bool twice = t[i] == 17 || t[i] == 900 || t[i] == 5000;
		AP_CHECK_EQ_INT(lifebins_at(b, j)->n, twice ? 2 : 1);
		/* w2 = sum w^2, bytes_var = sum (w^2 - w) size^2 */
		AP_CHECK(lifebins_at(b, j)->w2 == (twice ? 8.0 : 4.0));
		AP_CHECK(lifebins_at(b, j)->bytes_var == (twice ? 2 : 1) * 2.0 * 64 * 64);
	}
	arena_destroy(&a);
}

/* Thousands of lifetimes spread over 2^0..2^40 ns: far more distinct keys
 * than LIFE_BINS_MAX, so the bins are merged (fewer sigbits) as they
 * fill, and every block is still counted once. */
AP_TEST(merging_keeps_every_block_and_the_bound)
{
	arena a;
	arena_init(&a);
	life_bins *b = NULL;
	uint64_t s = 0x9e3779b97f4a7c15u;
	double w_in = 0, bytes_in = 0;
	const uint32_t n = 5000;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = next(&s) >> (24 + next(&s) % 40);
		double w = 1.0 + (double)(next(&s) % 1000) / 10.0;
		uint64_t size = 16 + next(&s) % 4096;
		lifebins_add(&a, &b, t, w, size);
		w_in += w;
		bytes_in += w * (double)size;
		AP_CHECK(b != NULL && b->n <= LIFE_BINS_MAX);
	}
	AP_CHECK(b->sigbits < LIFE_SIGBITS); /* merged at least once */
	AP_CHECK_EQ_INT(check_bins(b, n, w_in, bytes_in), 0);
	/* Each further lifetime is in the bin of its key at the bins'
	 * precision after the add (an add may merge them once more). */
	for (uint32_t i = 0; i < 100; i++) {
		uint64_t t = next(&s) >> (24 + next(&s) % 40);
		lifebins_add(&a, &b, t, 1.0, 8);
		uint32_t key = ap_hist_value_to_key(b->sigbits, t);
		uint32_t j = 0;
		while (j < b->n && b->keys[j] != key)
			j++;
		AP_CHECK(j < b->n && lifebins_at(b, j)->n >= 1);
	}
	arena_destroy(&a);
}
