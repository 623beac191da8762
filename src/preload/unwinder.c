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
 * crashing it.
 */
#include "unwinder.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
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

static __thread uintptr_t fp_stack_lo, fp_stack_hi;

static void fp_bounds(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		fp_stack_lo = (uintptr_t)addr;
		fp_stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

__attribute__((noinline)) static int capture_fp(uintptr_t *pcs, int max)
{
	if (fp_stack_hi == 0)
		fp_bounds();
	uintptr_t lo = fp_stack_lo, hi = fp_stack_hi;
	const uintptr_t *fp = __builtin_frame_address(0);
	int n = 0;
	while (n < max) {
		uintptr_t f = (uintptr_t)fp;
		if (f < lo || f + 2 * sizeof(uintptr_t) > hi || (f & (sizeof(uintptr_t) - 1)))
			break;
		uintptr_t ret = fp[1];
		if (ret == 0)
			break;
		pcs[n++] = ret;
		const uintptr_t *next = (const uintptr_t *)fp[0];
		if ((uintptr_t)next <= f)
			break;
		fp = next;
	}
	return n;
}

/* ---- common ---------------------------------------------------------- */

int unwind_prepare(unwinder_kind k)
{
	uintptr_t tmp[UNWIND_SELF_MAX];
	switch (k) {
	case UNWINDER_LIBUNWIND:
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
		capture_fp(tmp, UNWIND_SELF_MAX);
		return 0;
	}
	return AP_EINVAL;
}

int unwind_capture(unwinder_kind k, uintptr_t *pcs, int max)
{
	uintptr_t raw[UNWIND_DEPTH_MAX + UNWIND_SELF_MAX];
	if (max > UNWIND_DEPTH_MAX)
		max = UNWIND_DEPTH_MAX;
	if (max <= 0)
		return 0;
	int want = max + UNWIND_SELF_MAX;
	int n;
	switch (k) {
	case UNWINDER_LIBGCC:
		n = capture_gcc(raw, want);
		break;
	case UNWINDER_FP:
		n = capture_fp(raw, want);
		break;
	case UNWINDER_LIBUNWIND:
	default:
		n = unw_backtrace((void **)raw, want);
		break;
	}
	int skip = 0;
	if (self_hi > self_lo)
		while (skip < n && raw[skip] >= self_lo && raw[skip] < self_hi)
			skip++;
	int out = 0;
	for (int i = skip; i < n && out < max; i++)
		pcs[out++] = raw[i];
	return out;
}
