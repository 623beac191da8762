/*
 * unwinder.h: capturing the call stack of a sampled allocation.
 *
 * Three unwinders, chosen by ALLOCPROF_OPTIONS unwinder=:
 *   libunwind  nongnu libunwind (caches unwind info), behind a fast path:
 *              the frame-pointer walk for as long as each function on the
 *              way starts by setting up a frame pointer (checked once per
 *              return address), libunwind's steps from the first that does
 *              not; so the stack is libunwind's, at fp's cost where the
 *              code keeps frame pointers,
 *   libgcc     _Unwind_Backtrace from libgcc_s (lock-free on glibc 2.35+
 *              thanks to _dl_find_object),
 *   fp         frame-pointer walk, bounded by the thread's stack; cheapest,
 *              but loses frames of code built without frame pointers.
 * Each returns return addresses, innermost first. Frames inside the runtime
 * itself (the address range set by unwind_set_self) are dropped from the
 * top, so a stack starts at the program's call to malloc.
 *
 * Called with the runtime's reentrancy guard set: anything an unwinder
 * allocates goes straight to the real allocator.
 *
 * Descriptors: libunwind's memory checks are redirected so that they use
 * none (unwind_nofd.c); the others never used any.
 *
 * Stack: the frames go into a per-thread buffer, not onto the stack. A
 * capture on a stack with less than UNWIND_STACK_NEED bytes left below the
 * stack pointer (an alternate signal stack, a coroutine's stack, whose
 * extent is unknown and so counts as none) runs libunwind from the saved
 * registers on a per-thread stack of the runtime's (the libunwind kinds),
 * or takes UNWINDER_FP_CHECKED: a frame-pointer walk that reads every
 * frame record with process_vm_readv, a few hundred bytes of stack.
 */
#ifndef AP_PRELOAD_UNWINDER_H
#define AP_PRELOAD_UNWINDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum unwinder_kind {
	UNWINDER_LIBUNWIND = 0,
	UNWINDER_LIBGCC = 1,
	UNWINDER_FP = 2,
	/* Internal (no option name): the checked walk for small stacks. */
	UNWINDER_FP_CHECKED = 3,
	/* Internal (no option name): unw_backtrace alone, without the
	 * frame-pointer fast path UNWINDER_LIBUNWIND takes; for comparison. */
	UNWINDER_LIBUNWIND_ONLY = 4
} unwinder_kind;

/* Option names, index = unwinder_kind, NULL-terminated. */
extern const char *const unwinder_names[];

/* Frames above max_depth that unwind_capture may need to skip. */
#define UNWIND_SELF_MAX 16
#define UNWIND_DEPTH_MAX 256
/*
 * Stack a whole sample may use below malloc's caller with a full unwind.
 * Measured with tests/integration/progs/small_stack measure-main (warm,
 * rate=1): libunwind 5.2 KiB, libgcc 1.8 KiB, fp 0.4 KiB; the checked walk
 * on a coroutine's stack 0.4 KiB. A little over twice the worst.
 */
#define UNWIND_STACK_NEED ((size_t)12 * 1024)

/* Drop leading frames whose address is in [lo, hi) (0, 0 = drop none). */
void unwind_set_self(uintptr_t lo, uintptr_t hi);
/* The executable range of the object containing addr (for unwind_set_self). */
int unwind_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi);

/*
 * Resolve and warm the unwinder up (first-use costs: libgcc_s lookup, the
 * unwinders' caches). 0, or AP_EUNSUPPORTED when it is not available (then
 * callers fall back to another kind).
 */
int unwind_prepare(unwinder_kind k);

/*
 * Capture up to max (<= UNWIND_DEPTH_MAX) return addresses, innermost
 * first, runtime frames dropped, into the calling thread's own buffer;
 * returns it, *depth = the number stored. Valid until the thread's next
 * capture.
 */
const uintptr_t *unwind_capture_own(unwinder_kind k, int max, int *depth);

/* Lookups of unwind tables (libunwind's, by the libunwind unwinder) this
 * thread made since the runtime last took the count (ehtrim.h). */
extern __thread unsigned unwind_lookups;
/* The libunwind unwinder's caches (x86-64; zeros elsewhere): entries in
 * use and sets (two entries each) of its frame rules and of its
 * frame-pointer verdicts. Each table starts at 1024 sets and doubles, up
 * to 8192 sets of rules and 32768 of verdicts, as fills and evictions
 * show it too small (unwinder.c). */
typedef struct unwind_cache_info {
	size_t rules_used, rules_sets, fp_used, fp_sets;
} unwind_cache_info;
void unwind_cache_stats(unwind_cache_info *out);
/*
 * pthread_getattr_np, which the runtime exports (interpose_signal.c): the
 * next definition's answer, with the thread marked as inside it
 * meanwhile. glibc's holds the thread's own lock while it allocates (a CPU
 * set; for the main thread, a read of /proc/self/maps), and a thread's
 * first capture looks its stack up through it: a sample taken in there
 * would wait on that lock for ever. Java's virtual machine calls it first
 * thing in every thread it starts (so at rate=1 every one hung), Rust's
 * standard library and V8 too. Marked, the capture goes on without the
 * bounds and the thread's next one looks them up.
 */
int unwind_getattr_np(pthread_t th, pthread_attr_t *attr);

/* The calling thread is exiting: give its capture buffer back. */
void unwind_thread_exit(void);
/* The sample is done with what unwind_capture_own returned. After
 * unwind_thread_exit (a sample in a destructor that runs after the
 * runtime's: another thread-specific key's, which pthread_key_create
 * numbered later) the buffers it mapped again are given back here;
 * nothing else would, and a program that starts and ends threads lost
 * 4 KiB for each. */
void unwind_capture_release(void);
/* The same, copied into pcs. Returns the number stored. */
int unwind_capture(unwinder_kind k, uintptr_t *pcs, int max);

/*
 * fork (and a raw clone the runtime adopts): the thread that forks becomes
 * the child's main thread, on the stack it had. Before the fork, in that
 * thread: look its stack up now if it never was. In the child: make it the
 * main thread's, so a child forked from any thread but the parent's main
 * one does not walk its stack against the parent's main-thread bounds.
 */
void unwind_atfork_prepare(void);
void unwind_atfork_child(void);

/* Forget what the fast path learnt about functions (whether each keeps a
 * frame pointer): after dlclose, other code may come to those addresses.
 * Async-signal-safe. */
void unwind_forget_code(void);

/* Make libunwind's memory checks descriptor-free (unwind_nofd.c); before
 * its first use. 0, or AP_EUNSUPPORTED when its object cannot be patched. */
int unwind_nofd_install(void);
/* Is [a, a + n) certainly readable: between the caller's frame and the
 * top of the calling thread's stack, or in a segment of an object loaded
 * when the runtime started (unwind_nofd.c answers libunwind's checks of
 * such addresses without a system call)? */
bool unwind_stack_readable(uintptr_t a, size_t n);

#endif
