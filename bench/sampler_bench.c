/*
 * sampler_bench.c: cost of the sampler's fast path, of one gap draw, and of
 * the combined limit in a bump allocator. Driven by bench/suites/sampler.sh.
 *
 *     sampler_bench KERNEL N     run one kernel N times (for callgrind: the
 *                                suite runs two N and divides the difference
 *                                of instruction counts by the difference of N,
 *                                which cancels start-up and loop set-up)
 *     sampler_bench time RUNS N  wall-clock ns per gap draw, geometric and
 *                                exponential alternated RUNS times (paired),
 *                                printed as JSON
 *
 * Kernels:
 *   bare        a loop over a ring of sizes that consumes each size
 *   sample      the same loop plus ap_sampler_should_sample, R = 2^56, so the
 *               slow path never runs in practice (counted and printed)
 *   sample_pt   the same with ap_sampler_should_sample_pt, passthrough on
 *   gap_geo     N exact geometric gap draws
 *   gap_exp     N exponential gap draws
 *   bump_plain  a bump allocator's fast path against its limit
 *   bump_comb   the same against ap_bump's combined_limit (R = 2^56)
 * The bump kernels hand out fake addresses from one huge region, so the
 * loop is all fast path and no memory is touched.
 *
 * The empty asm with a "memory" clobber makes each iteration consume the
 * size and forces the sampler's counter back to memory, as in a malloc hook
 * where the counter lives in thread-local storage between calls.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocprof/sampler.h"

#define RING 4096
static size_t sizes[RING];

#define CONSUME(x) __asm__ volatile("" : : "r"(x) : "memory")

static void make_sizes(void)
{
	ap_prng r;
	ap_prng_seed(&r, 1);
	for (int i = 0; i < RING; i++)
		sizes[i] = 1 + (size_t)ap_prng_below(&r, 256);
}

static ap_sampler make_sampler(uint64_t rate, ap_gap_kind gap, bool passthrough)
{
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	c.rate = rate;
	c.gap = gap;
	c.passthrough = passthrough;
	c.seed = 7;
	ap_sampler s;
	if (ap_sampler_init(&s, &c) != 0) {
		fprintf(stderr, "sampler_bench: ap_sampler_init failed\n");
		exit(2);
	}
	return s;
}

static unsigned long slow_calls;

__attribute__((noinline)) static void slow(ap_sampler *s, size_t z)
{
	ap_sample_info info;
	ap_sampler_sample(s, z, &info);
	slow_calls++;
}

__attribute__((noinline)) static void k_bare(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		size_t z = sizes[i & (RING - 1)];
		CONSUME(z);
	}
}

/* One loop for both fast paths; each kernel is a specialised copy. */
static inline __attribute__((always_inline)) void sample_loop(ap_sampler *s, uint64_t n,
							      bool pt)
{
	for (uint64_t i = 0; i < n; i++) {
		size_t z = sizes[i & (RING - 1)];
		CONSUME(z);
		if (pt ? ap_sampler_should_sample_pt(s, z) : ap_sampler_should_sample(s, z))
			slow(s, z);
	}
}

__attribute__((noinline)) static void k_sample(ap_sampler *s, uint64_t n)
{
	sample_loop(s, n, false);
}

__attribute__((noinline)) static void k_sample_pt(ap_sampler *s, uint64_t n)
{
	sample_loop(s, n, true);
}

__attribute__((noinline)) static uint64_t k_gap(ap_sampler *s, uint64_t n)
{
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += ap_sampler_next_gap(s);
	return acc;
}

/* Bump fast paths. One region of 2^46 fake bytes: never exhausted. */
#define REGION_LO ((uintptr_t)1 << 20)
#define REGION_HI (REGION_LO + ((uintptr_t)1 << 46))

typedef struct plain_bump {
	uintptr_t ptr, limit;
} plain_bump;

typedef struct comb_bump {
	ap_bump b;
	ap_sampler s;
} comb_bump;

__attribute__((noinline)) static uintptr_t plain_slow(void *ctx, size_t z)
{
	plain_bump *b = ctx;
	slow_calls++;
	b->ptr = REGION_LO + z; /* a "refill": never reached in this kernel */
	return REGION_LO;
}

__attribute__((noinline)) static uintptr_t comb_slow(void *ctx, size_t z)
{
	comb_bump *c = ctx;
	ap_sample_info info;
	slow_calls++;
	unsigned hit = ap_bump_slow(&c->b, &c->s, z, &info);
	if (hit & AP_BUMP_REFILL)
		ap_bump_reset(&c->b, &c->s, REGION_LO, REGION_HI);
	return ap_bump_place(&c->b, &c->s, z);
}

/* The bump fast path against *bound: the real limit or the combined one. */
static inline __attribute__((always_inline)) void
bump_loop(uintptr_t *ptr, const uintptr_t *bound, uintptr_t (*slow_path)(void *, size_t),
	  void *ctx, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		size_t z = sizes[i & (RING - 1)];
		uintptr_t p;
		if (AP_LIKELY(z <= *bound - *ptr)) {
			p = *ptr;
			*ptr = p + z;
		} else {
			p = slow_path(ctx, z);
		}
		CONSUME(p);
	}
}

__attribute__((noinline)) static void k_bump_plain(plain_bump *b, uint64_t n)
{
	bump_loop(&b->ptr, &b->limit, plain_slow, b, n);
}

__attribute__((noinline)) static void k_bump_comb(comb_bump *c, uint64_t n)
{
	bump_loop(&c->b.ptr, &c->b.combined_limit, comb_slow, c, n);
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Paired runs of both kinds, RUNS times; medians of each and
 * of the per-pair ratio, which cancels most machine-load drift. */
static int time_gaps(int runs, uint64_t n)
{
	enum { MAXRUNS = 101 };
	if (runs < 1 || runs > MAXRUNS) {
		fprintf(stderr, "sampler_bench: RUNS must be 1..%d\n", MAXRUNS);
		return 1;
	}
	double geo[MAXRUNS], exp_[MAXRUNS], ratio[MAXRUNS];
	ap_sampler sg = make_sampler(AP_SAMPLER_DEFAULT_RATE, AP_GAP_GEOMETRIC, false);
	ap_sampler se = make_sampler(AP_SAMPLER_DEFAULT_RATE, AP_GAP_EXPONENTIAL, false);
	uint64_t sink = k_gap(&sg, n / 10) + k_gap(&se, n / 10); /* warm up */
	for (int r = 0; r < runs; r++) {
		/* Alternate which kind goes first, so that neither always runs
		 * in the other's cache and frequency wake. */
		ap_sampler *first = r % 2 ? &se : &sg, *second = r % 2 ? &sg : &se;
		double t0 = now_ns();
		sink += k_gap(first, n);
		double t1 = now_ns();
		sink += k_gap(second, n);
		double t2 = now_ns();
		double a = (t1 - t0) / (double)n, b = (t2 - t1) / (double)n;
		geo[r] = r % 2 ? b : a;
		exp_[r] = r % 2 ? a : b;
		ratio[r] = geo[r] / exp_[r];
	}
	printf("{\"runs\":%d,\"draws_per_run\":%llu,\"geometric_ns\":%.3f,"
	       "\"exponential_ns\":%.3f,\"ratio_geo_over_exp\":%.4f,\"sink\":%llu}\n",
	       runs, (unsigned long long)n, median(geo, runs), median(exp_, runs),
	       median(ratio, runs), (unsigned long long)(sink & 1));
	return 0;
}

static uint64_t parse_count(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || s[0] == '-' || v == 0) {
		fprintf(stderr, "sampler_bench: expected a positive count, got '%s'\n", s);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "time"))
		return time_gaps((int)parse_count(argv[2]), parse_count(argv[3]));
	if (argc != 3) {
		fprintf(stderr, "usage: sampler_bench KERNEL N | sampler_bench time RUNS N\n"
				"kernels: bare sample sample_pt gap_geo gap_exp bump_plain bump_comb\n");
		return 1;
	}
	const char *k = argv[1];
	uint64_t n = parse_count(argv[2]);
	make_sizes();
	uint64_t sink = 0;
	if (!strcmp(k, "bare")) {
		k_bare(n);
	} else if (!strcmp(k, "sample") || !strcmp(k, "sample_pt")) {
		bool pt = !strcmp(k, "sample_pt");
		ap_sampler s = make_sampler(AP_SAMPLER_RATE_MAX, AP_GAP_GEOMETRIC, pt);
		if (pt)
			k_sample_pt(&s, n);
		else
			k_sample(&s, n);
	} else if (!strcmp(k, "gap_geo") || !strcmp(k, "gap_exp")) {
		ap_gap_kind g = !strcmp(k, "gap_geo") ? AP_GAP_GEOMETRIC : AP_GAP_EXPONENTIAL;
		ap_sampler s = make_sampler(AP_SAMPLER_DEFAULT_RATE, g, false);
		sink = k_gap(&s, n);
	} else if (!strcmp(k, "bump_plain")) {
		plain_bump b = {REGION_LO, REGION_HI};
		k_bump_plain(&b, n);
	} else if (!strcmp(k, "bump_comb")) {
		comb_bump c;
		c.s = make_sampler(AP_SAMPLER_RATE_MAX, AP_GAP_GEOMETRIC, false);
		ap_bump_init(&c.b, &c.s, REGION_LO, REGION_HI);
		k_bump_comb(&c, n);
	} else {
		fprintf(stderr, "sampler_bench: unknown kernel '%s'\n", k);
		return 1;
	}
	printf("%s %llu slow_calls=%lu sink=%llu\n", k, (unsigned long long)n, slow_calls,
	       (unsigned long long)(sink & 1));
	return 0;
}
