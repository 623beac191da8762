/*
 * preload_lock_test.c: the runtime's futex lock (src/preload/rt_lock.h).
 * Under 4 threads taking it 200000 times each and updating two plain
 * counters inside, no update is lost and the two never disagree; the word
 * is free (0) afterwards, so no release went missing and no waiter was
 * left marked. The counters are read and written with separate relaxed
 * atomic loads and stores, so the compiler keeps every one and only the
 * lock makes read-then-write indivisible: without it, updates are lost
 * (checked: the count comes out short with the lock calls removed).
 * AP_TEST_THREADED: CI runs this file under ThreadSanitizer.
 */
#include <errno.h>
#include <pthread.h>

#include "aptest.h"
#include "rt_lock.h"

enum { THREADS = 4, ROUNDS = 200000 };

static rt_lock lock = RT_LOCK_INITIALIZER;
static _Atomic uint64_t a, b; /* loads and stores, not RMWs */
static _Atomic int bad;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		rt_lock_acquire(&lock);
		uint64_t x = atomic_load_explicit(&a, memory_order_relaxed);
		if (atomic_load_explicit(&b, memory_order_relaxed) != x)
			atomic_store(&bad, 1);
		atomic_store_explicit(&a, x + 1, memory_order_relaxed);
		atomic_store_explicit(&b, x + 1, memory_order_relaxed);
		rt_lock_release(&lock);
	}
	return NULL;
}

AP_TEST(contended_lock_loses_no_update)
{
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		AP_CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	AP_CHECK_EQ_U64(atomic_load(&a), (uint64_t)THREADS * ROUNDS);
	AP_CHECK_EQ_U64(atomic_load(&b), atomic_load(&a));
	AP_CHECK_EQ_INT(atomic_load(&bad), 0);
	AP_CHECK_EQ_U64(atomic_load(&lock.word), 0);
}

AP_TEST(release_frees_the_word_and_keeps_errno)
{
	rt_lock l;
	rt_lock_init(&l);
	errno = 1234;
	rt_lock_acquire(&l);
	AP_CHECK_EQ_U64(atomic_load(&l.word), 1);
	rt_lock_release(&l);
	AP_CHECK_EQ_U64(atomic_load(&l.word), 0);
	/* A release that finds waiters marked (2) wakes one; with nobody
	 * asleep the futex call returns at once, and errno stays. */
	rt_lock_acquire(&l);
	atomic_store(&l.word, 2);
	rt_lock_release(&l);
	AP_CHECK_EQ_U64(atomic_load(&l.word), 0);
	AP_CHECK_EQ_INT(errno, 1234);
}
