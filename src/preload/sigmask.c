/*
 * sigmask.c: blocking the program's asynchronous signals while a thread is
 * inside the runtime (runtime_core.h, "Signals and re-entry").
 *
 * The raw rt_sigprocmask system call with the kernel's 64-bit set: no
 * sigset_t (128 bytes) to keep per thread, and glibc's wrapper would only
 * add the filtering of its internal signals, which the set below already
 * leaves out. Both calls keep errno: they run inside the program's malloc.
 */
#include "runtime_core.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's signal set (64 signals on Linux): bit s - 1 is signal s. */
#define SIGBIT(s) ((uint64_t)1 << ((s) - 1))
/* Every signal but the synchronous ones (a fault must reach the program's
 * handler or kill it, not wait) and glibc's internal 32 and 33 (thread
 * cancellation, set*id broadcasts). SIGKILL and SIGSTOP the kernel ignores. */
static const uint64_t rt_async_sigs =
	~(SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) | SIGBIT(SIGILL) |
	  SIGBIT(SIGTRAP) | SIGBIT(SIGSYS) | SIGBIT(SIGABRT) | SIGBIT(32) |
	  SIGBIT(33));

uint64_t rt_sigs_block(void)
{
	uint64_t old = 0;
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &rt_async_sigs, &old, sizeof old);
	errno = e;
	return old;
}

void rt_sigs_restore(uint64_t old)
{
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	errno = e;
}
