/*
 * busy_alloc.c: an allocator underneath the runtime, for
 * tests/integration/attach_busy_test.sh and signal_inside_test.sh. Its
 * malloc is glibc's; once armed (busy_alloc_arm), its next call first
 * calls the runtime's ap_runtime_attach and ap_runtime_detach and keeps
 * their results; once armed with a signal (busy_alloc_arm_signal), its
 * next call first raises that signal in the calling thread. free,
 * calloc, realloc and posix_memalign are glibc's too, defined here
 * because the runtime takes the allocator underneath only when they come
 * from the same object as its malloc.
 *
 * At a rate below the range's minimum the runtime takes each sampled
 * block from the allocator underneath while its guard is held, so those
 * calls come from a thread inside the runtime: the state in which
 * `allocprof attach` must not run them (a sample half taken, maybe a
 * runtime lock held), and in which both must answer AP_EBUSY.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static int armed, inside, armed_signal;
static int att_rc = 1, det_rc = 1; /* 1: never called */

EXPORT void busy_alloc_arm(void)
{
	__atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
}

EXPORT void busy_alloc_arm_signal(int sig)
{
	__atomic_store_n(&armed_signal, sig, __ATOMIC_SEQ_CST);
}

EXPORT void busy_alloc_results(int *att, int *det)
{
	*att = att_rc;
	*det = det_rc;
}

EXPORT void *malloc(size_t n)
{
	int sig = __atomic_exchange_n(&armed_signal, 0, __ATOMIC_SEQ_CST);
	if (sig)
		raise(sig); /* delivered before raise returns */
	if (__atomic_load_n(&armed, __ATOMIC_SEQ_CST) && !inside) {
		inside = 1; /* dlsym may allocate: that call goes straight on */
		armed = 0;
		void *a = dlsym(RTLD_DEFAULT, "ap_runtime_attach");
		void *d = dlsym(RTLD_DEFAULT, "ap_runtime_detach");
		int (*att)(const char *) = 0;
		int (*det)(char *, size_t) = 0;
		__builtin_memcpy(&att, &a, sizeof a);
		__builtin_memcpy(&det, &d, sizeof d);
		char path[256];
		att_rc = att ? att("") : 2;
		det_rc = det ? det(path, sizeof path) : 2;
		inside = 0;
	}
	return __libc_malloc(n);
}

EXPORT void free(void *p)
{
	__libc_free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
	return __libc_calloc(n, m);
}

EXPORT void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
