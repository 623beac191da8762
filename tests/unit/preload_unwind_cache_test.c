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
 * capture's first two frames (the return address in function k, then in
 * its caller) must be the same in both rounds and all threads (a rule
 * copied wrong when a table grows would change them).
 * Then six more rounds in one thread, the last of which may look up again
 * for at most 10% of its 4096 captures (409). The tables start at 2048 entries
 * and grow, the verdicts' to 65536 at most, the rules' to 16384. Three
 * addresses met in turn in one set of two miss every time; at the
 * largest sizes about 4100 verdicts in 32768 sets and 2050 rules in 8192
 * (Poisson, means 0.125 and 0.25) put three or more in a set often enough
 * for 21 and 54 such lookups a round in expectation (E[n; n >= 3] per
 * set: 0.0006 and 0.0066). A table a size short (each is, in some runs,
 * after the threads' rounds) evicts enough in a round or two to grow
 * again: a twice larger one meets four times fewer such sets. With
 * the caches of before (4096 verdicts and 2048 rules, direct-mapped,
 * never grown) a round looked up most of the addresses again: about
 * 3900 of the 4096 captures, by the same count.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "aptest.h"
#include "unwind_fns.h"
#include "unwinder.h"

#define THREADS 4

typedef struct worker {
	int id;
	uintptr_t first[2 * UNWIND_FNS][2]; /* per function: its two frames */
	int depth_bad;
	unsigned lookups;
} worker;

static worker workers[THREADS];
static pthread_barrier_t barrier;

typedef struct job {
	worker *w;
	int k;
	bool check; /* second round: compare with the first */
	int mismatches;
} job;

static void capture_cb(void *arg)
{
	job *j = arg;
	uintptr_t pcs[8];
	int n = unwind_capture(UNWINDER_LIBUNWIND, pcs, 8);
	if (n < 2) {
		j->w->depth_bad++;
		return;
	}
	if (!j->check) {
		j->w->first[j->k][0] = pcs[0];
		j->w->first[j->k][1] = pcs[1];
	} else if (j->w->first[j->k][0] != pcs[0] || j->w->first[j->k][1] != pcs[1]) {
		j->mismatches++;
	}
}

static int round_of(worker *w, bool check)
{
	job j = { w, 0, check, 0 };
	unwind_lookups = 0;
	for (int i = 0; i < UNWIND_FNS; i++) {
		int k = (i + w->id * (UNWIND_FNS / THREADS)) % UNWIND_FNS;
		j.k = k;
		unwind_fns_call(k, capture_cb, &j);
		j.k = UNWIND_FNS + k;
		unwind_fns_call_fp(k, capture_cb, &j);
	}
	w->lookups = unwind_lookups;
	return j.mismatches;
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
		mismatches[w->id][r] = round_of(w, r > 0);
		lookups[w->id][r] = w->lookups;
	}
	return NULL;
}

AP_TEST(caches_grow_to_hold_every_return_address_from_several_threads)
{
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_LIBUNWIND), 0);
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
			if (memcmp(workers[i].first[k], workers[0].first[k],
				   sizeof workers[0].first[k]) != 0) {
				AP_CHECK_MSG(false, "function %d: thread %d's frames differ", k, i);
				break;
			}
	}
	AP_CHECK_MSG(first >= 2 * UNWIND_FNS, "first round: %u lookups, want >= %d", first,
		     2 * UNWIND_FNS);
	/* Then alone: what the tables hold once they have grown. */
	unsigned alone = 0;
	for (int r = 0; r < ALONE_ROUNDS; r++) {
		AP_CHECK_EQ_INT(round_of(&workers[0], true), 0);
		alone = workers[0].lookups;
	}
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
