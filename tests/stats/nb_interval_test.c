/*
 * nb_interval_test.c: Monte Carlo coverage of the negative-binomial
 * interval ([R4]) and of the interval reports use (ap_bytes_interval:
 * NB below AP_NB_MAX_SAMPLES samples, HT normal above), driven by the real
 * sampler in its default mode (geometric gaps, skip the rest of a sampled
 * allocation: exactly [R4]'s model).
 *
 * A window is a fixed population of allocations (mostly 8-128 B, some
 * 4-16 KiB, R = 4096) replayed NREP times. Windows are sized for expected
 * sample counts from 0.25 to 200, since the claim is coverage >= 0.95 "at
 * any sample count".
 *
 *  - Closed start: the gap is redrawn at the window start, which is then
 *    aligned with an event (the run of failures starts fresh); the end is
 *    open (trailing failures belong to no sample), so open_end = true.
 *  - Open both ends: the sampler simply continues from the previous window.
 *
 * Tolerance: the interval is conservative, true coverage >= 0.95. The
 * observed coverage over NREP = 10000 replays has SD sqrt(.95 * .05 / NREP)
 * = 0.0022; the test accepts >= 0.95 - 3 SD = 0.9435 (a one-sided 0.13%
 * false alarm per check for an interval exactly at 0.95).
 *
 * The same data show why the compensation exists: ignoring the open end
 * (closed interval, s samples for the upper bound) undercovers when
 * samples are few; the test asserts that it fails the criterion at an
 * expected 2 samples.
 */
#include "aptest.h"

#include <stdlib.h>

#include "allocprof/estimate.h"
#include "allocprof/prng.h"
#include "allocprof/sampler.h"

#define NREP 10000
#define RATE 4096
#define COVER_MIN (0.95 - 3 * 0.0022)

typedef struct window {
	uint64_t *sizes;
	size_t n;
	double truth;
} window;

/* A window whose expected sample count is about lambda. */
static int make_window(double lambda, uint64_t seed, window *w)
{
	ap_prng r;
	ap_prng_seed(&r, seed);
	size_t cap = 64;
	w->sizes = malloc(cap * sizeof *w->sizes);
	w->n = 0;
	w->truth = 0;
	double expected = 0;
	while (w->sizes && expected < lambda) {
		if (w->n == cap) {
			cap *= 2;
			uint64_t *g = realloc(w->sizes, cap * sizeof *g);
			if (!g)
				break;
			w->sizes = g;
		}
		uint64_t z = ap_prng_below(&r, 50) ? 8 + ap_prng_below(&r, 121)
						   : 4096 + ap_prng_below(&r, 12289);
		w->sizes[w->n++] = z;
		w->truth += (double)z;
		expected += ap_prob_sampled(z, RATE);
	}
	return w->sizes && expected >= lambda ? 0 : -1;
}

typedef struct coverage {
	size_t open_end, both_open, closed, report;
} coverage;

static bool covers(const ap_interval *iv, double t)
{
	return iv->lo <= t && t <= iv->hi;
}

/*
 * One replay: samples, u = sum(size - offset), HT bytes and variance. With
 * fresh = true the gap is redrawn first (window start aligned).
 */
static void replay(const window *w, ap_sampler *s, bool fresh,
		   uint64_t *samples, double *u, ap_ht *ht)
{
	if (fresh)
		ap_sampler_redraw(s);
	*samples = 0;
	*u = 0;
	*ht = (ap_ht){0};
	for (size_t i = 0; i < w->n; i++) {
		if (!ap_sampler_should_sample(s, w->sizes[i]))
			continue;
		ap_sample_info info;
		ap_sampler_sample(s, w->sizes[i], &info);
		if (!info.count)
			continue;
		(*samples)++;
		*u += (double)(info.size - info.offset);
		ap_ht_add(ht, (double)info.size, ap_prob_sampled(info.size, RATE));
	}
}

static int run_window(double lambda, uint64_t seed, coverage *c)
{
	window w;
	if (make_window(lambda, seed, &w))
		return -1;
	ap_sampler s;
	ap_sampler_config cfg;
	ap_sampler_config_default(&cfg);
	cfg.rate = RATE;
	cfg.seed = seed;
	if (ap_sampler_init(&s, &cfg))
		return -1;
	*c = (coverage){0};
	uint64_t k;
	double u;
	ap_ht ht;
	ap_interval iv;
	for (int i = 0; i < NREP; i++) {
		replay(&w, &s, true, &k, &u, &ht);
		if (ap_nb_interval(k, u, RATE, 0.95, false, true, &iv))
			return -1;
		c->open_end += covers(&iv, w.truth);
		if (ap_nb_interval(k, u, RATE, 0.95, false, false, &iv))
			return -1;
		c->closed += covers(&iv, w.truth);
	}
	for (int i = 0; i < NREP; i++) {
		replay(&w, &s, false, &k, &u, &ht);
		if (ap_nb_interval(k, u, RATE, 0.95, true, true, &iv))
			return -1;
		c->both_open += covers(&iv, w.truth);
		if (ap_bytes_interval(k, u, RATE, ht.bytes, ht.var_bytes, 0.95,
				      &iv, NULL))
			return -1;
		c->report += covers(&iv, w.truth);
	}
	printf("  lambda %6.2f (%5zu allocations): NB open end %.4f, both open "
	       "%.4f, uncompensated %.4f, report %.4f\n",
	       lambda, w.n, (double)c->open_end / NREP,
	       (double)c->both_open / NREP, (double)c->closed / NREP,
	       (double)c->report / NREP);
	free(w.sizes);
	return 0;
}

static void check_lambda(double lambda, uint64_t seed)
{
	coverage c;
	AP_CHECK(run_window(lambda, seed, &c) == 0);
	AP_CHECK_MSG((double)c.open_end / NREP >= COVER_MIN, "open end %.4f",
		     (double)c.open_end / NREP);
	AP_CHECK_MSG((double)c.both_open / NREP >= COVER_MIN, "both open %.4f",
		     (double)c.both_open / NREP);
	/*
	 * What reports print: NB below 100 samples, HT above. HT covers a
	 * little under 0.95 near the switch (skewed weights: ~0.945 at 100+
	 * samples), so the report band is the HT acceptance band's floor.
	 */
	AP_CHECK_MSG((double)c.report / NREP >= 0.94, "report %.4f",
		     (double)c.report / NREP);
}

AP_TEST(nb_covers_with_a_quarter_sample)
{
	check_lambda(0.25, 11);
}

AP_TEST(nb_covers_with_one_sample)
{
	check_lambda(1, 12);
}

AP_TEST(nb_covers_with_eight_samples)
{
	check_lambda(8, 13);
}

AP_TEST(nb_covers_with_thirty_samples)
{
	check_lambda(30, 14);
}

AP_TEST(nb_covers_with_ninety_samples)
{
	check_lambda(90, 15);
}

AP_TEST(report_interval_covers_with_two_hundred_samples)
{
	check_lambda(200, 16);
}

/* Without [R4]'s compensation the few-sample interval undercovers. */
AP_TEST(uncompensated_interval_undercovers)
{
	coverage c;
	AP_CHECK(run_window(2, 21, &c) == 0);
	AP_CHECK_MSG((double)c.closed / NREP < COVER_MIN,
		     "uncompensated coverage %.4f passed", (double)c.closed / NREP);
}
