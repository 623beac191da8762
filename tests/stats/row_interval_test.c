/*
 * row_interval_test.c: coverage of the row intervals (ap_row_bytes_interval,
 * ap_row_objects_interval: the effective-sample-size rule of
 * docs/STATISTICS.md section 5) with the REAL sampler (allocprof/sampler.h).
 *
 * The mixes: 110 objects of 16 MiB (pi = 1 - e^-32) plus k R bytes
 * of 64-byte objects, R = 512 KiB, k = 1, 2, 4, 8. The row has >= 110
 * samples, so the legacy switch (AP_NB_MAX_SAMPLES, ap_bytes_interval) uses
 * the normal interval although nearly all the variance sits in the ~k
 * small-object samples: it covered 0.63, 0.86, 0.91, 0.89. The test
 * measures the legacy interval in the same replays and asserts it
 * undercovers at k = 1 (that is the bug), and asserts the new rule covers
 * >= 0.94 at every k (the bar).
 *
 * Then the populations the older Monte Carlo suites use (all-small,
 * all-large, mixed 16 B..1 MiB, 100 B / 102400 B alternating, one size
 * R ln 2: tests/stats/ht_estimator_test.c), one size at several expected
 * sample counts, and mixed 8-128 B / 4-16 KiB sites
 * (tests/stats/objects_interval_test.c) go through the new rule.
 *
 * Tolerance: with N replays a 95% interval's observed coverage is
 * Binomial(N, 0.95)/N, sd sqrt(0.95 * 0.05 / N) (0.0034 at N = 4000,
 * 0.0049 at N = 2000). Bytes must cover >= 0.95 - 3 sd on the old
 * populations; the mixes >= 0.94 (the bar; the measured
 * values are printed and quoted in docs/STATISTICS.md). Where the normal
 * interval is used in most replays, coverage must also stay below
 * 0.95 + 3 sd + 0.01 (normal approximation), so the rule is not merely
 * wide. Objects: >= 0.95 - 3 sd for one size and the old populations,
 * counted over replays that sampled the row; the mixes print
 * objects coverage (a row whose small objects all went unseen cannot
 * bound them without knowing the smallest size it may hold: with
 * z_min = 64 given, asserted >= 0.94 too).
 * Fixed seeds; ~15 s in a release build.
 */
#include "aptest.h"
#include "stats_patterns.h"

#include <stdlib.h>

#include "allocprof/estimate.h"
#include "allocprof/prng.h"
#include "allocprof/sampler.h"


typedef struct pop {
	const char *name;
	uint64_t rate;
	size_t n;
	uint64_t *sizes;
	uint64_t z_min; /* passed to the objects interval (0 = unknown) */
} pop;

typedef struct cover {
	unsigned n, bytes, bytes_legacy, objects, objects_legacy, objects_n,
		normal, split, nb;
} cover;

static double truth_bytes(const pop *p)
{
	double t = 0;
	for (size_t i = 0; i < p->n; i++)
		t += (double)p->sizes[i];
	return t;
}

/* Replay p nrep times through one sampler and count coverage. */
static int run(const pop *p, unsigned nrep, uint64_t seed, cover *c)
{
	ap_sampler_config cfg;
	ap_sampler_config_default(&cfg);
	cfg.rate = p->rate;
	cfg.seed = seed;
	ap_sampler s;
	if (ap_sampler_init(&s, &cfg))
		return -1;
	double tb = truth_bytes(p), to = (double)p->n;
	*c = (cover){0};
	for (unsigned r = 0; r < nrep; r++) {
		ap_ht ht = {0};
		double u = 0;
		for (size_t i = 0; i < p->n; i++) {
			uint64_t z = p->sizes[i];
			if (!ap_sampler_should_sample(&s, z))
				continue;
			ap_sample_info info;
			ap_sampler_sample(&s, z, &info);
			if (!info.count)
				continue;
			ap_ht_add(&ht, (double)z, info.prob);
			u += (double)(z - info.offset);
		}
		ap_row row;
		ap_row_from_ht(&ht, u, (double)p->rate, &row);
		row.z_min = p->z_min;
		ap_interval ib, il, io, iol;
		ap_ci_method mb, mo;
		bool nb;
		if (ap_row_bytes_interval(&row, 0.95, &ib, &mb) ||
		    ap_row_objects_interval(&row, 0.95, &io, &mo) ||
		    ap_bytes_interval(ht.samples, u, (double)p->rate, ht.bytes,
				      ht.var_bytes, 0.95, &il, &nb) ||
		    ap_objects_interval(ht.samples, ht.objects, ht.var_objects,
					0.95, &iol))
			return -1;
		c->n++;
		c->bytes += ib.lo <= tb && tb <= ib.hi;
		c->bytes_legacy += il.lo <= tb && tb <= il.hi;
		c->normal += mb == AP_CI_NORMAL;
		c->split += mb == AP_CI_SPLIT;
		c->nb += mb == AP_CI_NB;
		if (ht.samples) {
			c->objects_n++;
			c->objects += io.lo <= to && to <= io.hi;
			c->objects_legacy += iol.lo <= to && to <= iol.hi;
		}
	}
	return 0;
}

static double frac(unsigned k, unsigned n)
{
	return n ? (double)k / n : 1.0;
}

static double sd_of(unsigned n)
{
	return sqrt(0.95 * 0.05 / n);
}

static void print(const pop *p, const cover *c)
{
	printf("# %-16s bytes %.4f (legacy %.4f) objects %.4f (legacy %.4f) "
	       "of %u; normal %u split %u nb %u of %u\n",
	       p->name, frac(c->bytes, c->n), frac(c->bytes_legacy, c->n),
	       frac(c->objects, c->objects_n),
	       frac(c->objects_legacy, c->objects_n), c->objects_n, c->normal,
	       c->split, c->nb, c->n);
}

/* The mix: 110 x 16 MiB then k R bytes of 64 B objects. */
static int make_mix(unsigned k, uint64_t z_min, pop *p)
{
	const uint64_t R = 524288, big = 16u << 20, nbig = 110;
	uint64_t nsmall = k * R / 64;
	p->name = "mix";
	p->rate = R;
	p->n = nbig + nsmall;
	p->z_min = z_min;
	p->sizes = malloc(p->n * sizeof *p->sizes);
	if (!p->sizes)
		return -1;
	/* Large objects spread through the stream, as a real site would. */
	for (size_t i = 0; i < p->n; i++)
		p->sizes[i] = 64;
	for (size_t j = 0; j < nbig; j++)
		p->sizes[j * (p->n / nbig)] = big;
	return 0;
}

AP_TEST(mixes_of_near_certain_large_and_small_objects_cover)
{
	static const unsigned ks[] = {1, 2, 4, 8};
	enum { NREP = 4000 };
	for (size_t i = 0; i < 4; i++) {
		pop p;
		AP_CHECK(make_mix(ks[i], 0, &p) == 0);
		cover c;
		int rc = run(&p, NREP, 7100 + ks[i], &c);
		pop p64 = p;
		p64.z_min = 64;
		cover c64;
		if (rc == 0)
			rc = run(&p64, NREP, 7100 + ks[i], &c64);
		free(p.sizes);
		AP_CHECK(rc == 0);
		printf("# k = %u: ", ks[i]);
		print(&p, &c);
		printf("#        objects with z_min = 64: %.4f\n",
		       frac(c64.objects, c64.objects_n));
		AP_CHECK_MSG(frac(c.bytes, c.n) >= 0.94, "k = %u: bytes %.4f",
			     ks[i], frac(c.bytes, c.n));
		AP_CHECK_MSG(frac(c64.objects, c64.objects_n) >= 0.94,
			     "k = %u: objects (z_min 64) %.4f", ks[i],
			     frac(c64.objects, c64.objects_n));
		/* The bug being fixed: the raw-count switch undercovers. */
		if (ks[i] == 1)
			AP_CHECK_MSG(frac(c.bytes_legacy, c.n) < 0.9,
				     "legacy %.4f", frac(c.bytes_legacy, c.n));
	}
}

/* The populations of tests/stats/ht_estimator_test.c. */
static int make_old(int which, pop *p)
{
	p->z_min = 0;
	return stats_pattern_make(which, &p->name, &p->rate, &p->n, &p->sizes);
}

/*
 * objects_floor < 0: the objects coverage must reach 0.95 - 3 sd; else
 * that floor (0 = not asserted). Mixed sizes get 0.92, the guard of
 * tests/stats/objects_interval_test.c: an objects interval cannot know the
 * weight of small objects no sample showed (docs/STATISTICS.md section 4).
 */
static void check(const pop *p, const cover *c, double objects_floor)
{
	print(p, c);
	double sd = sd_of(c->n);
	AP_CHECK_MSG(frac(c->bytes, c->n) >= 0.95 - 3 * sd, "%s bytes %.4f",
		     p->name, frac(c->bytes, c->n));
	if (c->normal > c->n / 2)
		AP_CHECK_MSG(frac(c->bytes, c->n) <= 0.96 + 3 * sd,
			     "%s bytes %.4f (too wide)", p->name,
			     frac(c->bytes, c->n));
	double so = objects_floor < 0 ? 0.95 - 3 * sd_of(c->objects_n)
				      : objects_floor;
	AP_CHECK_MSG(frac(c->objects, c->objects_n) >= so,
		     "%s objects %.4f", p->name,
		     frac(c->objects, c->objects_n));
}

AP_TEST(the_older_suites_populations_still_cover)
{
	for (int w = 0; w < 5; w++) {
		pop p;
		AP_CHECK(make_old(w, &p) == 0);
		cover c;
		int rc = run(&p, 4000, 7200 + (uint64_t)w, &c);
		free(p.sizes);
		AP_CHECK(rc == 0);
		/* Periodic: 80 objects of 100 B, 0.08 expected samples, are
		 * invisible; mixed: see check(). */
		check(&p, &c, w == 3 ? 0 : w == 2 ? 0.92 : -1);
	}
}

/*
 * One size at 0.5 to 150 expected samples, from small (pi ~ 1/64) to nearly
 * certain (pi = 0.97, where a missed object moves the estimate by a whole
 * object while the variance estimate stays tiny), and
 * tests/stats/objects_interval_test.c's mixed sites (98% 8-128 B, 2%
 * 4-16 KiB).
 */
AP_TEST(one_size_and_mixed_sites_at_few_to_many_samples)
{
	static const uint64_t sizes[] = {64, 2839, 14362};
	static const double lambdas[] = {0.5, 3, 10, 40, 150};
	const uint64_t rate = 4096;
	for (size_t a = 0; a < 4; a++) {
		for (size_t b = 0; b < 5; b++) {
			ap_prng r;
			ap_prng_seed(&r, 31 * a + b + 1);
			pop p = {a < 3 ? "one size" : "mixed 2%", rate, 0, NULL,
				 0};
			double lam = 0;
			size_t cap = 0;
			while (lam < lambdas[b]) {
				if (p.n == cap) {
					cap = cap ? 2 * cap : 64;
					uint64_t *g = realloc(p.sizes, cap * sizeof *g);
					AP_CHECK(g);
					p.sizes = g;
				}
				uint64_t z = a < 3 ? sizes[a]
					     : ap_prng_below(&r, 50)
						 ? stats_uniform_size(&r, 8, 128)
						 : stats_uniform_size(&r, 4096, 16384);
				p.sizes[p.n++] = z;
				lam += ap_prob_sampled(z, (double)rate);
			}
			cover c;
			int rc = run(&p, 2000, 7300 + 10 * a + b, &c);
			free(p.sizes);
			AP_CHECK(rc == 0);
			printf("# size %llu, %g expected samples:",
			       a < 3 ? (unsigned long long)sizes[a] : 0ull,
			       lambdas[b]);
			/* A mixed site with < 10 expected samples usually has
			 * its small objects unseen: documented, not asserted
			 * for objects (as in objects_interval_test.c). */
			check(&p, &c, a < 3 ? -1 : lambdas[b] < 10 ? 0 : 0.92);
		}
	}
}

/*
 * tests/stats/report_coverage_test.c's sites, each alone at R = 512 KiB:
 * 16 B, 64 B, 4 KiB, 100 KiB, R ln 2, 1 MiB, and 512 B objects beside three
 * near-certain 4 MiB ones (a split row). Bytes >= 0.95 - 3 sd over all
 * replays; objects over the replays that sampled the site, mixed sizes
 * guarded at 0.92 as above.
 */
AP_TEST(the_report_suites_sites_cover)
{
	static const struct {
		const char *name;
		uint64_t size, count, big, nbig;
	} site[] = {
		{"tiny", 16, 60000, 0, 0},     {"small", 64, 20000, 0, 0},
		{"page", 4096, 2000, 0, 0},    {"medium", 102400, 300, 0, 0},
		{"rln2", 363409, 40, 0, 0},    {"big", 1 << 20, 30, 0, 0},
		{"mixed", 512, 20000, 4 << 20, 3},
	};
	for (size_t i = 0; i < sizeof site / sizeof site[0]; i++) {
		pop p = {site[i].name, 524288, site[i].count + site[i].nbig,
			 NULL, 0};
		p.sizes = malloc(p.n * sizeof *p.sizes);
		AP_CHECK(p.sizes);
		for (size_t j = 0; j < p.n; j++)
			p.sizes[j] = site[i].size;
		for (uint64_t j = 0; j < site[i].nbig; j++)
			p.sizes[j * (p.n / site[i].nbig)] = site[i].big;
		cover c;
		int rc = run(&p, 2000, 7400 + i, &c);
		free(p.sizes);
		AP_CHECK(rc == 0);
		check(&p, &c, site[i].nbig ? 0.92 : -1);
	}
}
