/*
 * objects_interval_test.c: Monte Carlo coverage of the object-count
 * interval (ap_objects_interval: Fay and Feuer's gamma interval for a
 * weighted count, HT normal with 100+ samples and effective samples) with
 * the real sampler, R = 4096.
 *
 * Coverage is measured over the replays that sampled the site at least
 * once: a site with no sample does not appear in a profile, and nothing can
 * bound objects no sample hints at.
 *
 *  - One size per site (what one pprof sample line is: a stack and a
 *    size): the sample count is binomial, less dispersed than the Poisson
 *    that the interval assumes, so coverage >= 0.95. This includes nearly
 *    certain objects (pi = 0.97), where one miss moves the count by a
 *    whole object and an interval without the extra sample of the upper
 *    bound covers ~0.86. The test accepts
 *    >= 0.95 - 3 SD, SD = sqrt(.95 * .05 / eligible replays).
 *  - Mixed sizes (98% 8-128 B, 2% 4-16 KiB): the scaled interval is an
 *    approximation; from 8 expected samples up it measured 0.937-0.952.
 *    The test guards it at 0.92, which the previous scaling by the raw
 *    sample count (0.74-0.80: large objects add samples, not uncertainty)
 *    fails. Below ~5 expected samples a mixed site's small objects usually
 *    go unseen and no interval can cover them (0.76 at 2): not asserted,
 *    documented in docs/STATISTICS.md.
 */
#include "aptest.h"

#include <stdlib.h>

#include "allocprof/estimate.h"
#include "allocprof/prng.h"
#include "allocprof/sampler.h"

#define NREP 10000
#define RATE 4096

/* Coverage of the objects interval for a site; size 0 = mixed sizes. */
static int coverage(uint64_t size, double lambda, uint64_t seed, double *cov,
		    size_t *eligible)
{
	ap_prng r;
	ap_prng_seed(&r, seed);
	size_t n = 0, cap = 1024;
	uint64_t *sizes = malloc(cap * sizeof *sizes);
	double expected = 0;
	while (sizes && expected < lambda) {
		if (n == cap) {
			uint64_t *g = realloc(sizes, 2 * cap * sizeof *g);
			if (!g)
				break;
			sizes = g;
			cap *= 2;
		}
		uint64_t z = size ? size
			     : ap_prng_below(&r, 50) ? 8 + ap_prng_below(&r, 121)
						     : 4096 + ap_prng_below(&r, 12289);
		sizes[n++] = z;
		expected += ap_prob_sampled(z, RATE);
	}
	ap_sampler s;
	ap_sampler_config cfg;
	ap_sampler_config_default(&cfg);
	cfg.rate = RATE;
	cfg.seed = seed;
	if (!sizes || expected < lambda || ap_sampler_init(&s, &cfg)) {
		free(sizes);
		return -1;
	}
	size_t covered = 0;
	*eligible = 0;
	for (int k = 0; k < NREP; k++) {
		ap_ht ht = {0};
		for (size_t i = 0; i < n; i++) {
			if (!ap_sampler_should_sample(&s, sizes[i]))
				continue;
			ap_sample_info info;
			ap_sampler_sample(&s, sizes[i], &info);
			if (info.count)
				ap_ht_add(&ht, (double)sizes[i],
					  ap_prob_sampled(sizes[i], RATE));
		}
		if (!ht.samples)
			continue;
		ap_interval iv;
		if (ap_objects_interval(ht.samples, ht.objects, ht.var_objects,
					0.95, &iv)) {
			free(sizes);
			return -1;
		}
		(*eligible)++;
		covered += iv.lo <= (double)n && (double)n <= iv.hi;
	}
	*cov = (double)covered / (double)*eligible;
	printf("  size %-5s lambda %5.1f (%5zu objects): coverage %.4f over %zu\n",
	       size == 64 ? "64" : size == 4096 ? "4096" : size ? "14400" : "mixed", lambda, n,
	       *cov, *eligible);
	free(sizes);
	return 0;
}

static void check_one_size(uint64_t size, double lambda, uint64_t seed)
{
	double cov;
	size_t el;
	AP_CHECK(coverage(size, lambda, seed, &cov, &el) == 0);
	AP_CHECK(el >= NREP / 4);
	double floor_ = 0.95 - 3 * sqrt(0.95 * 0.05 / (double)el);
	AP_CHECK_MSG(cov >= floor_, "coverage %.4f < %.4f", cov, floor_);
}

AP_TEST(objects_small_size_half_a_sample)
{
	check_one_size(64, 0.5, 31);
}

AP_TEST(objects_small_size_two_samples)
{
	check_one_size(64, 2, 32);
}

AP_TEST(objects_small_size_eight_samples)
{
	check_one_size(64, 8, 33);
}

AP_TEST(objects_small_size_thirty_samples)
{
	check_one_size(64, 30, 34);
}

AP_TEST(objects_large_size_few_and_many_samples)
{
	check_one_size(4096, 2, 35);
	check_one_size(4096, 8, 36);
	check_one_size(4096, 90, 37);
}

/* Nearly certain objects: pi = 0.97, a miss moves the count by one. */
AP_TEST(objects_nearly_certain_size)
{
	check_one_size(14400, 5, 38);
	check_one_size(14400, 50, 39);
}

AP_TEST(objects_mixed_sizes_are_guarded)
{
	static const double lambdas[] = {8, 30, 90};
	for (size_t i = 0; i < 3; i++) {
		double cov;
		size_t el;
		AP_CHECK(coverage(0, lambdas[i], 40 + i, &cov, &el) == 0);
		AP_CHECK_MSG(cov >= 0.92, "mixed lambda %g: coverage %.4f",
			     lambdas[i], cov);
	}
}
