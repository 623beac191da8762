/*
 * unwinder.c: the three stack unwinders behind unwinder.h.
 *
 * libgcc's _Unwind_Backtrace is looked up in libgcc_s.so.1 by dlopen, not by
 * name at link time: nongnu libunwind also exports _Unwind_Backtrace, so a
 * plain call would silently measure libunwind twice.
 *
 * The frame-pointer walk reads [fp] (the caller's frame pointer) and
 * [fp + 8] (the return address) on x86-64 and AArch64 alike, and stops as
 * soon as a frame pointer leaves the thread's stack, goes backwards or is
 * misaligned, so code built without frame pointers ends the walk instead of
 * crashing it. On a stack of unknown extent the same walk reads through
 * process_vm_readv instead (capture_fp_checked).
 *
 * Every capture starts by measuring the room left on its stack
 * (stack_room): below UNWIND_STACK_NEED, since libunwind alone needs about
 * 5 KiB, the libunwind unwinder runs on a stack of the runtime's
 * (capture_alt) and the others take the checked walk.
 */
#include "unwinder.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "allocprof/common.h"
#include "boot.h"

static uintptr_t self_lo, self_hi;

void unwind_set_self(uintptr_t lo, uintptr_t hi)
{
	self_lo = lo;
	self_hi = hi;
}

struct range_query {
	uintptr_t addr, lo, hi;
	int found;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct range_query *q = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int contains = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		uintptr_t e = s + ph->p_memsz;
		if (q->addr >= s && q->addr < e)
			contains = 1;
		if (s < lo)
			lo = s;
		if (e > hi)
			hi = e;
	}
	if (contains) {
		q->lo = lo;
		q->hi = hi;
		q->found = 1;
		return 1;
	}
	return 0;
}

int unwind_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
	struct range_query q = { (uintptr_t)addr, 0, 0, 0 };
	dl_iterate_phdr(range_cb, &q);
	if (!q.found)
		return AP_ENOTFOUND;
	*lo = q.lo;
	*hi = q.hi;
	return 0;
}

/* ---- libgcc ---------------------------------------------------------- */

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*getip_fn)(struct _Unwind_Context *);
static _Atomic(backtrace_fn) gcc_backtrace;
static _Atomic(getip_fn) gcc_getip;

struct gcc_state {
	uintptr_t *pcs;
	int n, max;
	getip_fn getip;
};

static _Unwind_Reason_Code gcc_cb(struct _Unwind_Context *ctx, void *arg)
{
	struct gcc_state *st = arg;
	if (st->n >= st->max)
		return _URC_END_OF_STACK;
	uintptr_t ip = (uintptr_t)st->getip(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	st->pcs[st->n++] = ip;
	return _URC_NO_REASON;
}

static int gcc_resolve(void)
{
	if (atomic_load(&gcc_backtrace))
		return 0;
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return AP_EUNSUPPORTED;
	backtrace_fn bt = (backtrace_fn)dlsym(h, "_Unwind_Backtrace");
	getip_fn ip = (getip_fn)dlsym(h, "_Unwind_GetIP");
	if (!bt || !ip)
		return AP_EUNSUPPORTED;
	atomic_store(&gcc_getip, ip);
	atomic_store(&gcc_backtrace, bt);
	return 0;
}

static int capture_gcc(uintptr_t *pcs, int max)
{
	backtrace_fn bt = atomic_load_explicit(&gcc_backtrace, memory_order_acquire);
	if (!bt)
		return 0;
	struct gcc_state st = { pcs, 0, max, atomic_load(&gcc_getip) };
	bt(gcc_cb, &st);
	/* The first frame is capture_gcc itself (the IP inside it). */
	return st.n;
}

/* ---- frame pointers -------------------------------------------------- */

/* The thread's own stack, [lo, hi); hi == 0: not looked up yet; lo == hi
 * == 1: the lookup failed. The main thread's comes from unwind_prepare:
 * glibc finds it by reading /proc/self/maps, with stdio, which takes more
 * stack than a sample may (its first sample could be on a small stack). */
static __thread uintptr_t stack_lo, stack_hi;
/* This thread is inside glibc's pthread_getattr_np (unwind_getattr_np),
 * and a capture there left its bounds to the next one. */
static __thread unsigned in_getattr;
static __thread bool bounds_later;
/* unwind_thread_exit ran: a sample in a later destructor (another key's,
 * with a higher index) maps the thread's buffers again, and
 * unwind_capture_release gives them back. */
static __thread bool thread_done;
static int (*_Atomic next_getattr)(pthread_t, pthread_attr_t *);
__thread unsigned unwind_lookups;
static uintptr_t main_lo, main_hi;
static pthread_t main_self; /* the thread main_lo and main_hi are of */

static bool on_main_thread(void)
{
	return syscall(SYS_gettid) == getpid();
}

/* glibc's pthread_getattr_np (the next definition after the runtime's). */
static int getattr_missing(pthread_t th, pthread_attr_t *attr)
{
	(void)th;
	(void)attr;
	return ENOSYS;
}

static int (*getattr_next(void))(pthread_t, pthread_attr_t *)
{
	int (*fn)(pthread_t, pthread_attr_t *) =
		atomic_load_explicit(&next_getattr, memory_order_relaxed);
	if (!fn) {
		fn = (int (*)(pthread_t, pthread_attr_t *))boot_next_sym("pthread_getattr_np");
		if (!fn)
			fn = getattr_missing;
		atomic_store_explicit(&next_getattr, fn, memory_order_relaxed);
	}
	return fn;
}

int unwind_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	int (*fn)(pthread_t, pthread_attr_t *) = getattr_next();
	in_getattr++;
	int rc = fn(th, attr);
	in_getattr--;
	return rc;
}

/* The thread's bounds are to be looked up (stack_bounds) before use. */
static inline bool bounds_unknown(void)
{
	return stack_hi == 0 || bounds_later;
}

static void stack_bounds(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (main_hi && on_main_thread()) {
		stack_lo = main_lo;
		stack_hi = main_hi;
		return;
	}
	stack_lo = stack_hi = 1;
	if (in_getattr) {
		/* Sampled inside glibc's pthread_getattr_np on this thread,
		 * which holds the thread's own lock while it allocates: asking
		 * it again would wait on that lock for ever. Unknown for this
		 * capture; the thread's next one looks them up. */
		bounds_later = true;
		return;
	}
	bounds_later = false;
	/* glibc allocates (and frees) a CPU set in there: from the scratch,
	 * not the program's heap (boot.h). */
	bool scratch = boot_scratch_begin();
	if (getattr_next()(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			stack_lo = (uintptr_t)addr;
			stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	if (scratch)
		boot_scratch_end();
}

/*
 * The readable segments of the objects loaded when the runtime started
 * (the program, ld.so, libc and the rest), taken once by unwind_prepare:
 * libunwind checks an address in them when a frame has no unwind rules,
 * the loader's own at the bottom of a constructor's stack above all, and
 * a seccomp filter that kills at its checks would end the program while
 * it starts. An object unloaded later (dlclose) may leave its range to
 * anything: the table is dropped then for good (readable_n 0), and the
 * checks go back to system calls.
 */
#define READABLE_MAX 192
static uintptr_t readable_lo[READABLE_MAX], readable_hi[READABLE_MAX];
static _Atomic int readable_n;

static int readable_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	int *n = data;
	for (int i = 0; i < info->dlpi_phnum && *n < READABLE_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || !ph->p_memsz)
			continue;
		/* Whole pages: the mapping covers them (ld.so maps the rest of
		 * the last page with the file, or zeros for the bss). */
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
		uintptr_t hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		readable_lo[*n] = lo;
		readable_hi[*n] = hi;
		(*n)++;
	}
	return 0;
}

static void readable_collect(void)
{
	if (atomic_load(&readable_n))
		return;
	int n = 0;
	dl_iterate_phdr(readable_cb, &n);
	atomic_store(&readable_n, n);
}

static void readable_forget(void)
{
	atomic_store(&readable_n, -1); /* never collected again */
}

bool unwind_stack_readable(uintptr_t a, size_t n)
{
	/* From the page this frame is in to the top of the thread's own
	 * stack: memory in use, mapped and readable. Not on another stack
	 * (a coroutine's walk runs on the runtime's own, capture_alt), nor
	 * below. */
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t from = sp & ~(uintptr_t)4095;
	if (stack_hi > 1 && sp > stack_lo && sp < stack_hi && from >= stack_lo && a >= from &&
	    a < stack_hi && n <= stack_hi - a)
		return true;
	int k = atomic_load(&readable_n);
	for (int i = 0; i < k; i++)
		if (a >= readable_lo[i] && a < readable_hi[i] && n <= readable_hi[i] - a)
			return true;
	return false;
}

void unwind_atfork_prepare(void)
{
	if (bounds_unknown())
		stack_bounds();
}

static void caches_atfork_child(void);

void unwind_atfork_child(void)
{
	/* A table another thread was growing at the fork: this child's
	 * copy of that flag would stay set. */
	caches_atfork_child();
	/* Unknown only in a raw clone's child (no prepare). Made by the
	 * parent's main thread, it keeps that thread's bounds; by another,
	 * 0 has the first sample look them up from that thread's own stack
	 * block (pthread_getattr_np reads /proc only for the main thread). */
	if (stack_hi == 0 && main_hi && pthread_equal(pthread_self(), main_self))
		return;
	main_lo = stack_lo;
	main_hi = stack_hi;
}

typedef struct cache_tab cache_tab;
static inline bool fn_keeps_fp(cache_tab *t, uintptr_t ret);

/*
 * The frame-pointer walk from frame record fp on the stack [lo, hi). With
 * `mixed` (the libunwind unwinder's fast path) it also stops after the
 * return address of a function without a frame pointer, whose frame
 * record it would read next: *stop is then the record that address came
 * from, else NULL.
 */
static inline int fp_walk(uintptr_t *pcs, int max, const uintptr_t *fp, uintptr_t lo,
			  uintptr_t hi, cache_tab *mixed, const uintptr_t **stop)
{
	int n = 0;
	*stop = NULL;
	while (n < max) {
		/* The record [f, f + 16) inside [lo, hi), written without f + 16,
		 * which wraps for a data register's -16 and would pass. */
		uintptr_t f = (uintptr_t)fp;
		if (f < lo || f >= hi || hi - f < 2 * sizeof(uintptr_t) ||
		    (f & (sizeof(uintptr_t) - 1)))
			break;
		uintptr_t ret = fp[1];
		if (ret == 0)
			break;
		pcs[n++] = ret;
		/* The runtime's own functions are built with frame pointers. */
		if (mixed && (ret < self_lo || ret >= self_hi) && !fn_keeps_fp(mixed, ret)) {
			*stop = fp;
			break;
		}
		const uintptr_t *next = (const uintptr_t *)fp[0];
		if ((uintptr_t)next <= f)
			break;
		fp = next;
	}
	return n;
}

static int capture_fp_checked(uintptr_t *pcs, int max);

__attribute__((noinline)) static int capture_fp(uintptr_t *pcs, int max)
{
	if (bounds_unknown())
		stack_bounds();
	/* The walk bounded by the thread's stack finds nothing while its
	 * extent is unknown (not found, or put off inside
	 * pthread_getattr_np): the checked walk needs none. */
	if (stack_hi <= 1)
		return capture_fp_checked(pcs, max);
	const uintptr_t *stop;
	return fp_walk(pcs, max, __builtin_frame_address(0), stack_lo, stack_hi, NULL, &stop);
}

/*
 * The frame-pointer walk for a stack of unknown extent (a coroutine's, an
 * alternate signal stack too small for a full unwind): every frame record
 * is read with process_vm_readv on our own pid, which fails with EFAULT
 * instead of faulting, so a frame pointer that is really a data register
 * ends the walk. One system call per frame, on rare samples only; a few
 * hundred bytes of stack.
 */
__attribute__((noinline)) static int capture_fp_checked(uintptr_t *pcs, int max)
{
	uintptr_t f = (uintptr_t)__builtin_frame_address(0);
	pid_t self = getpid();
	int n = 0;
	while (n < max && f && !(f & (sizeof(uintptr_t) - 1))) {
		uintptr_t rec[2];
		struct iovec local = { rec, sizeof rec };
		struct iovec remote = { (void *)f, sizeof rec };
		if (process_vm_readv(self, &local, 1, &remote, 1, 0) != (ssize_t)sizeof rec)
			break;
		if (rec[1] == 0)
			break;
		pcs[n++] = rec[1];
		if (rec[0] <= f)
			break;
		f = rec[0];
	}
	return n;
}

/* ---- libunwind with a frame-pointer fast path ------------------------ */

#if defined(__x86_64__)
/*
 * The two caches below (fn_keeps_fp's verdicts, the frame rules) are
 * set-associative tables shared by all threads and read without locks. A
 * miss costs a libunwind search of the unwind tables (with every signal
 * blocked around it, and the pages it reads resident until the next trim,
 * ehtrim.h). A table starts with 1 << CACHE_MIN_LOG2 sets of two entries
 * (static: in .bss, resident as touched) and doubles as it fills or its
 * entries evict each other (cache_stored), up to 512 KiB: clang has about
 * 3400 return addresses that need rules, and with 2048 fixed entries it
 * looked 40% of them up again every time they came back (5500 to 7100
 * lookups for 2650 samples, about 3490 now). Two ways per set keep a few
 * colliding addresses of a small program from evicting each other for
 * good, which would only grow its table.
 *
 * A reader loads the table once per use and may go on with one that was
 * replaced meanwhile: the old sets are given back with MADV_DONTNEED,
 * never unmapped, so a late reader reads zeros (a miss) and a late writer
 * only brings a page back. The descriptors are static, one per size.
 */
#define CACHE_MIN_LOG2 10 /* sets at first */
#define CACHE_MAX_BYTES ((size_t)512 << 10) /* of sets, in either cache */
/* Descriptors for every size up to CACHE_MAX_BYTES of the smallest sets
 * (16 bytes: 2^15 sets). */
#define CACHE_MAX_LOG2 15
#define CACHE_SIZES (CACHE_MAX_LOG2 - CACHE_MIN_LOG2 + 1)

struct cache_tab {
	unsigned char *sets;
	unsigned log2n; /* 1 << log2n sets */
	unsigned shift; /* 64 - log2n */
	_Atomic uint64_t evictions, filled;
};

typedef struct cache {
	_Atomic(cache_tab *) cur;
	cache_tab tabs[CACHE_SIZES];
	size_t set_bytes;
	atomic_flag growing;
	/* Copy the valid entries of one table into a new, empty one;
	 * returns the entries filled. */
	uint64_t (*rehash)(const cache_tab *from, const cache_tab *to);
} cache;

static inline cache_tab *cache_now(cache *c)
{
	return atomic_load_explicit(&c->cur, memory_order_acquire);
}

/* The set of key. Not the top bits of key times the golden ratio alone:
 * return addresses in functions of one size are evenly spaced, and for a
 * spacing of 48 bytes (or 32, 64, 96, 112, 144, 336) those bits took a
 * third of the sets or less (8449 such addresses met 1263 of 4096 sets;
 * 3576 is what random keys meet). Folding key's higher bits in first
 * spreads every spacing tried, and calls a few bytes apart, as random
 * keys (3593 to 3933). */
static inline unsigned char *cache_set(const cache_tab *t, size_t set_bytes, uintptr_t key)
{
	uint64_t x = ((uint64_t)key ^ (uint64_t)key >> 11) * 0x9e3779b97f4a7c15ULL;
	return t->sets + (x >> t->shift) * set_bytes;
}

/* A new table twice t's size, unless t was replaced already, is the
 * largest, or another thread is growing. */
static void cache_grow(cache *c, cache_tab *t)
{
	size_t bytes = c->set_bytes << (t->log2n + 1);
	if (bytes > CACHE_MAX_BYTES || t != cache_now(c) ||
	    atomic_flag_test_and_set(&c->growing))
		return;
	if (t == cache_now(c)) {
		cache_tab *n = &c->tabs[t->log2n + 1 - CACHE_MIN_LOG2];
		void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			n->sets = m;
			n->log2n = t->log2n + 1;
			n->shift = 64 - n->log2n;
			atomic_store_explicit(&n->evictions, 0, memory_order_relaxed);
			atomic_store_explicit(&n->filled, c->rehash(t, n), memory_order_relaxed);
			atomic_store_explicit(&c->cur, n, memory_order_release);
			(void)madvise(t->sets, c->set_bytes << t->log2n, MADV_DONTNEED);
		} else {
			/* Try again after as many fills or evictions. */
			atomic_store_explicit(&t->evictions, 0, memory_order_relaxed);
			atomic_store_explicit(&t->filled, 0, memory_order_relaxed);
		}
	}
	atomic_flag_clear(&c->growing);
}

/* What a store into a set did (fpfn_store, rule_store). */
enum { CACHE_UPDATED, CACHE_FILLED, CACHE_EVICTED };

/* Which way of a two-way set a store of key takes, the set's ways holding
 * keys k0 and k1 (0: empty): its own or an empty one; else way 0, whose
 * entry the caller first moves to way 1, evicting that (CACHE_EVICTED). */
static int cache_way(uint64_t k0, uint64_t k1, uint64_t key, int *what)
{
	if (!k0 || k0 == key) {
		*what = k0 ? CACHE_UPDATED : CACHE_FILLED;
		return 0;
	}
	if (!k1 || k1 == key) {
		*what = k1 ? CACHE_UPDATED : CACHE_FILLED;
		return 1;
	}
	*what = CACHE_EVICTED;
	return 0;
}

/*
 * After a store into t: grow when half its entries (two a set) have been
 * filled, as a hash table grows, so that a program with more return
 * addresses than entries does not lose most of them to evictions first
 * (at two thirds full, a third of a 2-way table's sets are full, and a
 * new address evicts an old one that often); or when evictions (of valid
 * entries of other keys) reach an eighth of its sets: addresses that
 * collide in a table not yet that full. Three addresses met in turn in
 * one set of two miss every time, so a set that holds three costs three
 * lookups a round; doubling the table quarters such sets.
 */
static void cache_stored(cache *c, cache_tab *t, int what)
{
	uint64_t sets = (uint64_t)1 << t->log2n;
	if (what == CACHE_FILLED &&
	    atomic_fetch_add_explicit(&t->filled, 1, memory_order_relaxed) + 1 >= sets)
		cache_grow(c, t);
	else if (what == CACHE_EVICTED &&
		 atomic_fetch_add_explicit(&t->evictions, 1, memory_order_relaxed) + 1 >= sets / 8)
		cache_grow(c, t);
}

/* Every entry forgotten (code was unmapped): zeros, the same size. */
static void cache_clear(cache *c)
{
	cache_tab *t = cache_now(c);
	_Atomic uint64_t *w = (_Atomic uint64_t *)(void *)t->sets;
	size_t n = (c->set_bytes << t->log2n) / sizeof *w;
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&w[i], 0, memory_order_relaxed);
}

/* Entries in use (two ways a set, `stride` words apart) and the table's
 * sets (unwind_cache_stats). */
static size_t cache_fill(cache *c, size_t stride, size_t *sets)
{
	cache_tab *t = cache_now(c);
	size_t used = 0, words = c->set_bytes / sizeof(uint64_t);
	*sets = (size_t)1 << t->log2n;
	for (size_t s = 0; s < *sets; s++) {
		_Atomic uint64_t *w = (_Atomic uint64_t *)(void *)t->sets + s * words;
		used += (atomic_load_explicit(&w[0], memory_order_relaxed) != 0) +
			(atomic_load_explicit(&w[stride], memory_order_relaxed) != 0);
	}
	return used;
}

/*
 * Does the function containing return address ret keep a frame pointer?
 * It does when its first bytes hold push %rbp; mov %rsp,%rbp: at its start
 * (after an optional endbr64), or a little further when the compiler
 * shrink-wrapped the set-up past an early exit that makes no call (the
 * runtime's own malloc does). Either way %rbp is its frame pointer at every
 * call it makes, so the frame record its callee saved is its own. The
 * start comes from the unwind tables (unw_get_proc_info_by_ip), once per
 * return address: the answers sit in a cache of (ret << 1 | verdict)
 * words (one word per entry: no torn reads), two to a 16-byte set. A
 * function judged without one goes to libunwind: correct, only slower.
 */
#define FPFN_SET 16
static uint64_t fpfn_rehash(const cache_tab *from, const cache_tab *to);
static unsigned char fpfn0[FPFN_SET << CACHE_MIN_LOG2] __attribute__((aligned(4096)));
static cache fpfn_cache = {
	.cur = &fpfn_cache.tabs[0],
	.tabs = { { fpfn0, CACHE_MIN_LOG2, 64 - CACHE_MIN_LOG2, 0, 0 } },
	.set_bytes = FPFN_SET,
	.growing = ATOMIC_FLAG_INIT,
	.rehash = fpfn_rehash,
};

/* Bytes of a function searched for its frame-pointer set-up. */
#define FP_SETUP_WINDOW 64

static bool prologue_keeps_fp(const unsigned char *c, uintptr_t len)
{
	if (len > FP_SETUP_WINDOW)
		len = FP_SETUP_WINDOW;
	for (uintptr_t i = 0; i + 4 <= len; i++)
		if (c[i] == 0x55 && c[i + 1] == 0x48 &&
		    ((c[i + 2] == 0x89 && c[i + 3] == 0xe5) ||
		     (c[i + 2] == 0x8b && c[i + 3] == 0xec)))
			return true;
	return false;
}

static void rules_forget(void);

void unwind_forget_code(void)
{
	readable_forget();
	cache_clear(&fpfn_cache);
	rules_forget();
}

/* Enter verdict word e (ret << 1 | verdict) in its set (cache_way). */
static int fpfn_store(_Atomic uintptr_t *w, uintptr_t e)
{
	uintptr_t e0 = atomic_load_explicit(&w[0], memory_order_relaxed);
	uintptr_t e1 = atomic_load_explicit(&w[1], memory_order_relaxed);
	int what, i = cache_way(e0 >> 1, e1 >> 1, e >> 1, &what);
	if (what == CACHE_EVICTED)
		atomic_store_explicit(&w[1], e0, memory_order_relaxed);
	atomic_store_explicit(&w[i], e, memory_order_relaxed);
	return what;
}

static uint64_t fpfn_rehash(const cache_tab *from, const cache_tab *to)
{
	uint64_t filled = 0;
	for (size_t s = 0; s < (size_t)1 << from->log2n; s++) {
		_Atomic uintptr_t *w = (_Atomic uintptr_t *)(void *)(from->sets + s * FPFN_SET);
		for (int i = 1; i >= 0; i--) { /* the older first: way 0 stays way 0 */
			uintptr_t e = atomic_load_explicit(&w[i], memory_order_relaxed);
			if (e)
				filled += fpfn_store((_Atomic uintptr_t *)(void *)cache_set(
							     to, FPFN_SET, e >> 1),
						     e) == CACHE_FILLED;
		}
	}
	return filled;
}

/* fn_keeps_fp's cache miss: look the function up and judge it. */
__attribute__((noinline)) static bool fn_keeps_fp_lookup(cache_tab *t, uintptr_t ret,
							 _Atomic uintptr_t *w)
{
	unw_proc_info_t pi;
	/* ret - 1: a call to a noreturn function may end its caller. The
	 * bytes read lie in [start, ret), inside the function. */
	unwind_lookups++;
	bool ok = unw_get_proc_info_by_ip(unw_local_addr_space, ret - 1, &pi, NULL) == 0 &&
		  pi.start_ip && pi.start_ip < ret &&
		  prologue_keeps_fp((const unsigned char *)pi.start_ip, ret - pi.start_ip);
	cache_stored(&fpfn_cache, t, fpfn_store(w, ret << 1 | ok));
	return ok;
}

/* t: the table, loaded once per capture (cache_now). */
static inline bool fn_keeps_fp(cache_tab *t, uintptr_t ret)
{
	_Atomic uintptr_t *w = (_Atomic uintptr_t *)(void *)cache_set(t, FPFN_SET, ret);
	uintptr_t e = atomic_load_explicit(&w[0], memory_order_relaxed);
	if (AP_LIKELY(e >> 1 == ret))
		return e & 1;
	e = atomic_load_explicit(&w[1], memory_order_relaxed);
	if (e >> 1 == ret)
		return e & 1;
	return fn_keeps_fp_lookup(t, ret, w);
}

/*
 * The frames below a function without a frame pointer, remembered per
 * thread. Every stack ends in such functions (libc's start of main or of a
 * thread), and stepping through them with libunwind costs microseconds
 * (each unw_step looks the function up again, with every signal blocked
 * around it), while they are the same activations sample after sample. An
 * entry is keyed by the first such frame (its return address and stack
 * pointer) and keeps, for each frame below, the stack slot its return
 * address was read from (on the thread's own stack, below the current
 * frame, so mapped while we run): it is used only while every slot still
 * holds the same address.
 * Tails through a signal frame (whose resumed address is not a return
 * address slot) or longer than TAIL_MAX are not kept.
 */
#define TAIL_MAX 24
#define TAIL_ENTRIES 2
typedef struct tail {
	uintptr_t ip, sp; /* the key; ip == 0: empty */
	int n;
	uintptr_t pcs[TAIL_MAX], slots[TAIL_MAX];
} tail;
static __thread tail tails[TAIL_ENTRIES];
static __thread unsigned tail_next;

static int tail_lookup(uintptr_t *out, int room, uintptr_t ip, uintptr_t sp)
{
	for (int e = 0; e < TAIL_ENTRIES; e++) {
		const tail *t = &tails[e];
		if (t->ip != ip || t->sp != sp)
			continue;
		int n = t->n < room ? t->n : room;
		for (int k = 0; k < n; k++) {
			if (*(const uintptr_t *)t->slots[k] != t->pcs[k])
				return -1;
			out[k] = t->pcs[k];
		}
		return n;
	}
	return -1;
}

/*
 * Frame rules, learned from libunwind and kept per return address, so
 * that a frame is stepped by libunwind once and walked by two loads after
 * that. Debian's libunwind is built without thread-local caches: each
 * unw_step takes a global lock with every signal blocked (two
 * rt_sigprocmask calls, about 0.85 us a step here), and unw_backtrace's
 * fast trace, which avoids that, keeps a per-thread table of 2^14 frames
 * written whole on a thread's first use (256 KiB in every thread that ever
 * samples, quadrupled when half full).
 *
 * A rule says where the caller's frame is, x86-64: the CFA (the caller's
 * stack pointer) is sp + off (a function without a frame pointer: its
 * frame has a fixed size at each call site) or rbp + 16 (one that keeps a
 * frame pointer, fn_keeps_fp); the return address is at CFA - 8; the
 * caller's rbp is saved at CFA - 8k or left unchanged. RULE_LAST marks the
 * outermost frame (libunwind's step ended there). A rule is stored only
 * when it reproduces libunwind's own step exactly, and never for a signal
 * frame or the frame after one (whose address is not a return address).
 *
 * The cache (see fpfn_cache's) has three words an entry (address, rule,
 * check = address ^ rule ^ RULE_MAGIC), each read and written
 * atomically, two entries to a 64-byte set: a reader that sees words of
 * two different writes fails the check unless they agree, and a failed
 * check is a miss.
 */
#define RULE_MAGIC 0x9d6c2f1b58e3a7c5ULL
enum { RULE_SP = 1, RULE_FP = 2, RULE_LAST = 3 };
#define RULE_RBP_SAVED 4u
#define RULE_RBP_SHIFT 3 /* 16 bits: CFA - slot, in words */
#define RULE_OFF_SHIFT 32 /* 32 bits: CFA - sp, bytes (RULE_SP) */
typedef struct rule_entry {
	_Atomic uint64_t key, rule, check;
} rule_entry;
#define RULES_SET 64
static uint64_t rules_rehash(const cache_tab *from, const cache_tab *to);
static unsigned char rules0[RULES_SET << CACHE_MIN_LOG2] __attribute__((aligned(4096)));
static cache rule_cache = {
	.cur = &rule_cache.tabs[0],
	.tabs = { { rules0, CACHE_MIN_LOG2, 64 - CACHE_MIN_LOG2, 0, 0 } },
	.set_bytes = RULES_SET,
	.growing = ATOMIC_FLAG_INIT,
	.rehash = rules_rehash,
};

static inline rule_entry *rule_set(const cache_tab *t, uintptr_t ip)
{
	return (rule_entry *)(void *)cache_set(t, RULES_SET, ip);
}

static inline uint64_t rule_get(const cache_tab *t, uintptr_t ip)
{
	rule_entry *e = rule_set(t, ip);
	for (int i = 0; i < 2; i++, e++) {
		uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
		if (k != ip)
			continue;
		uint64_t r = atomic_load_explicit(&e->rule, memory_order_relaxed);
		uint64_t c = atomic_load_explicit(&e->check, memory_order_relaxed);
		return (k ^ r ^ RULE_MAGIC) == c ? r : 0;
	}
	return 0;
}

static void rule_write(rule_entry *e, uint64_t k, uint64_t r)
{
	atomic_store_explicit(&e->key, k, memory_order_relaxed);
	atomic_store_explicit(&e->rule, r, memory_order_relaxed);
	atomic_store_explicit(&e->check, k ^ r ^ RULE_MAGIC, memory_order_relaxed);
}

/* Enter ip's rule in its set (cache_way). */
static int rule_store(rule_entry *w, uintptr_t ip, uint64_t r)
{
	uint64_t k0 = atomic_load_explicit(&w[0].key, memory_order_relaxed);
	uint64_t k1 = atomic_load_explicit(&w[1].key, memory_order_relaxed);
	int what, i = cache_way(k0, k1, ip, &what);
	if (what == CACHE_EVICTED)
		rule_write(&w[1], k0, atomic_load_explicit(&w[0].rule, memory_order_relaxed));
	rule_write(&w[i], ip, r);
	return what;
}

static void rule_put(cache_tab *t, uintptr_t ip, uint64_t r)
{
	cache_stored(&rule_cache, t, rule_store(rule_set(t, ip), ip, r));
}

static uint64_t rules_rehash(const cache_tab *from, const cache_tab *to)
{
	uint64_t filled = 0;
	for (size_t s = 0; s < (size_t)1 << from->log2n; s++) {
		rule_entry *w = (rule_entry *)(void *)(from->sets + s * RULES_SET);
		for (int i = 1; i >= 0; i--) { /* the older first */
			uint64_t k = atomic_load_explicit(&w[i].key, memory_order_relaxed);
			uint64_t r = atomic_load_explicit(&w[i].rule, memory_order_relaxed);
			uint64_t c = atomic_load_explicit(&w[i].check, memory_order_relaxed);
			if (k && (k ^ r ^ RULE_MAGIC) == c)
				filled += rule_store(rule_set(to, k), k, r) == CACHE_FILLED;
		}
	}
	return filled;
}

static void rules_forget(void)
{
	cache_clear(&rule_cache);
}

void unwind_cache_stats(unwind_cache_info *out)
{
	out->fp_used = cache_fill(&fpfn_cache, 1, &out->fp_sets);
	out->rules_used = cache_fill(&rule_cache, 3, &out->rules_sets);
}

static void caches_atfork_child(void)
{
	atomic_flag_clear(&fpfn_cache.growing);
	atomic_flag_clear(&rule_cache.growing);
}

static inline bool on_stack(uintptr_t a)
{
	return a >= stack_lo && a <= stack_hi - sizeof(uintptr_t);
}

/* Does the function starting at start realign its stack pointer before
 * ip (and $-N, %rsp: a frame whose CFA is an expression, at a distance
 * from sp that depends on the caller's alignment)? */
static bool realigns_sp(uintptr_t start, uintptr_t ip)
{
	const unsigned char *c = (const unsigned char *)start;
	uintptr_t len = ip - start < FP_SETUP_WINDOW ? ip - start : FP_SETUP_WINDOW;
	for (uintptr_t i = 0; i + 3 <= len; i++)
		if (c[i] == 0x48 && (c[i + 1] == 0x83 || c[i + 1] == 0x81) && c[i + 2] == 0xe4)
			return true;
	return false;
}

/*
 * The rule for the frame at (ip, sp, bp) that libunwind's step (cur, now
 * at the caller) unwound to (ra, cfa, nbp); 0 when none reproduces it. A
 * frame whose CFA is rbp + 16 with the caller's rbp saved just below the
 * return address is a frame-pointer frame, whatever its prologue looks like
 * (glibc's loader sets %rbp up a few instructions in, then allocates on the
 * stack by size): its rule follows %rbp. Any other is a fixed-size frame,
 * except in a function that realigns its stack (start: the function's
 * first byte), which is never cached.
 */
static uint64_t rule_learn(unw_cursor_t *cur, uintptr_t start, uintptr_t ip, uintptr_t sp,
			   uintptr_t bp, uintptr_t ra, uintptr_t cfa, uintptr_t nbp)
{
	if (cfa <= sp || cfa - sp > UINT32_MAX || (cfa & 7) || !on_stack(cfa - 8) ||
	    *(const uintptr_t *)(cfa - 8) != ra)
		return 0;
	unw_save_loc_t sl;
	uint64_t words = 0;
	/* Where the caller's rbp was read from: a slot in this frame ([sp,
	 * cfa)) when the function saved it; any other place (a deeper frame's
	 * slot, the context libunwind started from) means it left rbp alone. */
	if (unw_get_save_loc(cur, UNW_X86_64_RBP, &sl) == 0 && sl.type == UNW_SLT_MEMORY &&
	    (uintptr_t)sl.u.addr >= sp && (uintptr_t)sl.u.addr < cfa) {
		uintptr_t a = (uintptr_t)sl.u.addr;
		if (((cfa - a) & 7) || (cfa - a) / 8 > 0xffff || !on_stack(a) ||
		    *(const uintptr_t *)a != nbp)
			return 0;
		words = (cfa - a) / 8;
	} else if (nbp != bp) {
		return 0;
	}
	uint64_t rbp = words ? RULE_RBP_SAVED | words << RULE_RBP_SHIFT : 0;
	if (cfa == bp + 16 && words == 2)
		return RULE_FP | rbp;
	if (!start || start >= ip || realigns_sp(start, ip))
		return 0;
	return RULE_SP | rbp | (uint64_t)(cfa - sp) << RULE_OFF_SHIFT;
}

static bool cursor_at(unw_context_t *uc, unw_cursor_t *cur, uintptr_t ip, uintptr_t sp,
		      uintptr_t bp)
{
	if (unw_getcontext(uc) != 0)
		return false;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	uc->uc_mcontext.gregs[REG_RBP] = (greg_t)bp;
	return unw_init_local(cur, uc) == 0;
}

/*
 * Continue from the frame of a function without a frame pointer: ip its
 * return address (already stored), sp the stack pointer just after that
 * return (the frame record's address + 16), bp the %rbp it had (the frame
 * record's saved one). Each frame is walked by its rule when one is known,
 * else stepped by libunwind (whose unwind tables say where the caller's
 * frame is from sp alone, which is exact; other callee-saved registers are
 * what they are now, as good as any unwind from here) and its rule
 * learned. Code without unwind information (generated at run time) is
 * stepped too: libunwind then follows %rbp, checking each address before
 * it reads it, as it did before the rules; such a frame gets a rule only
 * when it is a frame-pointer frame. The frames found go into the thread's
 * tail cache when they qualify.
 */
__attribute__((noinline)) static int dwarf_from(uintptr_t *out, int room, uintptr_t ip,
						 uintptr_t sp, uintptr_t bp)
{
	int n = tail_lookup(out, room, ip, sp);
	if (n >= 0)
		return n;
	unw_context_t uc;
	unw_cursor_t cur;
	bool synced = false, after_signal = false;
	tail *t = &tails[tail_next++ % TAIL_ENTRIES];
	t->ip = 0; /* filled below; empty if it does not qualify */
	bool keep = true;
	const uintptr_t entry_ip = ip, entry_sp = sp;
	cache_tab *rt = cache_now(&rule_cache);
	n = 0;
	while (n < room) {
		uintptr_t ra, cfa, nbp;
		uint64_t r = after_signal ? 0 : rule_get(rt, ip);
		if (r) {
			if ((r & 3) == RULE_LAST)
				break;
			cfa = (r & 3) == RULE_FP ? bp + 16 : sp + (r >> RULE_OFF_SHIFT);
			if (!on_stack(cfa - 8))
				break;
			ra = *(const uintptr_t *)(cfa - 8);
			nbp = bp;
			if (r & RULE_RBP_SAVED) {
				uintptr_t a = cfa - 8 * ((r >> RULE_RBP_SHIFT) & 0xffff);
				if (!on_stack(a))
					break;
				nbp = *(const uintptr_t *)a;
			}
			synced = false;
		} else {
			unw_proc_info_t pi;
			unwind_lookups++;
			if (unw_get_proc_info_by_ip(unw_local_addr_space, ip - 1, &pi, NULL) != 0)
				pi.start_ip = 0;
			if (!synced) {
				if (!cursor_at(&uc, &cur, ip, sp, bp))
					break;
				synced = true;
			}
			bool sig = unw_is_signal_frame(&cur) > 0;
			int st = unw_step(&cur);
			unw_word_t x, csp, cbp;
			if (st == 0 && !sig && !after_signal)
				rule_put(rt, ip, RULE_LAST);
			if (st <= 0 || unw_get_reg(&cur, UNW_REG_IP, &x) != 0 ||
			    unw_get_reg(&cur, UNW_REG_SP, &csp) != 0 ||
			    unw_get_reg(&cur, UNW_X86_64_RBP, &cbp) != 0)
				break;
			ra = (uintptr_t)x;
			cfa = (uintptr_t)csp;
			nbp = (uintptr_t)cbp;
			if (!sig && !after_signal) {
				uint64_t lr = rule_learn(&cur, (uintptr_t)pi.start_ip, ip, sp,
							 bp, ra, cfa, nbp);
				if (lr)
					rule_put(rt, ip, lr);
			}
			keep = keep && !sig;
			after_signal = sig;
		}
		if (!ra)
			break;
		out[n] = ra;
		if (n < TAIL_MAX && cfa > stack_lo && cfa <= stack_hi) {
			/* x86-64: a return address sits just below the CFA,
			 * which is the caller's stack pointer. */
			t->pcs[n] = ra;
			t->slots[n] = cfa - sizeof(uintptr_t);
		} else {
			keep = false;
		}
		n++;
		ip = ra;
		sp = cfa;
		bp = nbp;
	}
	/* Only a tail followed to its end stands for later captures, which
	 * may have more room. */
	if (keep && n < room && n <= TAIL_MAX) {
		t->n = n;
		t->sp = entry_sp;
		t->ip = entry_ip;
	}
	return n;
}

/*
 * libunwind's steps from this function's caller on, into pcs (the first
 * entry is the return address into the caller, as unw_backtrace gives).
 * Not unw_backtrace: its fast trace keeps a per-thread hash of frames that
 * starts at 2^14 entries of 16 bytes, written whole when a thread first
 * uses it (256 KiB of resident memory in every thread that ever takes a
 * sample), and quadruples when half full.
 */
__attribute__((noinline)) static int step_here(uintptr_t *pcs, int max)
{
	unw_context_t uc;
	unw_cursor_t cur;
	if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0)
		return 0;
	int n = 0;
	unw_word_t x;
	while (n < max && unw_step(&cur) > 0 && unw_get_reg(&cur, UNW_REG_IP, &x) == 0 && x)
		pcs[n++] = (uintptr_t)x;
	return n;
}

/*
 * A stack of unknown extent (a coroutine's) or with too little room left
 * for libunwind (about 5 KiB): the registers are saved where the sample
 * is taken (unw_getcontext writes them into the job, not onto that stack),
 * and libunwind steps from them on a stack of the runtime's own, mapped
 * per thread at its first such sample. The sample's stack only holds
 * capture_alt's small frame, and its frames come out whole through code
 * without frame pointers, which the checked frame-pointer walk cannot
 * follow. libunwind reads frames where their unwind information puts them
 * and checks each address itself where there is none.
 */
#define ALT_BYTES ((size_t)64 * 1024)
struct alt_job {
	unw_context_t uc;
	uintptr_t *pcs;
	int max, n;
};
static __thread char *alt_map; /* [struct alt_job | ... stack ...] */

static void alt_steps(struct alt_job *j)
{
	unw_cursor_t cur;
	unw_word_t x;
	int n = 0;
	if (unw_init_local(&cur, &j->uc) == 0)
		while (n < j->max && unw_step(&cur) > 0 &&
		       unw_get_reg(&cur, UNW_REG_IP, &x) == 0 && x)
			j->pcs[n++] = (uintptr_t)x;
	j->n = n;
}

/* fn(arg) with the stack pointer at top (16-byte aligned): the System V
 * ABI's callee-saved registers survive the call, every other one is
 * declared clobbered, and %rbx carries the old stack pointer across. */
__attribute__((noinline)) static void run_on_stack(void *top, void (*fn)(struct alt_job *),
						   struct alt_job *arg)
{
	__asm__ volatile("mov %%rsp, %%rbx\n\t"
			 "mov %[top], %%rsp\n\t"
			 "mov %[arg], %%rdi\n\t"
			 "call *%[fn]\n\t"
			 "mov %%rbx, %%rsp"
			 :
			 : [top] "r"(top), [fn] "r"(fn), [arg] "r"(arg)
			 : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
			   "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
			   "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
			   "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)",
			   "st(6)", "st(7)", "memory", "cc");
}

/* Frames from the caller of capture_alt on; -1 when there is no stack of
 * the runtime's to run on (then the checked walk). */
__attribute__((noinline)) static int capture_alt(uintptr_t *pcs, int max)
{
	if (!alt_map) {
		void *m = mmap(NULL, ALT_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		alt_map = m;
	}
	struct alt_job *j = (struct alt_job *)(void *)alt_map;
	if (unw_getcontext(&j->uc) != 0)
		return -1;
	j->pcs = pcs;
	j->max = max;
	j->n = 0;
	run_on_stack(alt_map + ALT_BYTES, alt_steps, j);
	return j->n;
}

static void alt_thread_exit(void)
{
	if (alt_map)
		munmap(alt_map, ALT_BYTES);
	alt_map = NULL;
}

/*
 * The libunwind unwinder: the frame-pointer walk for as long as each
 * function on the way keeps a frame pointer (fn_keeps_fp), libunwind's
 * steps from the first one that does not (every stack ends in one: libc's
 * start of main or of a thread), with the thread's tail cache.
 */
__attribute__((noinline)) static int capture_mixed(uintptr_t *pcs, int max)
{
	if (bounds_unknown())
		stack_bounds();
	if (stack_hi <= 1)
		return step_here(pcs, max);
	const uintptr_t *stop;
	int n = fp_walk(pcs, max, __builtin_frame_address(0), stack_lo, stack_hi,
			cache_now(&fpfn_cache), &stop);
	if (!stop)
		return n;
	return n + dwarf_from(pcs + n, max - n, pcs[n - 1],
			      (uintptr_t)stop + 2 * sizeof(uintptr_t), stop[0]);
}
#else
void unwind_forget_code(void)
{
	readable_forget();
}

static int capture_alt(uintptr_t *pcs, int max)
{
	(void)pcs;
	(void)max;
	return -1;
}

static void alt_thread_exit(void)
{
}

static inline bool fn_keeps_fp(cache_tab *t, uintptr_t ret)
{
	(void)t;
	(void)ret;
	return false;
}

static int capture_mixed(uintptr_t *pcs, int max)
{
	return unw_backtrace((void **)pcs, max);
}

void unwind_cache_stats(unwind_cache_info *out)
{
	memset(out, 0, sizeof *out);
}

static void caches_atfork_child(void)
{
}
#endif

/*
 * Room left below sp on the stack it is on: the thread's stack, or the
 * alternate signal stack a handler runs on (*on_alt set); 0 when sp is on
 * neither (a coroutine's stack, whose extent nothing tells).
 */
static size_t stack_room(uintptr_t sp, bool *on_alt)
{
	*on_alt = false;
	if (bounds_unknown())
		stack_bounds();
	if (stack_lo == 1 && stack_hi == 1)
		return SIZE_MAX; /* unknown thread stack: as before, trust it */
	if (sp > stack_lo && sp <= stack_hi)
		return sp - stack_lo;
	stack_t ss;
	if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	*on_alt = true;
	if (sp > (uintptr_t)ss.ss_sp && sp <= (uintptr_t)ss.ss_sp + ss.ss_size)
		return sp - (uintptr_t)ss.ss_sp;
	return 0;
}

/* ---- common ---------------------------------------------------------- */

int unwind_prepare(unwinder_kind k)
{
	uintptr_t tmp[UNWIND_SELF_MAX];
	if (!main_hi && on_main_thread()) {
		stack_bounds();
		if (stack_hi > 1) {
			main_lo = stack_lo;
			main_hi = stack_hi;
			main_self = pthread_self();
		}
	}
	readable_collect();
	(void)getattr_next(); /* now, not in the program's first call */
	switch (k) {
	case UNWINDER_LIBUNWIND:
	case UNWINDER_LIBUNWIND_ONLY:
		/* Before libunwind initialises: it would open its pipe. */
		if (unwind_nofd_install() != 0)
			return AP_EUNSUPPORTED;
		/* Per-thread caches of unwind rules where libunwind was built
		 * with them (Debian's was not: it keeps the global cache, which
		 * takes a lock with every signal blocked, two rt_sigprocmask
		 * calls per unw_step; the frame rules below make steps rare). */
		unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
		/* The first steps build libunwind's caches. */
		capture_mixed(tmp, UNWIND_SELF_MAX);
		return 0;
	case UNWINDER_LIBGCC: {
		int rc = gcc_resolve();
		if (rc == 0)
			capture_gcc(tmp, UNWIND_SELF_MAX);
		return rc;
	}
	case UNWINDER_FP:
	case UNWINDER_FP_CHECKED:
		capture_fp(tmp, UNWIND_SELF_MAX);
		return 0;
	}
	return AP_EINVAL;
}

/* Per-thread capture buffer: the sampling path keeps no frame array on the
 * stack (it must fit small stacks). Only the thread's own sampling path
 * uses it, with the runtime's guard set, so nothing re-enters it. Mapped
 * at the thread's first capture and unmapped by unwind_thread_exit, not a
 * TLS array: 2 KiB of initial-exec TLS would not fit glibc's static TLS
 * surplus, which `allocprof attach` needs to dlopen the runtime into a
 * running program (docs/ATTACH.md). */
#define CAP_BYTES ((UNWIND_DEPTH_MAX + UNWIND_SELF_MAX) * sizeof(uintptr_t))
static __thread uintptr_t *cap_buf;
static uintptr_t cap_none[1];

void unwind_thread_exit(void)
{
	if (cap_buf)
		munmap(cap_buf, CAP_BYTES);
	cap_buf = NULL;
	alt_thread_exit();
	thread_done = true;
}

void unwind_capture_release(void)
{
	if (AP_UNLIKELY(thread_done))
		unwind_thread_exit();
}

static int capture_with(unwinder_kind k, uintptr_t *pcs, int want)
{
	switch (k) {
	case UNWINDER_LIBGCC:
		return capture_gcc(pcs, want);
	case UNWINDER_FP:
		return capture_fp(pcs, want);
	case UNWINDER_FP_CHECKED:
		return capture_fp_checked(pcs, want);
	case UNWINDER_LIBUNWIND_ONLY:
		return unw_backtrace((void **)pcs, want);
	case UNWINDER_LIBUNWIND:
	default:
		return capture_mixed(pcs, want);
	}
}

const uintptr_t *unwind_capture_own(unwinder_kind k, int max, int *depth)
{
	*depth = 0;
	if (max > UNWIND_DEPTH_MAX)
		max = UNWIND_DEPTH_MAX;
	if (!cap_buf) {
		void *m = mmap(NULL, CAP_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return cap_none;
		cap_buf = m;
	}
	if (max <= 0)
		return cap_buf;
	int want = max + UNWIND_SELF_MAX;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	bool on_alt;
	bool small = stack_room(sp, &on_alt) < UNWIND_STACK_NEED;
	/* Not in a handler on the alternate signal stack (a crash reporter's,
	 * maybe after a stack overflow): libunwind would go on into the
	 * interrupted frames, reading where their unwind information says
	 * without checking the address, and there the stack may be what
	 * broke; the checked walk cannot fault. */
	int n = small && !on_alt && (k == UNWINDER_LIBUNWIND || k == UNWINDER_LIBUNWIND_ONLY)
			? capture_alt(cap_buf, want)
			: -1;
	if (n < 0)
		n = capture_with(small ? UNWINDER_FP_CHECKED : k, cap_buf, want);
	int skip = 0;
	if (self_hi > self_lo)
		while (skip < n && cap_buf[skip] >= self_lo && cap_buf[skip] < self_hi)
			skip++;
	n -= skip;
	*depth = n < max ? n : max;
	return cap_buf + skip;
}

int unwind_capture(unwinder_kind k, uintptr_t *pcs, int max)
{
	int n;
	const uintptr_t *own = unwind_capture_own(k, max, &n);
	memcpy(pcs, own, (size_t)n * sizeof *pcs);
	return n;
}
