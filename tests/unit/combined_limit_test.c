/*
 * combined_limit_test.c: the bump-allocator combined limit (ap_bump_*,
 * [R4]) samples exactly what the plain per-byte sampler samples.
 *
 * A simulated arena (fake addresses, no memory touched) serves a fixed,
 * mixed stream of sizes from 16 KiB regions, refilling when a size does not
 * fit (the rest of the region is discarded) and serving sizes above 8 KiB
 * from dedicated blocks. Its fast path compares only against
 * combined_limit. The plain sampler, same seed and config, sees the same
 * sizes through ap_sampler_should_sample_pt. Both must produce the same
 * records: same allocation indices, offsets, counts, exactness.
 *
 * Second part: discarding trials is legal only independently of their
 * outcomes ([R4], point 4). Charging the discarded tail as trials, or
 * redrawing the gap at each refill, changes which objects are sampled but
 * not the law: the fraction of sampled allocations stays pi(z). A policy
 * that looks at the pending outcome before discarding (redraw only when the
 * next success is near) biases it, and the same check catches that.
 */
#include "aptest.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "allocprof/sampler.h"

typedef struct rec {
	uint64_t index, offset, count;
	bool exact;
} rec;

typedef struct recs {
	rec *v;
	size_t n, cap;
} recs;

static bool recs_push(recs *r, uint64_t index, const ap_sample_info *info)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		rec *v = realloc(r->v, cap * sizeof *v);
		if (!v)
			return false;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (rec){index, info->offset, info->count, info->exact};
	return true;
}

static ap_sampler_config config_of(uint64_t rate, ap_gap_kind gap, ap_sample_mode mode,
				   bool passthrough, uint64_t seed)
{
	return (ap_sampler_config){.rate = rate, .gap = gap, .mode = mode,
				   .passthrough = passthrough, .seed = seed};
}

enum discard_policy {
	TAIL_UNCHARGED, /* the API's behaviour: plain-sampler equivalent */
	TAIL_SKIPPED,   /* legal: the tail's trials run and are thrown away */
	REDRAW_ALWAYS,  /* legal: fresh gap at every refill */
	REDRAW_IF_NEAR  /* illegal: fresh gap only when a success is near */
};

typedef struct arena {
	ap_bump b;
	ap_sampler s;
	uintptr_t next_addr; /* fake address space, grows only */
	size_t region, big;  /* region size; larger sizes get their own block */
	enum discard_policy policy;
	uint64_t refills, dedicated, fast;
} arena;

static uintptr_t fake_block(arena *a, size_t n)
{
	uintptr_t p = a->next_addr;
	a->next_addr += n + 4096;
	return p;
}

/* Policies other than the API's act before the slow path decides. */
static void discard_before_refill(arena *a, size_t size)
{
	if (a->policy == TAIL_UNCHARGED || size > a->big ||
	    size <= a->b.limit - a->b.ptr)
		return;
	ap_bump_sync(&a->b, &a->s);
	if (a->policy == TAIL_SKIPPED)
		ap_sampler_skip(&a->s, a->b.limit - a->b.ptr);
	else if (a->policy == REDRAW_ALWAYS)
		ap_sampler_redraw(&a->s);
	else if ((uint64_t)a->s.bytes_until_sample < a->region)
		ap_sampler_redraw(&a->s); /* peeks at the outcome: wrong */
	uintptr_t lo = fake_block(a, a->region);
	ap_bump_reset(&a->b, &a->s, lo, lo + a->region);
	a->refills++;
}

/* The arena's allocation function; records samples of allocation `index`. */
static uintptr_t arena_alloc(arena *a, size_t size, uint64_t index, recs *out, bool *oom)
{
	if (AP_LIKELY(size <= a->b.combined_limit - a->b.ptr)) {
		uintptr_t p = a->b.ptr;
		a->b.ptr = p + size;
		a->fast++;
		return p;
	}
	discard_before_refill(a, size);
	ap_sample_info info;
	unsigned hit = ap_bump_slow(&a->b, &a->s, size, &info);
	uintptr_t p;
	if ((hit & AP_BUMP_REFILL) && size > a->big) {
		p = fake_block(a, size); /* accounted already: nothing to place */
		a->dedicated++;
	} else {
		if (hit & AP_BUMP_REFILL) {
			uintptr_t lo = fake_block(a, a->region);
			ap_bump_reset(&a->b, &a->s, lo, lo + a->region);
			a->refills++;
		}
		p = ap_bump_place(&a->b, &a->s, size);
	}
	if ((hit & AP_BUMP_SAMPLE) && !recs_push(out, index, &info))
		*oom = true;
	return p;
}

static void arena_init(arena *a, const ap_sampler_config *c, size_t region,
		       enum discard_policy policy)
{
	*a = (arena){.next_addr = 0x100000, .region = region, .big = region / 2,
		     .policy = policy};
	if (ap_sampler_init(&a->s, c) != 0)
		ap_test_fail(__FILE__, __LINE__, "ap_sampler_init failed");
	uintptr_t lo = fake_block(a, region);
	ap_bump_init(&a->b, &a->s, lo, lo + region);
}

/* The fixed stream: 1% empty, 70% small, 20% medium, 5% up to the region
 * half, 4% dedicated blocks (some above the passthrough threshold). */
static size_t next_size(ap_prng *r)
{
	uint64_t k = ap_prng_below(r, 100);
	if (k < 1)
		return 0;
	if (k < 71)
		return 1 + ap_prng_below(r, 128);
	if (k < 91)
		return 129 + ap_prng_below(r, 3968);
	if (k < 96)
		return 4097 + ap_prng_below(r, 4096);
	return 8193 + ap_prng_below(r, 57344);
}

static void check_equivalence(ap_gap_kind gap, ap_sample_mode mode, bool passthrough,
			      uint64_t rate)
{
	const uint64_t n = 300000;
	ap_sampler_config c = config_of(rate, gap, mode, passthrough, 20240611);
	arena a;
	arena_init(&a, &c, 16384, TAIL_UNCHARGED);
	ap_sampler plain;
	AP_CHECK_EQ_INT(ap_sampler_init(&plain, &c), 0);
	recs got = {0}, want = {0};
	bool oom = false;
	ap_prng sizes;
	ap_prng_seed(&sizes, 99);
	uintptr_t prev_end = 0;
	for (uint64_t i = 0; i < n; i++) {
		size_t z = next_size(&sizes);
		uintptr_t p = arena_alloc(&a, z, i, &got, &oom);
		AP_CHECK(p != 0);
		AP_CHECK(p >= prev_end || z > a.big); /* no overlap in a region */
		if (z <= a.big)
			prev_end = p + z;
		if (ap_sampler_should_sample_pt(&plain, z)) {
			ap_sample_info info;
			ap_sampler_sample(&plain, z, &info);
			if (info.count > 0 && !recs_push(&want, i, &info))
				oom = true;
		}
	}
	AP_CHECK(!oom);
	/* The stream exercised what it should. */
	AP_CHECK_MSG(a.refills > 1000 && a.dedicated > 1000 && a.fast > n / 2,
		     "refills %llu dedicated %llu fast %llu", (unsigned long long)a.refills,
		     (unsigned long long)a.dedicated, (unsigned long long)a.fast);
	AP_CHECK_MSG(want.n > 1000, "only %zu samples", want.n);
	AP_CHECK_MSG(got.n == want.n, "bump arena sampled %zu allocations, plain sampler %zu",
		     got.n, want.n);
	for (size_t k = 0; k < want.n; k++) {
		AP_CHECK_EQ_U64(got.v[k].index, want.v[k].index);
		AP_CHECK_EQ_U64(got.v[k].offset, want.v[k].offset);
		AP_CHECK_EQ_U64(got.v[k].count, want.v[k].count);
		AP_CHECK(got.v[k].exact == want.v[k].exact);
	}
	/* After a sync the counters agree too: no byte charged twice or lost. */
	ap_bump_sync(&a.b, &a.s);
	AP_CHECK_EQ_INT(a.s.bytes_until_sample, plain.bytes_until_sample);
	free(got.v);
	free(want.v);
}

AP_TEST(combined_limit_matches_plain_sampler_geometric_first)
{
	check_equivalence(AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 8192);
}

AP_TEST(combined_limit_matches_plain_sampler_with_passthrough)
{
	check_equivalence(AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, true, 8192);
}

/* R = 1024: passthrough threshold 4713 < region size, so passthrough sizes
 * fit in a region and the fast path must still divert them. */
AP_TEST(combined_limit_diverts_passthrough_sizes_that_fit)
{
	check_equivalence(AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, true, 1024);
}

AP_TEST(combined_limit_matches_plain_sampler_count_mode)
{
	check_equivalence(AP_GAP_GEOMETRIC, AP_SAMPLE_COUNT, false, 8192);
}

AP_TEST(combined_limit_matches_plain_sampler_exponential_count_passthrough)
{
	check_equivalence(AP_GAP_EXPONENTIAL, AP_SAMPLE_COUNT, true, 8192);
}

AP_TEST(combined_limit_rate_one_samples_every_object)
{
	ap_sampler_config c = config_of(1, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 1);
	arena a;
	arena_init(&a, &c, 4096, TAIL_UNCHARGED);
	recs got = {0};
	bool oom = false;
	for (uint64_t i = 0; i < 5000; i++)
		arena_alloc(&a, 1 + i % 300, i, &got, &oom);
	AP_CHECK(!oom);
	AP_CHECK_EQ_U64(got.n, 5000);
	for (size_t k = 0; k < got.n; k++)
		AP_CHECK(got.v[k].index == k && got.v[k].exact);
	free(got.v);
}

AP_TEST(bump_place_rejects_what_does_not_fit)
{
	ap_sampler_config c = config_of(AP_SAMPLER_DEFAULT_RATE, AP_GAP_GEOMETRIC,
					AP_SAMPLE_FIRST, false, 2);
	ap_sampler s;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), 0);
	ap_bump b;
	ap_bump_init(&b, &s, 1000, 1100);
	AP_CHECK_EQ_U64(ap_bump_place(&b, &s, 101), 0);
	AP_CHECK_EQ_U64(b.ptr, 1000);
	AP_CHECK_EQ_U64(ap_bump_place(&b, &s, SIZE_MAX), 0);
	AP_CHECK_EQ_U64(ap_bump_place(&b, &s, 100), 1000);
	AP_CHECK_EQ_U64(b.ptr, 1100);
	AP_CHECK(b.combined_limit <= b.limit && b.combined_limit >= b.ptr);
	/* An inverted region is empty. */
	ap_bump_init(&b, &s, 5000, 10);
	AP_CHECK_EQ_U64(b.limit, 5000);
	AP_CHECK_EQ_U64(b.combined_limit, 5000);
	/* A slow path for SIZE_MAX: refill, and sampled (pi = 1). */
	ap_sample_info info;
	unsigned hit = ap_bump_slow(&b, &s, SIZE_MAX, &info);
	AP_CHECK_EQ_INT(hit, AP_BUMP_REFILL | AP_BUMP_SAMPLE);
	AP_CHECK(b.combined_limit == b.ptr);
}

AP_TEST(combined_limit_is_near_the_top_of_the_address_space)
{
	/* anchor + counter would wrap: combined_limit must saturate at limit. */
	ap_sampler_config c = config_of(AP_SAMPLER_DEFAULT_RATE, AP_GAP_GEOMETRIC,
					AP_SAMPLE_FIRST, false, 3);
	ap_sampler s;
	AP_CHECK_EQ_INT(ap_sampler_init(&s, &c), 0);
	s.bytes_until_sample = (int64_t)AP_SAMPLER_GAP_MAX;
	ap_bump b;
	ap_bump_init(&b, &s, UINTPTR_MAX - 4096, UINTPTR_MAX);
	AP_CHECK(b.combined_limit == UINTPTR_MAX);
	AP_CHECK(4096 <= b.combined_limit - b.ptr); /* the fast path takes it */
	b.ptr += 4096;
	ap_bump_sync(&b, &s);
	AP_CHECK_EQ_U64(s.bytes_until_sample, AP_SAMPLER_GAP_MAX - 4096);
	AP_CHECK_EQ_U64(b.anchor, UINTPTR_MAX);
}

/*
 * Fixed size z = 300 from 1000-byte regions (3 per region, 100-byte tails),
 * R = 500: pi(300) = 1 - (1 - 1/500)^300 = 0.4513. Whatever legal discards
 * happen, the counter at each allocation's start is Geometric(1/R) by
 * memorylessness, so each allocation is sampled independently with pi:
 * the sampled fraction over n = 1e5 has se = sqrt(pi(1-pi)/n) = 1.57e-3.
 */
static double sampled_fraction(enum discard_policy policy, recs *got)
{
	const uint64_t n = 100000;
	ap_sampler_config c = config_of(500, AP_GAP_GEOMETRIC, AP_SAMPLE_FIRST, false, 777);
	arena a;
	arena_init(&a, &c, 1000, policy);
	bool oom = false;
	for (uint64_t i = 0; i < n; i++)
		arena_alloc(&a, 300, i, got, &oom);
	return oom ? -1.0 : (double)got->n / (double)n;
}

AP_TEST(discarding_trials_independently_of_outcome_keeps_the_law)
{
	const double pi = -expm1(300 * log1p(-1.0 / 500));
	const double se = sqrt(pi * (1 - pi) / 100000);
	recs base = {0}, skipped = {0}, redrawn = {0}, peeked = {0};
	double f_base = sampled_fraction(TAIL_UNCHARGED, &base);
	double f_skip = sampled_fraction(TAIL_SKIPPED, &skipped);
	double f_redraw = sampled_fraction(REDRAW_ALWAYS, &redrawn);
	double f_peek = sampled_fraction(REDRAW_IF_NEAR, &peeked);
	AP_CHECK_NEAR(f_base, pi, 0, 5 * se);
	AP_CHECK_NEAR(f_skip, pi, 0, 5 * se);
	AP_CHECK_NEAR(f_redraw, pi, 0, 5 * se);
	/* The outcome-dependent discard drops successes that were about to
	 * happen: far outside the same tolerance (checked at 10 se so that this
	 * check cannot pass by luck either). */
	AP_CHECK_MSG(fabs(f_peek - pi) > 10 * se, "peeking discard gave %.4f, pi %.4f", f_peek, pi);
	/* Legal discards change which objects are sampled (so the equivalence
	 * test above would notice a tail being charged). */
	bool differ = skipped.n != base.n;
	for (size_t k = 0; !differ && k < base.n; k++)
		differ = skipped.v[k].index != base.v[k].index;
	AP_CHECK(differ);
	free(base.v);
	free(skipped.v);
	free(redrawn.v);
	free(peeked.v);
}
