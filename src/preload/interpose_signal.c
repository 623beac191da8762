/*
 * interpose_signal.c: the libc entry points other than the malloc family
 * that liballocprof_preload.so exports (procs.h).
 *
 * sigaction and signal, so that a program sees the default action for a
 * signal the runtime is watching for dump_on=, and so that any handler the
 * program installs takes the signal over from the runtime. Every handler
 * the program installs for an asynchronous signal is wrapped in the
 * runtime's trampoline, which holds the signal back while the thread is
 * inside the runtime (sigmask.c); the program still sees its own action.
 *
 * _exit and _Exit, so that a process leaving without exit() (a pre-fork
 * server's worker, a multiprocessing child, a SIGTERM handler) still writes
 * its profile at exit, as exit() does through the library destructor; then
 * the next definition (glibc's) ends the process.
 *
 * pthread_exit, so that a process whose main thread ends with it still
 * ends when its last other thread does (dumper_main_left): glibc counts
 * the runtime's threads too, so the process went on for ever.
 *
 * pthread_getattr_np, so that a sample taken inside it, which holds the
 * thread's own lock, does not ask it for the thread's stack again
 * (unwind_getattr_np).
 *
 * dlclose, so that the mappings of an object about to be unloaded are
 * remembered and samples taken in it can still be symbolised.
 *
 * chroot, so that the output directory stays reachable in a daemon that
 * confines itself after start-up (outdir.h); unshare and setns, whose
 * user and mount namespace changes need the runtime's threads stopped;
 * prctl, so that a program that installs a seccomp filter itself gets its
 * profile so far written first (rt_before_sandbox).
 *
 * signal and bsd_signal install with BSD semantics (SA_RESTART, the signal
 * blocked in its handler) and sysv_signal with System V's (SA_RESETHAND |
 * SA_NODEFER), as glibc's do.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "boot.h"
#include "procs.h"
#include "runtime_core.h"
#include "unwinder.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*handler_fn)(int);

EXPORT handler_fn bsd_signal(int sig, handler_fn handler);
EXPORT handler_fn sysv_signal(int sig, handler_fn handler);

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return procs_sigaction(sig, act, old);
}

EXPORT handler_fn signal(int sig, handler_fn handler)
{
	return procs_signal(sig, handler, SA_RESTART, true);
}

EXPORT handler_fn bsd_signal(int sig, handler_fn handler)
{
	return procs_signal(sig, handler, SA_RESTART, true);
}

EXPORT handler_fn sysv_signal(int sig, handler_fn handler)
{
	return procs_signal(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

EXPORT void _exit(int status)
{
	rt_before_exit_now();
	procs_real_exit(status);
}

/* glibc's _Exit is the same function under a second name. */
EXPORT void _Exit(int status) __attribute__((alias("_exit")));

EXPORT void pthread_exit(void *ret)
{
	static void (*_Atomic next)(void *);
	void (*fn)(void *) = atomic_load_explicit(&next, memory_order_relaxed);
	if (!fn) {
		fn = (void (*)(void *))boot_next_sym("pthread_exit");
		atomic_store_explicit(&next, fn, memory_order_relaxed);
	}
	if (syscall(SYS_gettid) == getpid())
		dumper_main_left();
	if (fn)
		fn(ret);
	syscall(SYS_exit, 0); /* no next definition: end the thread */
	__builtin_unreachable();
}

EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	return unwind_getattr_np(th, attr);
}

EXPORT int dlclose(void *handle)
{
	return procs_dlclose(handle);
}

EXPORT int chroot(const char *path)
{
	return procs_chroot(path);
}

EXPORT int unshare(int flags)
{
	return procs_unshare(flags);
}

EXPORT int setns(int fd, int nstype)
{
	return procs_setns(fd, nstype);
}

/* glibc declares it variadic; every option takes at most four more
 * arguments, passed on as unsigned long as the kernel reads them. */
EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	return procs_prctl(option, a2, a3, a4, a5);
}
