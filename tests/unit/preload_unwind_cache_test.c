/*
 * preload_unwind_cache_test.c: the libunwind unwinder's caches grow to
 * hold a program's return addresses (src/preload/unwinder.c), from
 * several threads at once (AP_TEST_THREADED: also run under
 * ThreadSanitizer), and answer as libunwind did.
 *
 * support/unwind_fns.c has 2048 functions without frame pointers and
 * unwind_fns_fp.c 2048 with; a capture from inside each (the test's own
 * functions keep frame pointers too) needs a cached frame-pointer verdict
 * for its return address, and in the first kind a frame rule. Four
 * threads call all of them, each from its own starting point, capturing
 * each time, in two rounds that start together: the tables grow while
 * they are read and written. The first round looks each address up at
 * least once (the test's premise: 4096 lookups or more in all); every
 * capture, from the return address in function k to the thread's start,
 * must be the same in both rounds and all threads (a rule copied wrong
 * when a table grows would change it).
 * Then six more rounds in one thread, the last of which may look up again
 * for at most 10% of its 4096 captures (409), and must give the frames
 * libgcc's unwinder gives (it reads each frame's unwind rules anew). The
 * tables start at 2048 entries and grow, the verdicts' to 65536 at most,
 * the rules' to 16384. Three addresses met in turn in one set of two miss
 * every time; at the largest sizes about 4100 verdicts in 32768 sets and
 * 2050 rules in 8192 (Poisson, means 0.125 and 0.25) put three or more in
 * a set often enough for 30 and 54 such lookups a round in expectation
 * (E[n; n >= 3] per set: 0.0009 and 0.0066), 84 in all. A table a size
 * short (each is, in some runs, after the threads' rounds) evicts enough
 * in a round or two to grow again: a twice larger one meets four times
 * fewer such sets. The same tables kept at their first size looked up
 * 4374 times in that round.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "aptest.h"
#include "unwind_fns.h"
#include "unwinder.h"

#define THREADS 4

/* Frames kept of a capture, from the return address in function k on. */
#define FRAMES 16

typedef struct worker {
	int id;
	uintptr_t frames[2 * UNWIND_FNS][FRAMES]; /* per function k */
	int nframes[2 * UNWIND_FNS];
	int depth_bad;
	unsigned lookups;
} worker;

static worker workers[THREADS], solo;
static pthread_barrier_t barrier;

typedef struct job {
	worker *w;
	int k;
	bool check;     /* compare with the frames kept */
	bool reference; /* compare with libgcc's unwind too */
	int mismatches, reference_mismatches;
} job;

/* The capture from ret (the return address in the function that called
 * capture_cb) on: its index in pcs, or -1. */
static int index_of(const uintptr_t *pcs, int n, uintptr_t ret)
{
	for (int i = 0; i < n; i++)
		if (pcs[i] == ret)
			return i;
	return -1;
}

static void capture_cb(void *arg)
{
	job *j = arg;
	uintptr_t ret = (uintptr_t)__builtin_return_address(0);
	uintptr_t pcs[FRAMES + 8];
	int n = unwind_capture(UNWINDER_LIBUNWIND, pcs, FRAMES + 8);
	int at = index_of(pcs, n, ret);
	if (at < 0 || n - at < 3) { /* function k, its caller, the round */
		j->w->depth_bad++;
		return;
	}
	int m = n - at < FRAMES ? n - at : FRAMES;
	if (!j->check) {
		memcpy(j->w->frames[j->k], pcs + at, (size_t)m * sizeof *pcs);
		j->w->nframes[j->k] = m;
	} else if (j->w->nframes[j->k] != m ||
		   memcmp(j->w->frames[j->k], pcs + at, (size_t)m * sizeof *pcs) != 0) {
		j->mismatches++;
	}
	if (j->reference) {
		uintptr_t ref[FRAMES + 8];
		int rn = unwind_capture(UNWINDER_LIBGCC, ref, FRAMES + 8);
		int rat = index_of(ref, rn, ret);
		int rm = rat < 0 ? 0 : rn - rat < FRAMES ? rn - rat : FRAMES;
		if (rm != m || memcmp(ref + rat, pcs + at, (size_t)m * sizeof *pcs) != 0)
			j->reference_mismatches++;
	}
}

static job round_of(worker *w, bool check, bool reference)
{
	job j = { w, 0, check, reference, 0, 0 };
	unwind_lookups = 0;
	for (int i = 0; i < UNWIND_FNS; i++) {
		int k = (i + w->id * (UNWIND_FNS / THREADS)) % UNWIND_FNS;
		j.k = k;
		unwind_fns_call(k, capture_cb, &j);
		j.k = UNWIND_FNS + k;
		unwind_fns_call_fp(k, capture_cb, &j);
	}
	w->lookups = unwind_lookups;
	return j;
}

#define ROUNDS 2
#define ALONE_ROUNDS 6
#define CALLS (2 * UNWIND_FNS) /* captures in a round */
static int mismatches[THREADS][ROUNDS];
static unsigned lookups[THREADS][ROUNDS];

static void *run(void *arg)
{
	worker *w = arg;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&barrier); /* every round starts together */
		mismatches[w->id][r] = round_of(w, r > 0, false).mismatches;
		lookups[w->id][r] = w->lookups;
	}
	return NULL;
}

AP_TEST(caches_grow_to_hold_every_return_address_from_several_threads)
{
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_LIBUNWIND), 0);
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_LIBGCC), 0);
	unwind_cache_info before;
	unwind_cache_stats(&before);
	AP_CHECK_EQ_U64(before.rules_sets, 1024);
	AP_CHECK_EQ_U64(before.fp_sets, 1024);
	AP_CHECK_EQ_INT(pthread_barrier_init(&barrier, NULL, THREADS), 0);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		workers[i].id = i;
		AP_CHECK_EQ_INT(pthread_create(&t[i], NULL, run, &workers[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&barrier);
	unsigned first = 0;
	for (int i = 0; i < THREADS; i++) {
		AP_CHECK_EQ_INT(workers[i].depth_bad, 0);
		for (int r = 1; r < ROUNDS; r++)
			AP_CHECK_MSG(mismatches[i][r] == 0, "thread %d, round %d: %d captures differ",
				     i, r, mismatches[i][r]);
		first += lookups[i][0];
		/* Every thread saw the same frames for function k. */
		for (int k = 0; k < 2 * UNWIND_FNS; k++)
			if (workers[i].nframes[k] != workers[0].nframes[k] ||
			    memcmp(workers[i].frames[k], workers[0].frames[k],
				   sizeof workers[0].frames[k]) != 0) {
				AP_CHECK_MSG(false, "function %d: thread %d's frames differ", k, i);
				break;
			}
	}
	AP_CHECK_MSG(first >= 2 * UNWIND_FNS, "first round: %u lookups, want >= %d", first,
		     2 * UNWIND_FNS);
	/* Then alone: what the tables hold once they have grown; in the
	 * last round every capture is checked against libgcc's too. */
	unsigned alone = 0;
	for (int r = 0; r < ALONE_ROUNDS; r++) {
		/* Its frames below the round are the main thread's: kept anew. */
		job j = round_of(&solo, r > 0, r == ALONE_ROUNDS - 1);
		AP_CHECK_EQ_INT(j.mismatches, 0);
		AP_CHECK_MSG(j.reference_mismatches == 0, "%d captures differ from libgcc's",
			     j.reference_mismatches);
		alone = solo.lookups;
	}
	AP_CHECK_EQ_INT(solo.depth_bad, 0);
	unwind_cache_info after;
	unwind_cache_stats(&after);
	fprintf(stderr, "lookups: %u in the threads' first round, %u in the last alone; "
		"entries in use: %zu of %zu rules, %zu of %zu verdicts\n", first, alone,
		after.rules_used, 2 * after.rules_sets, after.fp_used, 2 * after.fp_sets);
	AP_CHECK_MSG(alone <= CALLS / 10, "last round: %u lookups, want <= %d", alone,
		     CALLS / 10);
	AP_CHECK(after.rules_used >= UNWIND_FNS * 95 / 100);
	AP_CHECK(after.fp_used >= 2 * UNWIND_FNS * 95 / 100);
}
