/*
 * rt_lock.h: the mutex of the stack table and the sampled set, taken twice
 * per sample (once at the sampled allocation, once at its free).
 *
 * pthread_mutex_lock reads the mutex's kind and the calling thread's id
 * from its thread control block, and its unlock the kind again: between
 * two samples the program evicts those lines, and cachegrind counted
 * about 6.5 cache misses and 100 instructions per sample for the two
 * acquisitions. This lock is one 32-bit word: 0 free, 1 held, 2 held
 * with waiters (the classic three-state futex mutex). Uncontended, taking
 * it is one compare-and-swap and releasing it one exchange, both on the
 * word; a contended taker sleeps in futex(FUTEX_WAIT_PRIVATE), and the
 * release wakes one sleeper only when the word says there may be one.
 *
 * Not recursive and with no owner: only the runtime's own code takes it,
 * with signals blocked (rt_enter), never twice. A fork child re-initialises
 * it (rt_lock_init), as the holder's thread is not there.
 */
#ifndef AP_PRELOAD_RT_LOCK_H
#define AP_PRELOAD_RT_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct rt_lock {
	_Atomic uint32_t word;
} rt_lock;

#define RT_LOCK_INITIALIZER { 0 }

static inline void rt_lock_init(rt_lock *l)
{
	atomic_init(&l->word, 0);
}

/* The contended paths (rt_lock.c). */
void rt_lock_wait(rt_lock *l, uint32_t seen);
void rt_lock_wake(rt_lock *l);

static inline void rt_lock_acquire(rt_lock *l)
{
	uint32_t c = 0;
	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
				     &l->word, &c, 1, memory_order_acquire,
				     memory_order_relaxed),
			     0))
		rt_lock_wait(l, c);
}

static inline void rt_lock_release(rt_lock *l)
{
	if (__builtin_expect(atomic_exchange_explicit(&l->word, 0,
						      memory_order_release) == 2,
			     0))
		rt_lock_wake(l);
}

#endif
