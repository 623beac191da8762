/*
 * hist_thread_test.c (AP_TEST_THREADED: runs under ThreadSanitizer in CI):
 * four threads record the same value streams into one shared histogram
 * (ap_hist_add: per-thread recorders bound behind the call), each into its
 * own recorder of a second histogram, and each
 * in batches into its own recorder of a third, while a fifth thread keeps
 * taking snapshots of all three. After join each histogram must equal,
 * bucket for bucket and in count, sum, sum of squares, min and max, a
 * histogram recorded single-threaded from the same streams, and every
 * snapshot taken meanwhile must have a count that never decreases and
 * min <= max.
 *
 * The second test does the same through the inline record path
 * (ap_hist_recorder_add_inline, allocprof/hist_inline.h), which reads and writes
 * the recorder's published hot fields from the caller's code: a plain
 * (non-atomic) access or a missing acquire on its counter table would show
 * here as a race. Its reader also checks each snapshot during the run
 * (count never decreasing, min <= max).
 */
#include <pthread.h>

#include "allocprof/hist_inline.h"
#include "aptest.h"

#define THREADS 4
#define PER_THREAD 200000

struct ctx {
	ap_hist *shared, *sharded, *batched;
	unsigned id;
	int errors;
};

static _Atomic int writers_done;

static uint64_t value(unsigned id, uint64_t i)
{
	uint64_t z = (id + 1) * 0x9e3779b97f4a7c15u + i * 0xbf58476d1ce4e5b9u;
	z ^= z >> 31;
	z *= 0x94d049bb133111ebu;
	z ^= z >> 29;
	return z >> (z & 63); /* all binary orders, so chunks race to install */
}

static void *writer(void *arg)
{
	struct ctx *c = arg;
	ap_hist_recorder *r, *rb;
	if (ap_hist_recorder_get(c->sharded, &r) ||
	    ap_hist_recorder_get(c->batched, &rb)) {
		c->errors++;
		return NULL;
	}
	uint64_t batch[1000];
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		uint64_t v = value(c->id, i);
		c->errors += ap_hist_add(c->shared, v) != 0;
		c->errors += ap_hist_recorder_add(r, v) != 0;
		batch[i % 1000] = v;
		if (i % 1000 == 999)
			c->errors += ap_hist_recorder_add_many(rb, batch, 1000) != 0;
	}
	ap_hist_recorder_release(r);
	ap_hist_recorder_release(rb);
	return NULL;
}

/* One snapshot of h taken while threads record: its count must not be
 * below the previous one's (*last) and [min, max] must be sane. Returns
 * the number of faults. */
static int snap_check(ap_hist *h, uint64_t *last)
{
	ap_hist_snap *s;
	if (ap_hist_snapshot(h, NULL, &s))
		return 1;
	uint64_t n = ap_hist_snap_count(s), mn = 0, mx = 0;
	int errors = n < *last;
	*last = n;
	if (n)
		errors += ap_hist_snap_min(s, &mn) || ap_hist_snap_max(s, &mx) ||
			  mn > mx;
	ap_hist_snap_destroy(s);
	return errors;
}

static void *reader(void *arg)
{
	struct ctx *c = arg;
	uint64_t last[3] = {0, 0, 0};
	while (!writers_done) {
		c->errors += snap_check(c->shared, &last[0]);
		c->errors += snap_check(c->sharded, &last[1]);
		c->errors += snap_check(c->batched, &last[2]);
		(void)ap_hist_memory(c->sharded);
	}
	return NULL;
}

/*
 * Run THREADS writers and one reader (ids 0..THREADS, the reader last) on
 * copies of proto; return once the writers are done and the reader is
 * stopped. false if a thread could not be started (those started are
 * joined).
 */
static bool run_threads(struct ctx *c, struct ctx proto,
			void *(*write)(void *), void *(*read)(void *))
{
	pthread_t t[THREADS + 1];
	unsigned n = 0;
	writers_done = 0;
	for (; n <= THREADS; n++) {
		c[n] = proto;
		c[n].id = n;
		if (pthread_create(&t[n], NULL, n < THREADS ? write : read, &c[n]))
			break;
	}
	for (unsigned i = 0; i < n && i < THREADS; i++)
		pthread_join(t[i], NULL);
	writers_done = 1;
	if (n == THREADS + 1)
		pthread_join(t[THREADS], NULL);
	return n == THREADS + 1;
}

AP_TEST(shared_and_per_thread_recording_are_exact_after_join)
{
	ap_hist *shared, *sharded, *batched, *ref;
	AP_CHECK_EQ_INT(ap_hist_create(&shared, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&sharded, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&batched, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&ref, 6, NULL), 0);
	struct ctx c[THREADS + 1];
	AP_CHECK(run_threads(c, (struct ctx){shared, sharded, batched, 0, 0},
			     writer, reader));
	AP_CHECK_EQ_INT(c[THREADS].errors, 0);
	for (unsigned i = 0; i < THREADS; i++) {
		AP_CHECK_EQ_INT(c[i].errors, 0);
		for (uint64_t k = 0; k < PER_THREAD; k++)
			AP_CHECK_EQ_INT(ap_hist_add(ref, value(i, k)), 0);
	}
	ap_hist_snap *a, *b, *d, *want;
	AP_CHECK_EQ_INT(ap_hist_snapshot(shared, NULL, &a), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(sharded, NULL, &b), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(batched, NULL, &d), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(ref, NULL, &want), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(a), THREADS * PER_THREAD);
	AP_CHECK(ap_hist_snap_equal(a, want));
	AP_CHECK(ap_hist_snap_equal(b, want));
	AP_CHECK(ap_hist_snap_equal(d, want));
	ap_hist_snap_destroy(a);
	ap_hist_snap_destroy(b);
	ap_hist_snap_destroy(d);
	ap_hist_snap_destroy(want);
	ap_hist_destroy(shared);
	ap_hist_destroy(sharded);
	ap_hist_destroy(batched);
	ap_hist_destroy(ref);
}

static void *inline_writer(void *arg)
{
	struct ctx *c = arg;
	ap_hist_recorder *r;
	if (ap_hist_recorder_get(c->sharded, &r)) {
		c->errors++;
		return NULL;
	}
	for (uint64_t i = 0; i < PER_THREAD; i++)
		c->errors += ap_hist_recorder_add_inline(r, value(c->id, i)) != 0;
	ap_hist_recorder_release(r);
	return NULL;
}

static void *checking_reader(void *arg)
{
	struct ctx *c = arg;
	uint64_t last = 0;
	while (!writers_done)
		c->errors += snap_check(c->sharded, &last);
	return NULL;
}

AP_TEST(inline_recording_in_four_threads_is_exact_after_join)
{
	ap_hist *h, *ref;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&ref, 6, NULL), 0);
	struct ctx c[THREADS + 1];
	AP_CHECK(run_threads(c, (struct ctx){NULL, h, NULL, 0, 0},
			     inline_writer, checking_reader));
	AP_CHECK_EQ_INT(c[THREADS].errors, 0);
	for (unsigned i = 0; i < THREADS; i++) {
		AP_CHECK_EQ_INT(c[i].errors, 0);
		for (uint64_t k = 0; k < PER_THREAD; k++)
			AP_CHECK_EQ_INT(ap_hist_add(ref, value(i, k)), 0);
	}
	ap_hist_snap *got, *want;
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &got), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(ref, NULL, &want), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(got), THREADS * PER_THREAD);
	AP_CHECK(ap_hist_snap_equal(got, want));
	ap_hist_snap_destroy(got);
	ap_hist_snap_destroy(want);
	ap_hist_destroy(h);
	ap_hist_destroy(ref);
}
