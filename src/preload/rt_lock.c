/*
 * rt_lock.c: the contended paths of the runtime's lock (rt_lock.h).
 */
#include "rt_lock.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Take the lock after a failed compare-and-swap that saw `seen`: mark it
 * contended (2) and sleep while it is held. Whoever gets it this way
 * leaves it at 2, so its release wakes the next sleeper, if any. */
void rt_lock_wait(rt_lock *l, uint32_t seen)
{
	if (seen != 2)
		seen = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	while (seen != 0) {
		int e = errno; /* the program's: a futex error must not leak */
		syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		errno = e;
		seen = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	}
}

void rt_lock_wake(rt_lock *l)
{
	int e = errno;
	syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = e;
}
