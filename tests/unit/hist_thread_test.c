/*
 * hist_thread_test.c (AP_TEST_THREADED: runs under ThreadSanitizer in CI):
 * four threads record the same value streams into one shared histogram
 * (atomic path), each into its own recorder of a second histogram, and each
 * in batches into its own recorder of a third, while a fifth thread keeps
 * taking snapshots of all three. After join each histogram must equal,
 * bucket for bucket and in count, sum, sum of squares, min and max, a
 * histogram recorded single-threaded from the same streams.
 */
#include <pthread.h>

#include "allocprof/hist.h"
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

static void *reader(void *arg)
{
	struct ctx *c = arg;
	while (!writers_done) {
		ap_hist_snap *s;
		if (!ap_hist_snapshot(c->shared, NULL, &s))
			ap_hist_snap_destroy(s);
		if (!ap_hist_snapshot(c->sharded, NULL, &s))
			ap_hist_snap_destroy(s);
		if (!ap_hist_snapshot(c->batched, NULL, &s))
			ap_hist_snap_destroy(s);
		(void)ap_hist_memory(c->sharded);
	}
	return NULL;
}

AP_TEST(shared_and_per_thread_recording_are_exact_after_join)
{
	ap_hist *shared, *sharded, *batched, *ref;
	AP_CHECK_EQ_INT(ap_hist_create(&shared, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&sharded, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&batched, 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&ref, 6, NULL), 0);
	struct ctx c[THREADS + 1];
	pthread_t t[THREADS + 1];
	writers_done = 0;
	for (unsigned i = 0; i <= THREADS; i++) {
		c[i] = (struct ctx){shared, sharded, batched, i, 0};
		AP_CHECK(!pthread_create(&t[i], NULL, i < THREADS ? writer : reader,
					 &c[i]));
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	writers_done = 1;
	pthread_join(t[THREADS], NULL);
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
