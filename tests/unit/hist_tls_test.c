/*
 * hist_tls_test.c (AP_TEST_THREADED: runs under ThreadSanitizer in CI): the
 * shared ap_hist_add records into a per-thread recorder bound behind the
 * caller's back (src/lib/hist_tls.c). What that must not break:
 *
 * - values of threads that have exited stay in the histogram, and the
 *   recorder an exited thread held is reused by the next thread, so
 *   memory follows the number of threads recording at once, not the number
 *   that ever did;
 * - a thread's cache may name a histogram destroyed meanwhile: neither a
 *   later binding that takes its slot nor the thread's exit may touch it
 *   (AddressSanitizer sees the use after free if they do);
 * - more histograms than cache slots in one thread stay exact, each with
 *   one recorder.
 * Snapshots during concurrent ap_hist_add are tested in hist_thread_test.c.
 */
#include <pthread.h>

#include "allocprof/hist.h"
#include "aptest.h"

#define PER_THREAD 5000

static uint64_t value(uint64_t i)
{
	uint64_t z = i * 0x9e3779b97f4a7c15u;
	z ^= z >> 29;
	return (z * 0xbf58476d1ce4e5b9u) >> 40; /* below 2^24 */
}

struct job {
	ap_hist *h;
	int errors;
};

static void *record_stream(void *arg)
{
	struct job *j = arg;
	for (uint64_t i = 0; i < PER_THREAD; i++)
		j->errors += ap_hist_add(j->h, value(i)) != 0;
	return NULL;
}

/* Reference: the same values, PER_THREAD each from `threads` threads,
 * recorded through an explicit recorder (another path). */
static ap_hist_snap *reference(unsigned threads)
{
	ap_hist *ref;
	ap_hist_recorder *r;
	ap_hist_snap *s = NULL;
	if (ap_hist_create(&ref, 6, NULL) || ap_hist_recorder_get(ref, &r))
		return NULL;
	for (unsigned t = 0; t < threads; t++)
		for (uint64_t i = 0; i < PER_THREAD; i++)
			(void)ap_hist_recorder_add(r, value(i));
	(void)ap_hist_snapshot(ref, NULL, &s);
	ap_hist_destroy(ref);
	return s;
}

AP_TEST(exited_threads_keep_their_values_and_hand_on_their_recorder)
{
	enum { SEQUENTIAL = 20 };
	ap_hist *h;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 6, NULL), 0);
	size_t after_first = 0;
	for (unsigned t = 0; t < SEQUENTIAL; t++) {
		struct job j = {h, 0};
		pthread_t th;
		AP_CHECK_EQ_INT(pthread_create(&th, NULL, record_stream, &j), 0);
		pthread_join(th, NULL);
		AP_CHECK_EQ_INT(j.errors, 0);
		if (t == 0)
			after_first = ap_hist_memory(h);
		/* Same values, so the same counter arrays: a thread that
		 * reused its predecessor's recorder adds no memory at all. */
		AP_CHECK_EQ_U64(ap_hist_memory(h), after_first);
	}
	ap_hist_snap *got, *want = reference(SEQUENTIAL);
	AP_CHECK(want);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &got), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(got), SEQUENTIAL * PER_THREAD);
	AP_CHECK(ap_hist_snap_equal(got, want));
	ap_hist_snap_destroy(got);
	ap_hist_snap_destroy(want);
	ap_hist_destroy(h);
}

/* A thread that records into histograms the main thread destroys under
 * it, in lock step: step 1 records into a, step 2 (a destroyed, b created
 * with an id 32 further, so the same cache slot) into b, step 3 into c,
 * which is destroyed before the thread exits. */
struct stepper {
	ap_hist *volatile h;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int step, done, errors;
};

static void step_wait(struct stepper *s, int want)
{
	pthread_mutex_lock(&s->mu);
	while (s->step < want)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static void step_set(struct stepper *s, int *field, int v)
{
	pthread_mutex_lock(&s->mu);
	*field = v;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void *stepper_main(void *arg)
{
	struct stepper *s = arg;
	for (int k = 1; k <= 3; k++) {
		step_wait(s, k);
		for (uint64_t i = 0; i < 100; i++)
			s->errors += ap_hist_add(s->h, value(i)) != 0;
		step_set(s, &s->done, k);
	}
	step_wait(s, 4); /* c is destroyed; now exit */
	return NULL;
}

static void done_wait(struct stepper *s, int want)
{
	pthread_mutex_lock(&s->mu);
	while (s->done < want)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

AP_TEST(destroyed_histograms_are_never_touched_by_eviction_or_exit)
{
	struct stepper s = {.step = 0, .done = 0, .errors = 0};
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	ap_hist *a, *b, *c, *pad[31];
	AP_CHECK_EQ_INT(ap_hist_create(&a, 6, NULL), 0);
	pthread_t th;
	AP_CHECK_EQ_INT(pthread_create(&th, NULL, stepper_main, &s), 0);
	s.h = a;
	step_set(&s, &s.step, 1);
	done_wait(&s, 1);
	ap_hist_destroy(a);
	/* Ids are handed out in sequence: 31 more, then b lands in a's slot. */
	for (int i = 0; i < 31; i++)
		AP_CHECK_EQ_INT(ap_hist_create(&pad[i], 6, NULL), 0);
	AP_CHECK_EQ_INT(ap_hist_create(&b, 6, NULL), 0);
	for (int i = 0; i < 31; i++)
		ap_hist_destroy(pad[i]);
	s.h = b;
	step_set(&s, &s.step, 2);
	done_wait(&s, 2);
	AP_CHECK_EQ_INT(ap_hist_create(&c, 6, NULL), 0);
	s.h = c;
	step_set(&s, &s.step, 3);
	done_wait(&s, 3);
	ap_hist_destroy(c);
	step_set(&s, &s.step, 4);
	pthread_join(th, NULL);
	AP_CHECK_EQ_INT(s.errors, 0);
	ap_hist_snap *got;
	AP_CHECK_EQ_INT(ap_hist_snapshot(b, NULL, &got), 0);
	AP_CHECK_EQ_U64(ap_hist_snap_count(got), 100);
	ap_hist_snap_destroy(got);
	ap_hist_destroy(b);
	pthread_cond_destroy(&s.cv);
	pthread_mutex_destroy(&s.mu);
}

AP_TEST(more_histograms_than_cache_slots_stay_exact)
{
	enum { NH = 45, ROUNDS = 3 };
	ap_hist *h[NH];
	size_t mem[NH];
	for (int i = 0; i < NH; i++)
		AP_CHECK_EQ_INT(ap_hist_create(&h[i], 6, NULL), 0);
	for (int round = 0; round < ROUNDS; round++) {
		/* Round robin: histograms 32 apart evict each other. */
		for (uint64_t k = 0; k < 200; k++)
			for (int i = 0; i < NH; i++)
				AP_CHECK_EQ_INT(ap_hist_add(h[i], value(k) + (uint64_t)i), 0);
		for (int i = 0; i < NH; i++) {
			/* A rebinding reuses the recorder its eviction released. */
			if (round == 0)
				mem[i] = ap_hist_memory(h[i]);
			AP_CHECK_EQ_U64(ap_hist_memory(h[i]), mem[i]);
		}
	}
	for (int i = 0; i < NH; i++) {
		ap_hist_snap *s;
		AP_CHECK_EQ_INT(ap_hist_snapshot(h[i], NULL, &s), 0);
		AP_CHECK_EQ_U64(ap_hist_snap_count(s), ROUNDS * 200);
		uint64_t hi, lo, want = 0;
		for (uint64_t k = 0; k < 200; k++)
			want += value(k) + (uint64_t)i;
		ap_hist_snap_sum(s, &hi, &lo);
		AP_CHECK(hi == 0 && lo == ROUNDS * want);
		ap_hist_snap_destroy(s);
		ap_hist_destroy(h[i]);
	}
}
