/*
 * sampled_set_bench.c: what free() pays to ask "was this pointer sampled?"
 * (docs/DESIGN.md asks for both designs to be measured).
 *
 *   sampled_set_bench MODE N [LIVE]
 *
 * MODE is one of
 *   baseline      the loop alone: walk N pointers and fold them into a sink
 *   set-miss      the same loop plus the runtime's lock-free set lookup
 *                 (design 1) for pointers that are not sampled, with LIVE
 *                 (default 1000) sampled pointers in the set
 *   range-check   the same loop plus design 2's test, one subtraction and
 *                 compare against an allocprof-owned address range
 *   filter-check  the same loop plus what the runtime's free does: the
 *                 byte of the pointer's 8 KiB window in the set's
 *                 filter, and the set lookup when it is nonzero (the LIVE
 *                 entries count in it, spread over the same 1 GiB)
 *   insert-remove N insert+remove pairs on top of LIVE entries (the cost a
 *                 sampled allocation and its free add to the set)
 * and prints "MODE N ns_per_op". Run under `valgrind --tool=callgrind`, the
 * difference of total instructions between a mode and baseline divided by N
 * is the instructions per operation (bench/suites/runtime_internals.sh).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampled_set.h"

static volatile uintptr_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Heap-like addresses: 16-aligned, spread over 1 GiB, from an LCG. */
static uintptr_t *make_pointers(size_t n, uint64_t seed)
{
	uintptr_t *v = malloc(n * sizeof *v);
	if (!v)
		exit(2);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		v[i] = 0x7f0000000000ULL + ((seed >> 20) & ((1ULL << 30) - 1)) * 16;
	}
	return v;
}

static void fill(sampled_set *s, size_t live)
{
	sample_rec r;
	memset(&r, 0, sizeof r);
	uintptr_t *p = make_pointers(live, 99);
	for (size_t i = 0; i < live; i++)
		set_insert(s, (const void *)(p[i] | 8), &r); /* |8: never a probe key */
	free(p);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s baseline|set-miss|range-check|filter-check|insert-remove N [LIVE]\n",
			argv[0]);
		return 1;
	}
	const char *mode = argv[1];
	size_t n = strtoull(argv[2], NULL, 10);
	size_t live = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
	if (n == 0)
		return 1;
	static sampled_set s;
	static set_filter filter;
	set_init(&s, &filter);
	fill(&s, live);
	uintptr_t *ptrs = make_pointers(n, 7);
	uintptr_t acc = 0;
	uint64_t t0 = now_ns();
	if (!strcmp(mode, "baseline")) {
		for (size_t i = 0; i < n; i++)
			acc += ptrs[i];
	} else if (!strcmp(mode, "set-miss")) {
		for (size_t i = 0; i < n; i++)
			acc += ptrs[i] + set_contains(&s, (const void *)ptrs[i]);
	} else if (!strcmp(mode, "range-check")) {
		uintptr_t base = 0x200000000000ULL, len = 1ULL << 36;
		for (size_t i = 0; i < n; i++)
			acc += ptrs[i] + (ptrs[i] - base < len);
	} else if (!strcmp(mode, "filter-check")) {
		for (size_t i = 0; i < n; i++)
			acc += ptrs[i] + (set_filter_any(&filter, ptrs[i]) &&
					  set_contains(&s, (const void *)ptrs[i]));
	} else if (!strcmp(mode, "insert-remove")) {
		sample_rec r;
		memset(&r, 0, sizeof r);
		for (size_t i = 0; i < n; i++) {
			set_insert(&s, (const void *)ptrs[i], &r);
			acc += set_remove(&s, (const void *)ptrs[i], &r);
		}
	} else {
		fprintf(stderr, "%s: unknown mode '%s'\n", argv[0], mode);
		return 1;
	}
	uint64_t t1 = now_ns();
	sink = acc;
	printf("%s %zu %.3f\n", mode, n, (double)(t1 - t0) / (double)n);
	free(ptrs);
	return 0;
}
