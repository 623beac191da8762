/*
 * timeline_test.c: the time extensions' layouts (allocprof/timeline.h):
 * round trips, every truncation and bad input refused with a reason, and
 * the binned Kaplan-Meier (ap_life_km_binned) against the same blocks
 * given one by one.
 */
#include "aptest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/lifetime.h"
#include "allocprof/timeline.h"

static const uint64_t addrs_a[] = {0x401000, 0x402000, 0x403000};
static const uint64_t addrs_b[] = {0x7f0000001234};
static const ap_tl_stack stacks[] = {{addrs_a, 3}, {addrs_b, 1}};

static ap_heap_sums sums(double space, uint64_t samples)
{
	ap_heap_sums s;
	memset(&s, 0, sizeof s);
	s.space = space;
	s.objects = space / 100;
	s.space_var = space * 512;
	s.objects_var = 3.5;
	s.u = 17;
	s.usable = space * 1.25;
	s.space_var2 = 1e12;
	s.objects_var2 = 0.25;
	s.samples = samples;
	s.exact = samples / 2;
	return s;
}

static int same_sums(const ap_heap_sums *a, const ap_heap_sums *b)
{
	return !memcmp(a, b, sizeof *a);
}

AP_TEST(timeline_round_trip)
{
	ap_tl_site s0[2] = {{0, 512, sums(4096, 3)}, {1, 1024, sums(100, 1)}};
	ap_tl_site s1[1] = {{1, 512, sums(8192, 7)}};
	ap_tl_point pts[2] = {{1000, sums(5000, 5), sums(804, 1), s0, 2},
			      {2000000000, sums(9000, 9), sums(808, 2), s1, 1}};
	ap_timeline tl = {.period = 512, .cadence_ns = 1000000000, .candidates = 3,
			  .max_space = 9100.5,
			  .stacks = stacks, .nstacks = 2, .points = pts, .npoints = 2};
	unsigned char *enc;
	size_t len, cap;
	AP_CHECK_EQ_INT(ap_timeline_encode(&tl, NULL, &enc, &len, &cap), 0);
	ap_timeline *d;
	char err[200];
	AP_CHECK_EQ_INT(ap_timeline_decode(enc, len, NULL, &d, err, sizeof err), 0);
	AP_CHECK_EQ_U64(d->version, AP_TIMELINE_VERSION);
	AP_CHECK_EQ_U64(d->period, 512);
	AP_CHECK_EQ_U64(d->cadence_ns, 1000000000);
	AP_CHECK_EQ_U64(d->candidates, 3);
	AP_CHECK_NEAR(d->max_space, 9100.5, 0, 0);
	AP_CHECK_EQ_U64(d->nstacks, 2);
	AP_CHECK_EQ_U64(d->stacks[0].depth, 3);
	AP_CHECK_EQ_U64(d->stacks[0].addrs[2], 0x403000);
	AP_CHECK_EQ_U64(d->stacks[1].addrs[0], 0x7f0000001234);
	AP_CHECK_EQ_U64(d->npoints, 2);
	AP_CHECK_EQ_U64(d->points[1].t_ns, 2000000000);
	AP_CHECK_EQ_U64(d->points[0].nsites, 2);
	AP_CHECK_EQ_U64(d->points[0].sites[1].stack, 1);
	AP_CHECK_EQ_U64(d->points[0].sites[1].rate, 1024);
	AP_CHECK(same_sums(&d->points[0].sites[0].inuse, &s0[0].inuse));
	AP_CHECK(same_sums(&d->points[1].total, &pts[1].total));
	AP_CHECK(same_sums(&d->points[1].other, &pts[1].other));
	ap_timeline_free(d);
	/* Every proper prefix is refused, with a reason, never read past. */
	for (size_t n = 0; n < len; n++) {
		err[0] = 0;
		AP_CHECK_EQ_INT(ap_timeline_decode(enc, n, NULL, &d, err, sizeof err),
				AP_ECORRUPT);
		AP_CHECK(err[0] != 0);
	}
	/* Another version. */
	enc[0] = 2;
	AP_CHECK_EQ_INT(ap_timeline_decode(enc, len, NULL, &d, err, sizeof err),
			AP_EVERSION);
	free(enc);
	/* A site naming a stack that is not there cannot be written. */
	s1[0].stack = 2;
	AP_CHECK_EQ_INT(ap_timeline_encode(&tl, NULL, &enc, &len, &cap), AP_EINVAL);
}

AP_TEST(timeline_bad_input)
{
	ap_timeline *d;
	char err[200];
	/* version 1, period, cadence, candidates, maximum 0.0, 1 stack of
	 * depth 1 at 5, then a point count far beyond the bytes left */
	const unsigned char huge[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				      1, 1, 5, 0xff, 0xff, 0xff, 0x0f};
	AP_CHECK_EQ_INT(ap_timeline_decode(huge, sizeof huge, NULL, &d, err, sizeof err),
			AP_ECORRUPT);
	/* a varint that is not in its shortest form */
	const unsigned char overlong[] = {0x81, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					  0, 0, 0, 0};
	AP_CHECK_EQ_INT(ap_timeline_decode(overlong, sizeof overlong, NULL, &d, err,
					   sizeof err), AP_ECORRUPT);
	/* trailing bytes */
	const unsigned char trail[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				       0, 0, 9};
	AP_CHECK_EQ_INT(ap_timeline_decode(trail, sizeof trail, NULL, &d, err, sizeof err),
			AP_ECORRUPT);
	/* the empty timeline decodes */
	AP_CHECK_EQ_INT(ap_timeline_decode(trail, sizeof trail - 1, NULL, &d, err,
					   sizeof err), 0);
	AP_CHECK_EQ_U64(d->npoints, 0);
	ap_timeline_free(d);
	AP_CHECK_EQ_INT(ap_timeline_decode(NULL, 3, NULL, &d, err, sizeof err), AP_EINVAL);
}

AP_TEST(lifetimes_round_trip)
{
	ap_lt_bin freed[2] = {{1000, 1063, 3, 3, 3, 300, 0},
			      {5000, 5255, 2, 40, 800, 4000, 7e5}};
	ap_lt_bin live[1] = {{90000, 94095, 1, 64, 4096, 6400, 4e6}};
	ap_lt_site sites[2] = {{0, 512, freed, 2, live, 1}, {1, 64, NULL, 0, live, 1}};
	ap_lifetimes lt = {.t_ns = 123456789, .stacks = stacks, .nstacks = 2,
			   .sites = sites, .nsites = 2};
	unsigned char *enc;
	size_t len, cap;
	AP_CHECK_EQ_INT(ap_lifetimes_encode(&lt, NULL, &enc, &len, &cap), 0);
	ap_lifetimes *d;
	char err[200];
	AP_CHECK_EQ_INT(ap_lifetimes_decode(enc, len, NULL, &d, err, sizeof err), 0);
	AP_CHECK_EQ_U64(d->t_ns, 123456789);
	AP_CHECK_EQ_U64(d->nsites, 2);
	AP_CHECK_EQ_U64(d->sites[0].nfreed, 2);
	AP_CHECK_EQ_U64(d->sites[0].freed[1].t_lo, 5000);
	AP_CHECK_EQ_U64(d->sites[0].freed[1].t_hi, 5255);
	AP_CHECK_NEAR(d->sites[0].freed[1].w2, 800, 0, 0);
	AP_CHECK_EQ_U64(d->sites[1].nfreed, 0);
	AP_CHECK_EQ_U64(d->sites[1].nlive, 1);
	AP_CHECK_NEAR(d->sites[1].live[0].bytes_var, 4e6, 0, 0);
	ap_lifetimes_free(d);
	for (size_t n = 0; n < len; n++)
		AP_CHECK_EQ_INT(ap_lifetimes_decode(enc, n, NULL, &d, err, sizeof err),
				AP_ECORRUPT);
	free(enc);
	/* bins out of order are refused */
	ap_lt_bin swapped[2] = {freed[1], freed[0]};
	sites[0].freed = swapped;
	AP_CHECK_EQ_INT(ap_lifetimes_encode(&lt, NULL, &enc, &len, &cap), 0);
	AP_CHECK_EQ_INT(ap_lifetimes_decode(enc, len, NULL, &d, err, sizeof err),
			AP_ECORRUPT);
	free(enc);
}

/*
 * A bin standing for k blocks of weight w each (weight k w, weight_sq
 * k w^2) gives exactly the curve and intervals of the k blocks given
 * one by one: the risk sets add the same weights and the variance the
 * same squared weights.
 */
AP_TEST(km_binned_equals_blocks)
{
	ap_life_obs one[12], bin[4];
	double w2[4];
	const double t[4] = {1, 2, 3, 4}, w[4] = {1, 8, 3, 2};
	const int k[4] = {2, 3, 4, 3};
	const bool cens[4] = {false, false, true, false};
	size_t n = 0;
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < k[i]; j++)
			one[n++] = (ap_life_obs){t[i], w[i], 8, cens[i]};
		bin[i] = (ap_life_obs){t[i], k[i] * w[i], 8 * k[i], cens[i]};
		w2[i] = k[i] * w[i] * w[i];
	}
	ap_life_summary a, b;
	AP_CHECK_EQ_INT(ap_life_km(one, n, 0.9, NULL, &a), 0);
	AP_CHECK_EQ_INT(ap_life_km_binned(bin, w2, 4, 0.9, NULL, &b), 0);
	AP_CHECK_NEAR(b.median.estimate, a.median.estimate, 0, 0);
	AP_CHECK_NEAR(b.median.lo, a.median.lo, 0, 0);
	AP_CHECK(b.median.hi == a.median.hi);
	AP_CHECK(b.q25.lo == a.q25.lo && b.q75.hi == a.q75.hi);
	AP_CHECK_NEAR(b.objects, a.objects, 1e-12, 0);
	/* a weight_sq below the weight is no sum of squares of weights >= 1 */
	w2[0] = 1;
	AP_CHECK_EQ_INT(ap_life_km_binned(bin, w2, 4, 0.9, NULL, &b), AP_EINVAL);
}
