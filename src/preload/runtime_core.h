/*
 * runtime_core.h: the runtime's global state and the slow paths the
 * interposed entry points (interpose.c) call.
 *
 * Division of labour: interpose.c holds the exported malloc family and their
 * fast paths (the thread's sampler counter, the sampled-set lookup); this
 * core holds everything behind AP_UNLIKELY: initialisation, per-thread
 * set-up, recording samples, frees of sampled pointers, fork handling, the
 * public ap_runtime_* API. dumper.c runs the dump triggers and dump.c turns
 * the tables into a profile file.
 */
#ifndef AP_PRELOAD_RUNTIME_CORE_H
#define AP_PRELOAD_RUNTIME_CORE_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/sampler.h"
#include "arena.h"
#include "config.h"
#include "log.h"
#include "region.h"
#include "sampled_set.h"
#include "stack_table.h"

/* The allocator underneath (dlsym RTLD_NEXT), or bootstrap stand-ins. */
typedef struct real_fns {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
} real_fns;

/* Per-thread state, initial-exec TLS. The sampler comes first so its
 * counter sits at a fixed offset from the thread pointer. */
typedef struct rt_thread {
	ap_sampler sampler;
	int guard;          /* >0: inside the runtime; allocations pass through */
	bool ready;         /* sampler initialised for this thread */
	/* rt.seed_gen when this thread was last seeded (16 bits: it fits in
	 * padding, keeping the static TLS the runtime takes unchanged) */
	uint16_t seed_gen;
	uint64_t sigsave;   /* signal mask from rt_sample_begin to _end */
	uint64_t forksave;  /* signal mask across the fork handlers */
	uint64_t idx;       /* 1-based thread number: its seed stream */
	/* control.h: the sampling state's generation this thread has, and
	 * its links in the registry of threads with a sampler. */
	uint32_t gen;
	bool listed;
	struct rt_thread *reg_next, *reg_prev;
	uint64_t deferred;  /* signals held back while inside (sigmask.c) */
} rt_thread;

/*
 * Signals and re-entry. No handler of the program may run while its thread
 * is inside the runtime (guard set, or a runtime lock held): it could find
 * a runtime lock held by its own thread (a free of a sampled block, exit()
 * and its dump), and a siglongjmp out of it could leave a guard set or a
 * lock held. sigmask.c wraps every handler the program installs through
 * sigaction/signal in a trampoline that, when the thread is inside, holds
 * the signal back (blocked in the interrupted context and queued again
 * with its siginfo) until rt_leave drops the guard to zero and unblocks
 * it. So entering and leaving cost no system call. A caught asynchronous
 * signal whose handler is not wrapped (installed before the runtime in a
 * way it could not see, or with SA_RESETHAND) sets a bit in
 * rt.hot.sigs_unwrapped, and while any is set rt_enter blocks the asynchronous
 * signals instead (one rt_sigprocmask each way). Synchronous signals
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT) and glibc's
 * internal ones (32, 33) are neither wrapped nor blocked: a fault must
 * reach the program's handler or kill it.
 *
 * Outside the runtime a handler may interrupt the allocator underneath
 * (the fast paths' tail calls, the real free after a sampled block's
 * record is gone) while it holds its lock. A handler calling exit() there
 * runs the dump at exit with that lock held, so the exit path keeps away
 * from the allocator, libc's calls included (opendir was one: procs.c).
 */
#include <signal.h>
uint64_t rt_sigs_block(void);   /* returns the mask to restore */
uint64_t rt_sigs_current(void); /* the thread's blocked signals, unchanged */
/* Does mask block every asynchronous signal (as sigfillset does)? */
bool rt_sigs_all_async(uint64_t mask);
void rt_sigs_restore(uint64_t old);
/* Unblock the signals held back on this thread (guard back at zero). */
void rt_sigs_release(void);
/* In a handler of the (asynchronous) signal sig: when this thread is inside
 * the runtime, hold sig back until it leaves (rt_leave then lets it in, and
 * the handler runs again) and return true; else false. */
bool rt_sig_defer_if_inside(int sig, siginfo_t *si, void *ucv);
/* rt_enter's "no mask to restore": the kernel never blocks SIGKILL, so no
 * saved mask has every bit set. */
#define RT_SIGS_NONE UINT64_MAX
/* sigaction as the program sees it: its handlers wrapped, its view kept.
 * real is libc's sigaction. Async-signal-safe. */
int rt_sig_action(int sig, const struct sigaction *act, struct sigaction *old,
		  int (*real)(int, const struct sigaction *, struct sigaction *));
/* Wrap the handlers installed before the runtime initialised. */
void rt_sig_wrap_existing(int (*real)(int, const struct sigaction *, struct sigaction *));

enum rt_state { RT_NEW = 0, RT_BUSY = 1, RT_READY = 2, RT_OFF = 3 };

/*
 * The flags a sample reads outside its own tables, kept together on the
 * runtime's first cache line with its state: spread over five lines in
 * four files, each was a miss at every sample once the program's own work
 * had evicted it. All are written rarely (start-up, control changes,
 * signal handler changes, fork).
 */
typedef struct rt_hot_flags {
	_Atomic uint32_t rate_gen;       /* control.h: bumped at each change */
	bool table_on;                   /* sample_table_rt.h: set at init */
	atomic_bool http_child_restart;  /* http_runtime.c: a fork child's */
	_Atomic uint64_t active_rate;    /* control.c: 0 = off */
	/* sigmask.c (above): caught asynchronous signals whose handler is
	 * not wrapped, bit s - 1 */
	_Atomic uint64_t sigs_unwrapped;
} rt_hot_flags;

typedef struct runtime {
	_Atomic int state;
	rt_hot_flags hot; /* with state, the first 64 bytes of rt */
	rt_options opt;
	arena a;
	stack_table table __attribute__((aligned(64))); /* its hot lines whole */
	uint64_t seed_base;     /* per-thread seeds derive from it (seed != 0) */
	_Atomic uint16_t seed_gen; /* bumped when a later attach sets seed=: threads reseed */
	uint64_t stream_salt;   /* 0; in a fork child pid << 32: its own streams */
	atomic_uint_fast64_t nthreads;
	uint64_t start_realtime_ns;
	long pid;               /* pid the runtime last (re)started in */
	bool forked_child;      /* a fork child that follows: pid in names */
	pthread_mutex_t dump_lock; /* one dump at a time; also held at fork */
	uint64_t dump_seq;      /* %n of the next file */
	char pattern[RT_PATH_CAP]; /* output pattern, anchored at the start cwd */
	atomic_bool sandboxed;  /* the program installed a seccomp filter:
				   no dump, no thread, no sample from then on
				   (rt_before_sandbox) */
} runtime;

/* Hidden on the declarations too: then the compiler knows they live in this
 * object and reaches them PC-relative (jmp *rt_real+8(%rip)) instead of
 * through the GOT, one instruction less on every fast path. */
#define RT_HIDDEN __attribute__((visibility("hidden")))
/* name: a hidden second name, of decl's type, for the function defined in
 * this file whose symbol is sym (a string: the C name, or an __asm__
 * label). The rt_entry_* names below are made so. */
#define RT_HIDDEN_ALIAS(decl, name, sym) \
	extern __typeof__(decl) name __attribute__((alias(sym), visibility("hidden")))
extern RT_HIDDEN runtime rt;
extern RT_HIDDEN real_fns rt_real;

/*
 * The usable size the underlying allocator gives a request of size bytes
 * (asked of it once per size, memoised; usable_memo.c). Call only inside
 * the runtime (guard held): it allocates through rt_real.
 */
uint64_t rt_underlying_usable(uint64_t size);
/* How it answers: "nallocx", "mi_good_size", "glibc" (no allocation),
 * "ask" (by allocation), "unresolved" (not asked yet); for the memory
 * report. */
const char *rt_underlying_usable_way(void);
extern RT_HIDDEN sampled_set rt_set;
/*
 * The free() fast path's one test: the byte of p's 8 KiB window in the
 * sampled set's filter (sampled_set.h), rt_set_filter, in the runtime's
 * .bss (512 KiB of bytes, folding addresses every 4 GiB; a page of them
 * is written only for a 32 MiB window where allocprof's range or a
 * sampled block of the set lies, reads of the others map the zero page).
 * Zero: p is the allocator's alone. Nonzero: p may be allocprof's, and
 * rt_classify asks the granule's word, the range and the set. Two kinds
 * of granules make it nonzero:
 * - allocprof's own range (design 2, region.h): the bootstrap pool and,
 *   with range=1, the region serving sampled blocks below range_max,
 *   whose granules are claimed (saturated for good) before any of their
 *   pages is handed out;
 * - those where a block of the sampled set starts (design 1): sampled
 *   blocks the allocator underneath holds (range_max and larger, every
 *   sample at a thread rate below RT_REGION_MIN_RATE, all of them with
 *   range=0, the default, or no region), each counted before it is returned.
 * So a pointer's owner sees the byte that matters for it (a stale read
 * by anyone else cannot concern its pointer). The array is a plain object,
 * not _Atomic, so free is mov (32-bit), lea, shr, cmpb mem, jne, jmp
 * (6 instructions). Writers update it with relaxed atomics
 * (sampled_set.c); free's plain read of a byte cannot tear, but in C11
 * terms it races with them, as ThreadSanitizer would say: an atomic load
 * is a separate movzbl, a seventh instruction on every free. The tests
 * read the filter with relaxed loads.
 */
extern RT_HIDDEN set_filter rt_set_filter;
extern RT_HIDDEN region rt_region;
extern RT_HIDDEN __thread rt_thread rt_tls __attribute__((tls_model("initial-exec")));
extern _Atomic uint64_t rt_unwind_ns;
/* attach.c: loaded into a running program (allocprof attach), not
 * preloaded; the options it was given (instead of ALLOCPROF_OPTIONS). */
extern RT_HIDDEN bool rt_attached;
extern RT_HIDDEN const char *rt_attach_options;

/* Enter the runtime on this thread: the guard set (and, while some caught
 * asynchronous signal has an unwrapped handler, those signals blocked);
 * rt_leave undoes both and lets held-back signals in. Pairs nest (each
 * restores the mask it saved). The signal fences keep the compiler from
 * moving the guard's updates across the code they protect: the trampoline
 * reading it runs on this same thread. */
static inline uint64_t rt_enter(void)
{
	uint64_t old = RT_SIGS_NONE;
	if (atomic_load_explicit(&rt.hot.sigs_unwrapped, memory_order_relaxed))
		old = rt_sigs_block();
	rt_tls.guard++;
	atomic_signal_fence(memory_order_seq_cst);
	return old;
}

static inline void rt_leave(uint64_t old)
{
	atomic_signal_fence(memory_order_seq_cst);
	rt_tls.guard--;
	atomic_signal_fence(memory_order_seq_cst);
	if (old != RT_SIGS_NONE)
		rt_sigs_restore(old);
	if (!rt_tls.guard && rt_tls.deferred)
		rt_sigs_release();
}

/* Initialise the runtime once (idempotent, thread-safe). */
void rt_ensure_init(void);

/*
 * A fast path said "sampled" for an allocation of n bytes. Returns true
 * when the caller must allocate and then call rt_sample_end (the thread's
 * guard is set in between); false when the allocation is not recorded
 * (inside the runtime, runtime inactive, or the thread's first allocation
 * turned out not to be sampled).
 */
bool rt_sample_begin(size_t n, ap_sample_info *info);
/* Record p (NULL: the allocation failed, nothing recorded); clears the guard. */
void rt_sample_end(void *p, const ap_sample_info *info);

static inline bool rt_maybe_ours(const void *p)
{
	return rt_set_filter.any[set_filter_any_index((uintptr_t)p)] != 0;
}

/* Behind a nonzero byte: is p's eighth of its granule marked in the
 * granule's word (sampled_set.h)? False: p is the allocator's alone. The range's
 * granules have every bit set. */
static inline bool rt_maybe_key(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	return (set_filter_word(&rt_set_filter, a) & set_filter_bit(a)) != 0;
}

enum rt_owner { RT_OWNER_NONE = 0, RT_OWNER_RANGE, RT_OWNER_SET };
/* Behind rt_maybe_ours: whose is p? A range block (pool or region), a
 * sampled-set entry, or the allocator underneath's alone. */
enum rt_owner rt_classify(const void *p);

/*
 * Threads sampling at a rate of at least this many bytes get their sampled
 * blocks from the region: below it samples are so frequent (rate=1: every
 * block) that a page each would multiply the program's memory.
 */
#define RT_REGION_MIN_RATE ((uint64_t)16384)

/*
 * Between rt_sample_begin and rt_sample_end: a block of n bytes aligned to
 * `align` (a power of two; 0 = page) from the region, its first n bytes
 * zero if `zero`, or NULL when the region does not serve it (thread rate
 * below RT_REGION_MIN_RATE, n of range_max bytes or more, no region,
 * exhausted): the caller then allocates from the real allocator.
 */
void *rt_region_alloc(size_t n, size_t align, bool zero);
/*
 * Between rt_sample_begin and rt_sample_end, for realloc(p, n) of a block
 * p of the real allocator: move it into a region block (copying
 * min(old usable, n) bytes, freeing p); NULL when not served (as above, or
 * the allocator underneath cannot report p's size): p is then untouched.
 */
void *rt_region_move(void *p, size_t n);
/* free(p) behind rt_maybe_ours: classify p and free it accordingly. */
void rt_free_slow(void *p);
/* realloc and malloc_usable_size of a range block (RT_OWNER_RANGE). */
void *rt_realloc_range(void *p, size_t n);
size_t rt_usable_range(void *p);
/* realloc of a sampled-set entry (RT_OWNER_SET). */
void *rt_realloc_sampled(void *p, size_t n);

/*
 * The runtime's own malloc family (interpose.c) under hidden names. The
 * runtime calls these, never the exported symbols: a call to `malloc`
 * from inside the library goes through the dynamic linker to the first
 * definition in the search order, which is the program's own when its
 * executable defines malloc (an allocator linked in statically), and a
 * wrapper such as tc_malloc would then hand the allocator underneath's
 * request to another allocator.
 */
RT_HIDDEN void *rt_entry_malloc(size_t n);
RT_HIDDEN void rt_entry_free(void *p);
RT_HIDDEN void rt_entry_free_sized(void *p, size_t n);
RT_HIDDEN void *rt_entry_calloc(size_t n, size_t m);
RT_HIDDEN void *rt_entry_realloc(void *p, size_t n);
RT_HIDDEN int rt_entry_posix_memalign(void **out, size_t align, size_t n);
RT_HIDDEN void *rt_entry_memalign(size_t align, size_t n);
RT_HIDDEN void *rt_entry_valloc(size_t n);
RT_HIDDEN void *rt_entry_pvalloc(size_t n);
RT_HIDDEN size_t rt_entry_malloc_usable_size(void *p);


/* _exit and _Exit (interpose_signal.c), before the process ends: the
 * profile at exit, as the library destructor writes it for exit(). */
void rt_before_exit_now(void);
/* The exec family (interpose_exec.c), before the program is replaced:
 * its profile, when this process sampled anything since it started or
 * forked (the next program's runtime names its files apart, procs.h);
 * with exec_note=1, a line when envp (the next program's environment)
 * drops the runtime from LD_PRELOAD. what: the path or file name, or
 * NULL (fexecve). */
void rt_before_exec(const char *what, char *const envp[]);
/* exec_note's line alone (rt_before_exec, and posix_spawn's, which starts
 * a program without replacing this one). */
void rt_note_exec(const char *what, char *const envp[]);
/* prctl(PR_SET_SECCOMP) (interpose_signal.c), before the program confines
 * itself: a filter cannot be read from inside, and a call it forbids
 * (kill being the usual action) would end the program at its next dump.
 * So the profile so far is written now, the runtime's threads stop and
 * sampling ends for this process. true when it did so; then, should the
 * call fail, rt_after_sandbox_failed undoes it. */
bool rt_before_sandbox(void);
void rt_after_sandbox_failed(void);

/* A copy of the process the fork handlers did not see (raw clone): take
 * it over as fork's child handler would (runtime.c). */
void rt_adopt_child(void);

/* dumper.c: triggers and the dumper thread. */
void dumper_configure(void);   /* install the signal handler (init) */
/* A handler that only raises a flag and wakes the dumper (SA_RESTART);
 * a failure is one line naming `what`. */
void dumper_install_handler(int sig, void (*fn)(int), const char *what);
void dumper_start_if_needed(void);
long dumper_stop(void); /* the id of the thread it stopped, or 0 */
void dumper_after_sample(const table_totals *after);
/* One of the reasons for a dumper thread changed (dumper.c's needed()):
 * ask again on the next sample. */
void dumper_needed_changed(void);
void dumper_atfork_child(void);
/*
 * The runtime's own threads (the dumper, the HTTP server, the push
 * sender) add their ids when they start and take them out before they
 * return, so the dumper can tell when nothing else is left
 * (dumper_main_left). Fork children start with none.
 */
void rt_helper_started(void);
void rt_helper_ending(void);
/*
 * The main thread is ending with pthread_exit (interpose_signal.c) and
 * the process should end, with status 0, when its last other thread
 * does. glibc counts the runtime's threads among them, so it never
 * would: the dumper watches (every DUMPER_ORPHAN_POLL_NS) and calls exit(0)
 * once the main thread is gone and only the runtime's threads are left,
 * so the exit handlers run and the profile at exit is written.
 */
void dumper_main_left(void);
/* Wake the dumper thread (async-signal-safe; control.c's start_on). */
void dumper_wake(void);
/* From a signal handler (async-signal-safe): ask the dumper thread for a
 * profile and wait for it at most timeout_ms. False when no dumper thread
 * runs in this process or the wait ran out. */
bool dumper_dump_for_signal(unsigned timeout_ms);
/* At exit, before the last dump: the signal mask the exiting thread had
 * (rt_enter's). A blocked signal says exit() may have been called from a
 * handler, perhaps one that interrupted malloc: the exit profile then goes
 * without the allocator's statistics (whose locks that malloc may hold). */
void dumper_exit_mask(uint64_t old_mask);
/* Write a profile now; path NULL = next name from the pattern. */
int dumper_dump_now(const char *path);
/* The same, marked with what asked for it (NULL: nothing to mark); with
 * file false the profile is only handed to push= (push.h), not written. */
int dumper_dump_marked(const char *path, const char *trigger, bool file);

#endif
