/*
 * bump_arena.c: a bump-pointer arena that samples its allocations with the
 * combined limit ([R4]), at no cost on its fast path.
 *
 *     bump_arena [RATE [SEED]]
 *
 * Three "call sites" allocate a known mix of objects; the arena records
 * every sampled object with its Horvitz-Thompson weight, and the program
 * prints the estimated bytes per site next to the truth, with a normal 95%
 * interval from the HT variance estimate (STATISTICS.md section 2).
 *
 * Walkthrough
 * 1. A bump arena hands out [ptr, ptr + size) and checks one bound,
 *    `size <= limit - ptr`. A sampler adds a second bound: the allocation
 *    must not contain the next sampled byte, which lies bytes_until_sample
 *    bytes past the point where the counter was last brought up to date.
 * 2. ap_bump keeps both in one number, combined_limit = min(that sampled
 *    byte, limit). The fast path (arena_alloc) compares against it alone:
 *    the same instructions as an arena without sampling.
 * 3. Past combined_limit, the slow path asks ap_bump_slow what happened:
 *    AP_BUMP_REFILL (the region is full), AP_BUMP_SAMPLE (the object holds
 *    the sampled byte, or is a passthrough size), or both. ap_bump_slow has
 *    already charged the bytes bumped since the last slow path and this
 *    object's bytes to the sampler, and drawn the next gap if it sampled.
 * 4. On refill the arena takes a new region with ap_bump_reset: the unused
 *    tail of the old one is dropped without charging it, so the objects
 *    sampled are exactly those a plain per-allocation sampler would pick.
 *    Large objects get a block of their own and skip ap_bump_place.
 * 5. Sampled objects are recorded with info.weight (1/pi): summing
 *    weight * size per site estimates its bytes without bias.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/sampler.h"

enum { NSITES = 3, REGION = 64 * 1024, BIG = REGION / 4, MAX_BLOCKS = 1 << 16 };

typedef struct site_stats {
	const char *name;
	double true_bytes, est_bytes, var_bytes;
	unsigned long samples;
} site_stats;

typedef struct arena {
	ap_bump b;       /* ptr, combined_limit, limit: the fast path's state */
	ap_sampler s;    /* this arena's (this thread's) sampler */
	void *blocks[MAX_BLOCKS]; /* every region and large block, freed at the end */
	size_t nblocks;
	site_stats sites[NSITES];
} arena;

static void *arena_block(arena *a, size_t n)
{
	if (a->nblocks == MAX_BLOCKS)
		return NULL;
	void *p = malloc(n);
	if (p)
		a->blocks[a->nblocks++] = p;
	return p;
}

static void record(arena *a, int site, const ap_sample_info *info)
{
	site_stats *st = &a->sites[site];
	double z = (double)info->size;
	st->samples++;
	st->est_bytes += info->weight * z;
	/* HT variance estimate (1 - pi) z^2 / pi^2: 0 for exact records. */
	st->var_bytes += (1 - info->prob) * z * z / (info->prob * info->prob);
}

/* Steps 3 and 4: anything the fast path could not decide. */
static void *arena_alloc_slow(arena *a, size_t size, int site)
{
	ap_sample_info info;
	unsigned hit = ap_bump_slow(&a->b, &a->s, size, &info);
	void *p;
	if ((hit & AP_BUMP_REFILL) && size > BIG) {
		p = arena_block(a, size); /* its own block; bytes already charged */
	} else {
		if (hit & AP_BUMP_REFILL) {
			char *lo = arena_block(a, REGION);
			if (!lo)
				return NULL;
			ap_bump_reset(&a->b, &a->s, (uintptr_t)lo, (uintptr_t)lo + REGION);
		}
		p = (void *)ap_bump_place(&a->b, &a->s, size);
	}
	if (p && (hit & AP_BUMP_SAMPLE))
		record(a, site, &info);
	return p;
}

/* Step 2: the whole fast path. Sizes are rounded to 16 for alignment. */
static inline void *arena_alloc(arena *a, size_t size, int site)
{
	size = (size + 15) & ~(size_t)15;
	a->sites[site].true_bytes += (double)size; /* what the arena hands out */
	if (AP_LIKELY(size <= a->b.combined_limit - a->b.ptr)) {
		void *p = (void *)a->b.ptr;
		a->b.ptr += size;
		return p;
	}
	return arena_alloc_slow(a, size, site);
}

static unsigned long long parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || s[0] == '-') {
		fprintf(stderr, "bump_arena: %s must be a non-negative integer, got '%s'\n", what, s);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc > 3 || (argc > 1 && !strcmp(argv[1], "--help"))) {
		fprintf(stderr, "usage: bump_arena [RATE [SEED]]\n");
		return argc > 3;
	}
	ap_sampler_config c;
	ap_sampler_config_default(&c);
	c.rate = argc > 1 ? parse_u64(argv[1], "RATE") : 65536;
	c.seed = argc > 2 ? parse_u64(argv[2], "SEED") : 42;
	arena *a = calloc(1, sizeof *a);
	if (!a)
		return 1;
	int rc = ap_sampler_init(&a->s, &c);
	if (rc != 0) {
		fprintf(stderr, "bump_arena: rate %llu: %s\n", (unsigned long long)c.rate,
			ap_strerror(rc));
		free(a);
		return 1;
	}
	char *lo = arena_block(a, REGION);
	if (!lo)
		return 1;
	ap_bump_init(&a->b, &a->s, (uintptr_t)lo, (uintptr_t)lo + REGION);
	a->sites[0].name = "list nodes (48 B)";
	a->sites[1].name = "strings (1-200 B)";
	a->sites[2].name = "buffers (4-60 KiB)";

	/* The workload: interleaved, deterministic (xorshift sizes). */
	uint64_t x = 88172645463325252u;
	int failed = 0;
	for (int i = 0; i < 400000 && !failed; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		failed |= !arena_alloc(a, 48, 0);
		failed |= !arena_alloc(a, 1 + x % 200, 1);
		if (i % 200 == 0)
			failed |= !arena_alloc(a, 4096 + (x >> 8) % (56 * 1024), 2);
	}
	if (failed)
		fprintf(stderr, "bump_arena: out of memory\n");

	printf("rate %llu, seed %llu, %zu blocks\n", (unsigned long long)c.rate,
	       (unsigned long long)c.seed, a->nblocks);
	printf("%-20s %12s %12s %24s %8s\n", "site", "true bytes", "estimate", "95% interval",
	       "samples");
	for (int k = 0; k < NSITES; k++) {
		site_stats *st = &a->sites[k];
		double half = 1.959964 * sqrt(st->var_bytes);
		printf("%-20s %12.0f %12.0f [%10.0f, %10.0f] %8lu\n", st->name, st->true_bytes,
		       st->est_bytes, st->est_bytes - half, st->est_bytes + half, st->samples);
	}
	for (size_t k = 0; k < a->nblocks; k++)
		free(a->blocks[k]);
	free(a);
	return failed;
}
