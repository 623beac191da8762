/*
 * sigmask.c: keeping the program's signal handlers out of the runtime
 * (runtime_core.h, "Signals and re-entry").
 *
 * Every handler the program installs for an asynchronous signal is
 * replaced, in the kernel, by one trampoline; the program's action is kept
 * here (prog[]) and is what sigaction reports back, flags and mask as set.
 * The trampoline calls the program's handler unless its thread is inside
 * the runtime; then it adds the signal to the interrupted context's mask
 * (the kernel restores that mask when the trampoline returns), queues the
 * signal again to its own thread with the same siginfo, and notes it in
 * rt_tls.deferred. The kernel keeps it pending, queued with its siginfo as
 * any blocked signal (real-time signals keep every instance), until
 * rt_leave unblocks it: the handler then runs at once, outside the runtime.
 *
 * Not wrapped, and so counted in rt.hot.sigs_unwrapped (rt_enter then blocks
 * the asynchronous signals the old way): handlers with SA_RESETHAND (the
 * kernel would reset the trampoline, and a held-back signal would then take
 * the default action), and handlers seen installed that the runtime did
 * not install (raw rt_sigaction system calls are not seen at all).
 *
 * Mask calls use the raw rt_sigprocmask with the kernel's 64-bit set: no
 * sigset_t (128 bytes) per thread; glibc's wrapper would only filter its
 * internal signals, which the set below leaves out. They keep errno: they
 * run inside the program's malloc.
 */
#include "runtime_core.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define NSIG_K 65
/* The kernel's signal set (64 signals on Linux): bit s - 1 is signal s. */
#define SIGBIT(s) ((uint64_t)1 << ((s) - 1))
/* Every signal but the synchronous ones (a fault must reach the program's
 * handler or kill it, not wait) and glibc's internal 32 and 33 (thread
 * cancellation, set*id broadcasts). SIGKILL and SIGSTOP the kernel ignores. */
static const uint64_t rt_async_sigs =
	~(SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) | SIGBIT(SIGILL) |
	  SIGBIT(SIGTRAP) | SIGBIT(SIGSYS) | SIGBIT(SIGABRT) | SIGBIT(32) |
	  SIGBIT(33) | SIGBIT(SIGKILL) | SIGBIT(SIGSTOP));

/* The asynchronous signals whose handlers are not wrapped are in
 * rt.hot.sigs_unwrapped (runtime_core.h). */

uint64_t rt_sigs_block(void)
{
	uint64_t old = 0;
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &rt_async_sigs, &old, sizeof old);
	errno = e;
	return old;
}

bool rt_sigs_all_async(uint64_t mask)
{
	/* glibc never blocks its internal 32 and 33, which the set leaves
	 * out; SIGKILL and SIGSTOP cannot be blocked. */
	return (mask & rt_async_sigs) == rt_async_sigs;
}

uint64_t rt_sigs_current(void)
{
	uint64_t cur = 0;
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, sizeof cur);
	errno = e;
	return cur;
}

void rt_sigs_restore(uint64_t old)
{
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	errno = e;
}

/*
 * Unblock the signals in *set. On x86-64 the system call instruction is
 * the runtime's own, not libc's syscall(): the held-back handler then runs
 * with the runtime's code as the interrupted place, which it is, rather
 * than inside libc (a handler that stays out of libc's state, as
 * progs/sig_reentry's do, would otherwise skip every held-back signal).
 */
static void unblock(const uint64_t *set)
{
#if defined(__x86_64__)
	long ret;
	register long size __asm__("r10") = sizeof *set;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_rt_sigprocmask), "D"((long)SIG_UNBLOCK), "S"(set),
			   "d"(0L), "r"(size)
			 : "rcx", "r11", "memory");
	(void)ret;
#else
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, set, NULL, sizeof *set);
#endif
}

void rt_sigs_release(void)
{
	uint64_t d = rt_tls.deferred;
	rt_tls.deferred = 0;
	atomic_signal_fence(memory_order_seq_cst);
	int e = errno;
	unblock(&d);
	errno = e;
}

/* The program's actions, each under a sequence lock (odd: being written)
 * so the trampoline never calls half of an old and half of a new one.
 * Writers are serialised by wlock, taken with every signal blocked so a
 * handler calling sigaction cannot spin on its own thread's lock. */
static struct sigaction prog[NSIG_K];
static _Atomic unsigned seq[NSIG_K];
static atomic_flag wlock = ATOMIC_FLAG_INIT;

static void read_prog(int sig, struct sigaction *out)
{
	unsigned s0, s1;
	do {
		while ((s0 = atomic_load(&seq[sig])) & 1u)
			;
		memcpy(out, &prog[sig], sizeof *out);
		atomic_thread_fence(memory_order_acquire);
		s1 = atomic_load(&seq[sig]);
	} while (s0 != s1);
}

static void write_prog(int sig, const struct sigaction *act)
{
	atomic_fetch_add(&seq[sig], 1u);
	atomic_thread_fence(memory_order_release);
	memcpy(&prog[sig], act, sizeof *act);
	atomic_fetch_add(&seq[sig], 1u);
}

bool rt_sig_defer_if_inside(int sig, siginfo_t *si, void *ucv)
{
	if (!rt_tls.guard)
		return false;
	int e = errno;
	ucontext_t *uc = ucv;
	sigaddset(&uc->uc_sigmask, sig);
	rt_tls.deferred |= SIGBIT(sig);
	/* Blocked while we run (never installed with SA_NODEFER), so it
	 * stays pending; to its own thread any si_code is allowed. */
	syscall(SYS_rt_tgsigqueueinfo, (long)syscall(SYS_getpid),
		(long)syscall(SYS_gettid), sig, si);
	errno = e;
	return true;
}

static void trampoline(int sig, siginfo_t *si, void *ucv)
{
	if (rt_sig_defer_if_inside(sig, si, ucv))
		return;
	struct sigaction a;
	read_prog(sig, &a);
	if (a.sa_flags & SA_NODEFER && !sigismember(&a.sa_mask, sig)) {
		/* The program asked to take sig again inside its handler. */
		uint64_t b = SIGBIT(sig);
		int e = errno;
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &b, NULL, sizeof b);
		errno = e;
	}
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, ucv);
	else if (a.sa_handler != SIG_IGN && a.sa_handler != SIG_DFL)
		a.sa_handler(sig);
}

static bool is_handler(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) ||
	       (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

static bool is_trampoline(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == trampoline;
}

static bool wrappable(int sig)
{
	return sig > 0 && sig < NSIG_K && (rt_async_sigs & SIGBIT(sig));
}

int rt_sig_action(int sig, const struct sigaction *act, struct sigaction *old,
		  int (*real)(int, const struct sigaction *, struct sigaction *))
{
	if (!wrappable(sig))
		return real(sig, act, old);
	uint64_t all = ~(uint64_t)0, m = 0;
	int e = errno;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &m, sizeof m);
	errno = e;
	while (atomic_flag_test_and_set(&wlock))
		;
	struct sigaction before = prog[sig], prev, k;
	const struct sigaction *give = act;
	bool wrap = act && is_handler(act) && !(act->sa_flags & SA_RESETHAND);
	if (wrap) {
		k = *act;
		k.sa_sigaction = trampoline;
		k.sa_flags = (act->sa_flags | SA_SIGINFO) & ~SA_NODEFER;
		give = &k;
		write_prog(sig, act); /* before the kernel can deliver to it */
	}
	int rc = real(sig, give, &prev);
	if (rc != 0 && wrap)
		write_prog(sig, &before);
	if (rc == 0 && act) {
		if (wrap || !is_handler(act))
			atomic_fetch_and(&rt.hot.sigs_unwrapped, ~SIGBIT(sig));
		else
			atomic_fetch_or(&rt.hot.sigs_unwrapped, SIGBIT(sig));
	}
	atomic_flag_clear(&wlock);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &m, NULL, sizeof m);
	errno = rc == 0 ? e : errno;
	if (rc == 0 && old)
		*old = is_trampoline(&prev) ? before : prev;
	return rc;
}

void rt_sig_wrap_existing(int (*real)(int, const struct sigaction *, struct sigaction *))
{
	for (int s = 1; s < NSIG_K; s++) {
		struct sigaction cur;
		if (!wrappable(s) || real(s, NULL, &cur) != 0 || !is_handler(&cur) ||
		    is_trampoline(&cur))
			continue;
		rt_sig_action(s, &cur, NULL, real);
	}
}
