/*
 * rounding_test.c: the per-line values a profile stores must carry no
 * rounding bias (issue 12, item 4). A program with 1000 sites, each
 * allocating one object of 1.2 R, goes through the REAL sampler; each
 * sampled site's additive values are stored as integers, the way the
 * writer stores a pprof line, and summed like a report's total.
 *
 * An object of 1.2 R is sampled with pi = 1 - (1 - 1/R)^(1.2 R) ~ 0.70, so
 * its weight 1/pi ~ 1.43 and its variance term (1 - pi)/pi^2 ~ 0.62.
 * Rounding to nearest (llround, what the writer does today) stores 1 and 1:
 * the objects total comes out ~30% low and the variance ~60% high. Unbiased
 * randomized rounding (ap_round_unbiased) stores floor(x) or floor(x) + 1
 * with probability frac(x) from a hash of the line's identity, so the
 * stored value has expectation x over lines.
 *
 * Tolerance: NREP programs (different site identities, so different
 * rounding coins, and different sampler seeds); the mean of the stored
 * totals must be within 4 standard errors of the truth (1000 objects; the
 * variance total's own expectation N (1 - pi)/pi), the SE being the sample
 * SD of the replicate totals over sqrt(NREP) (it includes sampling and
 * rounding noise). Round-to-nearest is asserted to miss by more than 20
 * SE, which is what the issue reported.
 */
#include "aptest.h"

#include <math.h>

#include "allocprof/estimate.h"
#include "allocprof/sampler.h"

#define RATE 4096
#define NSITES 1000
#define NREP 400

struct tot {
	double sum, sum2;
};

static void add(struct tot *t, double x)
{
	t->sum += x;
	t->sum2 += x * x;
}

/* (mean - truth) / SE over NREP replicate totals. */
static double zscore(const struct tot *t, double truth)
{
	double mean = t->sum / NREP;
	double var = (t->sum2 - NREP * mean * mean) / (NREP - 1);
	return (mean - truth) / sqrt(var / NREP);
}

AP_TEST(stored_objects_and_variances_are_unbiased)
{
	const uint64_t z = (uint64_t)(1.2 * RATE);
	ap_sampler_config cfg;
	ap_sampler_config_default(&cfg);
	cfg.rate = RATE;
	cfg.seed = 424242;
	ap_sampler s;
	AP_CHECK(ap_sampler_init(&s, &cfg) == 0);
	double pi = ap_prob_sampled(z, RATE);
	struct tot obj_new = {0}, obj_old = {0}, var_new = {0}, var_old = {0};
	for (uint64_t r = 0; r < NREP; r++) {
		double on = 0, oo = 0, vn = 0, vo = 0;
		for (uint64_t i = 0; i < NSITES; i++) {
			if (!ap_sampler_should_sample(&s, z))
				continue;
			ap_sample_info info;
			ap_sampler_sample(&s, z, &info);
			ap_sample_terms t;
			AP_CHECK(ap_sample_terms_of((double)z, info.prob, &t) == 0);
			/* The line's identity: its stack (here program r,
			 * site i) and the column. */
			uint64_t ids[2] = {r, i};
			on += (double)ap_round_unbiased(t.objects,
							ap_round_key(ids, 2, 0));
			vn += (double)ap_round_unbiased(t.var_objects,
							ap_round_key(ids, 2, 1));
			oo += (double)llround(t.objects);
			vo += (double)llround(t.var_objects);
		}
		add(&obj_new, on);
		add(&obj_old, oo);
		add(&var_new, vn);
		add(&var_old, vo);
	}
	double ev = NSITES * (1 - pi) / pi;
	double zo = zscore(&obj_new, NSITES), zv = zscore(&var_new, ev);
	double zoo = zscore(&obj_old, NSITES), zvo = zscore(&var_old, ev);
	printf("# objects: unbiased %.1f (z %.2f), llround %.1f (%+.1f%%, "
	       "z %.1f); truth %d\n",
	       obj_new.sum / NREP, zo, obj_old.sum / NREP,
	       100 * (obj_old.sum / NREP / NSITES - 1), zoo, NSITES);
	printf("# objects variance: unbiased %.1f (z %.2f), llround %.1f "
	       "(z %.1f); expected %.1f\n",
	       var_new.sum / NREP, zv, var_old.sum / NREP, zvo, ev);
	AP_CHECK_MSG(fabs(zo) < 4, "objects z %.2f", zo);
	AP_CHECK_MSG(fabs(zv) < 4, "variance z %.2f", zv);
	AP_CHECK_MSG(zoo < -20, "llround objects z %.1f", zoo);
	AP_CHECK_MSG(fabs(zvo) > 20, "llround variance z %.1f", zvo);
}

/*
 * Repeated writes of one line agree (the coin is a function of the key),
 * and over many keys the fraction rounded up is frac(x): Binomial(n, f),
 * within 4 sd.
 */
AP_TEST(rounding_is_deterministic_per_key_and_fair_over_keys)
{
	const int n = 100000;
	const double x = 7.3;
	int up = 0;
	for (int i = 0; i < n; i++) {
		uint64_t id = (uint64_t)i;
		uint64_t k = ap_round_key(&id, 1, 3);
		int64_t a = ap_round_unbiased(x, k);
		AP_CHECK(a == 7 || a == 8);
		AP_CHECK(ap_round_unbiased(x, k) == a);
		up += a == 8;
	}
	double sd = sqrt(n * 0.3 * 0.7);
	AP_CHECK_MSG(fabs(up - 0.3 * n) < 4 * sd, "%d rounded up", up);
}
