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
 * (stack_room): below UNWIND_STACK_NEED it takes the checked walk, whatever
 * unwinder was chosen, since libunwind alone needs about 5 KiB.
 */
#include "unwinder.h"

#include <dlfcn.h>
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
static uintptr_t main_lo, main_hi;

static bool on_main_thread(void)
{
	return syscall(SYS_gettid) == getpid();
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
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		stack_lo = (uintptr_t)addr;
		stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

static inline bool fn_keeps_fp(uintptr_t ret);

/*
 * The frame-pointer walk from frame record fp on the stack [lo, hi). With
 * `mixed` (the libunwind unwinder's fast path) it also stops after the
 * return address of a function without a frame pointer, whose frame
 * record it would read next: *stop is then the record that address came
 * from, else NULL.
 */
static inline int fp_walk(uintptr_t *pcs, int max, const uintptr_t *fp, uintptr_t lo,
			  uintptr_t hi, bool mixed, const uintptr_t **stop)
{
	int n = 0;
	*stop = NULL;
	while (n < max) {
		uintptr_t f = (uintptr_t)fp;
		if (f < lo || f + 2 * sizeof(uintptr_t) > hi || (f & (sizeof(uintptr_t) - 1)))
			break;
		uintptr_t ret = fp[1];
		if (ret == 0)
			break;
		pcs[n++] = ret;
		/* The runtime's own functions are built with frame pointers. */
		if (mixed && (ret < self_lo || ret >= self_hi) && !fn_keeps_fp(ret)) {
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

__attribute__((noinline)) static int capture_fp(uintptr_t *pcs, int max)
{
	if (stack_hi == 0)
		stack_bounds();
	const uintptr_t *stop;
	return fp_walk(pcs, max, __builtin_frame_address(0), stack_lo, stack_hi, false, &stop);
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
 * Does the function containing return address ret keep a frame pointer?
 * It does when its first bytes hold push %rbp; mov %rsp,%rbp: at its start
 * (after an optional endbr64), or a little further when the compiler
 * shrink-wrapped the set-up past an early exit that makes no call (the
 * runtime's own malloc does). Either way %rbp is its frame pointer at every
 * call it makes, so the frame record its callee saved is its own. The
 * start comes from the unwind tables (unw_get_proc_info_by_ip), once per
 * return address: the answers sit in a direct-mapped cache of
 * (ret << 1 | verdict) words, shared by all threads (one word per entry:
 * no torn reads; a collision only costs a lookup again). A function judged
 * without one goes to libunwind: correct, only slower.
 */
#define FPFN_CACHE 4096
static _Atomic uintptr_t fpfn_cache[FPFN_CACHE];

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

void unwind_forget_code(void)
{
	for (size_t i = 0; i < FPFN_CACHE; i++)
		atomic_store_explicit(&fpfn_cache[i], 0, memory_order_relaxed);
}

/* fn_keeps_fp's cache miss: look the function up and judge it. */
__attribute__((noinline)) static bool fn_keeps_fp_lookup(uintptr_t ret, size_t i)
{
	unw_proc_info_t pi;
	/* ret - 1: a call to a noreturn function may end its caller. The
	 * bytes read lie in [start, ret), inside the function. */
	bool ok = unw_get_proc_info_by_ip(unw_local_addr_space, ret - 1, &pi, NULL) == 0 &&
		  pi.start_ip && pi.start_ip < ret &&
		  prologue_keeps_fp((const unsigned char *)pi.start_ip, ret - pi.start_ip);
	atomic_store_explicit(&fpfn_cache[i], ret << 1 | ok, memory_order_relaxed);
	return ok;
}

static inline bool fn_keeps_fp(uintptr_t ret)
{
	size_t i = (size_t)(((uint64_t)ret * 0x9e3779b97f4a7c15ULL) >> 52) & (FPFN_CACHE - 1);
	uintptr_t e = atomic_load_explicit(&fpfn_cache[i], memory_order_relaxed);
	if (AP_LIKELY(e >> 1 == ret))
		return e & 1;
	return fn_keeps_fp_lookup(ret, i);
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
 * Continue with libunwind from the frame of a function without a frame
 * pointer: ip its return address (already stored), sp the stack pointer
 * just after that return (the frame record's address + 16), bp the %rbp
 * it had (the frame record's saved one). Its unwind tables say where its
 * caller's frame is from sp alone, which is exact; other callee-saved
 * registers are what they are now, as good as any unwind from here. The
 * frames found go into the thread's tail cache when they qualify.
 */
__attribute__((noinline)) static int dwarf_from(uintptr_t *out, int room, uintptr_t ip,
						 uintptr_t sp, uintptr_t bp)
{
	int n = tail_lookup(out, room, ip, sp);
	if (n >= 0)
		return n;
	unw_context_t uc;
	unw_cursor_t cur;
	if (unw_getcontext(&uc) != 0)
		return 0;
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)bp;
	if (unw_init_local(&cur, &uc) != 0)
		return 0;
	tail *t = &tails[tail_next++ % TAIL_ENTRIES];
	t->ip = 0; /* filled below; empty if it does not qualify */
	bool keep = true;
	unw_word_t x, csp;
	n = 0;
	while (n < room) {
		keep = keep && !unw_is_signal_frame(&cur);
		if (unw_step(&cur) <= 0 || unw_get_reg(&cur, UNW_REG_IP, &x) != 0 || !x)
			break;
		out[n] = (uintptr_t)x;
		if (n < TAIL_MAX && unw_get_reg(&cur, UNW_REG_SP, &csp) == 0 &&
		    csp > stack_lo && csp <= stack_hi) {
			/* x86-64: a return address sits just below the CFA,
			 * which is the caller's stack pointer. */
			t->pcs[n] = (uintptr_t)x;
			t->slots[n] = (uintptr_t)csp - sizeof(uintptr_t);
		} else {
			keep = false;
		}
		n++;
	}
	/* Only a tail followed to its end stands for later captures, which
	 * may have more room. */
	if (keep && n < room && n <= TAIL_MAX) {
		t->n = n;
		t->sp = sp;
		t->ip = ip;
	}
	return n;
}

/*
 * The libunwind unwinder: the frame-pointer walk for as long as each
 * function on the way keeps a frame pointer (fn_keeps_fp), libunwind from
 * the first one that does not (every stack ends in one: libc's start of
 * main or of a thread). A stack whose first function of the program has
 * none goes to unw_backtrace whole (its cached fast trace beats stepping).
 */
__attribute__((noinline)) static int capture_mixed(uintptr_t *pcs, int max)
{
	if (stack_hi == 0)
		stack_bounds();
	if (stack_hi <= 1)
		return unw_backtrace((void **)pcs, max);
	const uintptr_t *stop;
	int n = fp_walk(pcs, max, __builtin_frame_address(0), stack_lo, stack_hi, true, &stop);
	if (!stop)
		return n;
	int own = 0;
	while (own < n && pcs[own] >= self_lo && pcs[own] < self_hi)
		own++;
	if (n == own + 1)
		return unw_backtrace((void **)pcs, max);
	return n + dwarf_from(pcs + n, max - n, pcs[n - 1],
			      (uintptr_t)stop + 2 * sizeof(uintptr_t), stop[0]);
}
#else
void unwind_forget_code(void)
{
}

static inline bool fn_keeps_fp(uintptr_t ret)
{
	(void)ret;
	return false;
}

static int capture_mixed(uintptr_t *pcs, int max)
{
	return unw_backtrace((void **)pcs, max);
}
#endif

/*
 * Room left below sp on the stack it is on: the thread's stack, or the
 * alternate signal stack a handler runs on; 0 when sp is on neither (a
 * coroutine's stack, whose extent nothing tells).
 */
static size_t stack_room(uintptr_t sp)
{
	if (stack_hi == 0)
		stack_bounds();
	if (stack_lo == 1 && stack_hi == 1)
		return SIZE_MAX; /* unknown thread stack: as before, trust it */
	if (sp > stack_lo && sp <= stack_hi)
		return sp - stack_lo;
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) &&
	    sp > (uintptr_t)ss.ss_sp && sp <= (uintptr_t)ss.ss_sp + ss.ss_size)
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
		}
	}
	switch (k) {
	case UNWINDER_LIBUNWIND:
	case UNWINDER_LIBUNWIND_ONLY:
		/* Before libunwind initialises: it would open its pipe. */
		if (unwind_nofd_install() != 0)
			return AP_EUNSUPPORTED;
		/* Per-thread caches of unwind rules: the global one takes a
		 * lock with every signal blocked, two rt_sigprocmask calls per
		 * unw_step (the fast path's steps below libc's frames). */
		unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
		/* The first unw_backtrace builds libunwind's caches. */
		unw_backtrace((void **)tmp, UNWIND_SELF_MAX);
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
	int n;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (stack_room(sp) < UNWIND_STACK_NEED)
		k = UNWINDER_FP_CHECKED;
	switch (k) {
	case UNWINDER_LIBGCC:
		n = capture_gcc(cap_buf, want);
		break;
	case UNWINDER_FP:
		n = capture_fp(cap_buf, want);
		break;
	case UNWINDER_FP_CHECKED:
		n = capture_fp_checked(cap_buf, want);
		break;
	case UNWINDER_LIBUNWIND_ONLY:
		n = unw_backtrace((void **)cap_buf, want);
		break;
	case UNWINDER_LIBUNWIND:
	default:
		n = capture_mixed(cap_buf, want);
		break;
	}
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
