/*
 * interpose_cxx.c: the C++ allocation functions, every operator new,
 * new[], delete and delete[] variant (plain, nothrow, sized, aligned,
 * aligned+sized, aligned+nothrow), exported under their Itanium-mangled
 * names (asm labels; listed in exports.map).
 *
 * jemalloc, tcmalloc and mimalloc define these operators themselves; were
 * they not interposed, a C++ program over them would allocate past the
 * runtime. So each operator new has malloc's fast path (the thread's
 * sampler counter) and tail-calls the next definition in the search order
 * when it is the allocator underneath's own (interpose_next.h); libstdc++'s
 * operators merely call malloc, and in their place a local fallback calls
 * the allocator underneath directly, so a byte is counted once. Every
 * delete first tests the range, as free does: a block the runtime served
 * (to malloc or to new) never reaches the allocator's delete.
 *
 * A sampled new is served like a sampled malloc: a region block (aligned
 * as asked), else the allocator's nothrow malloc or posix_memalign. The
 * C++ semantics come from the next operator itself: when an allocation
 * fails, the same request goes to it, outside the runtime's guard, and it
 * runs the new_handler loop and throws std::bad_alloc (or returns NULL for
 * the nothrow forms). No exception ever passes through a frame of the
 * runtime that holds state.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "detect.h"
#include "interpose_next.h"

/* The families' slots: index = entry. N: new, A: new[]; T: nothrow,
 * L: aligned; D: delete, E: delete[]; S: sized. */
enum {
	NW, NA, NW_T, NA_T, NW_L, NA_L, NW_LT, NA_LT,
	DL, DA, DL_S, DA_S, DL_T, DA_T, DL_L, DA_L, DL_SL, DA_SL, DL_LT, DA_LT,
	CXX_N
};

static rt_fn cxx[CXX_N];   /* where each entry point goes (stubs first) */
static rt_fn next[CXX_N];  /* the next definition, NULL if none */
static _Atomic int cxx_state;
static const char *const cxx_names[CXX_N] = {
	"_Znwm",
	"_Znam",
	"_ZnwmRKSt9nothrow_t",
	"_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t",
	"_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv",
	"_ZdaPv",
	"_ZdlPvm",
	"_ZdaPvm",
	"_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_t",
	"_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t",
	"_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t",
	"_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

typedef void *(*new_fn)(size_t);
typedef void *(*new_t_fn)(size_t, const void *);
typedef void *(*new_l_fn)(size_t, size_t);
typedef void *(*new_lt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_s_fn)(void *, size_t);
typedef void (*del_t_fn)(void *, const void *);
typedef void (*del_l_fn)(void *, size_t);
typedef void (*del_sl_fn)(void *, size_t, size_t);
typedef void (*del_lt_fn)(void *, size_t, const void *);

/* ---- fallbacks: the allocator underneath, with C++ semantics on failure */

/* The allocator underneath's answer to a new of n bytes aligned to al
 * (0: malloc's alignment), NULL on failure. */
static void *cxx_real_alloc(size_t n, size_t al)
{
	if (!al)
		return rt_real.malloc(n ? n : 1);
	void *p = NULL;
	if (al < sizeof(void *))
		al = sizeof(void *);
	return rt_real.posix_memalign(&p, al, n ? n : 1) == 0 ? p : NULL;
}

/* A failed request goes to the next definition, which runs the handler
 * loop and throws (or returns NULL). There is always one when C++ code
 * calls new (libstdc++ defines them all); if not, nothing can be thrown. */
static rt_fn failing(int i)
{
	if (!next[i]) { /* maybe dlopen'ed since the family was resolved */
		void *a = boot_next_sym(cxx_names[i]);
		memcpy(&next[i], &a, sizeof a);
	}
	if (next[i])
		return next[i];
	rt_log("operator new failed and no C++ runtime defines it: aborting");
	abort();
}

static void *fb_nw(size_t n)
{
	void *p = cxx_real_alloc(n, 0);
	return p ? p : ((new_fn)failing(NW))(n);
}
static void *fb_na(size_t n)
{
	void *p = cxx_real_alloc(n, 0);
	return p ? p : ((new_fn)failing(NA))(n);
}
static void *fb_nw_t(size_t n, const void *t)
{
	void *p = cxx_real_alloc(n, 0);
	return p || !next[NW_T] ? p : ((new_t_fn)next[NW_T])(n, t);
}
static void *fb_na_t(size_t n, const void *t)
{
	void *p = cxx_real_alloc(n, 0);
	return p || !next[NA_T] ? p : ((new_t_fn)next[NA_T])(n, t);
}
static void *fb_nw_l(size_t n, size_t al)
{
	void *p = cxx_real_alloc(n, al);
	return p ? p : ((new_l_fn)failing(NW_L))(n, al);
}
static void *fb_na_l(size_t n, size_t al)
{
	void *p = cxx_real_alloc(n, al);
	return p ? p : ((new_l_fn)failing(NA_L))(n, al);
}
static void *fb_nw_lt(size_t n, size_t al, const void *t)
{
	void *p = cxx_real_alloc(n, al);
	return p || !next[NW_LT] ? p : ((new_lt_fn)next[NW_LT])(n, al, t);
}
static void *fb_na_lt(size_t n, size_t al, const void *t)
{
	void *p = cxx_real_alloc(n, al);
	return p || !next[NA_LT] ? p : ((new_lt_fn)next[NA_LT])(n, al, t);
}
static void fb_free(void *p)
{
	rt_real.free(p);
}
static void fb_free_s(void *p, size_t a)
{
	(void)a;
	rt_real.free(p);
}
static void fb_free_t(void *p, const void *t)
{
	(void)t;
	rt_real.free(p);
}
static void fb_free_lt(void *p, size_t al, const void *t)
{
	(void)al;
	(void)t;
	rt_real.free(p);
}
static void fb_free_sl(void *p, size_t n, size_t al)
{
	(void)n;
	(void)al;
	rt_real.free(p);
}

/* ---- resolution -------------------------------------------------------- */

static const rt_fn cxx_fallbacks[CXX_N] = {
	[NW] = (rt_fn)fb_nw,
	[NA] = (rt_fn)fb_na,
	[NW_T] = (rt_fn)fb_nw_t,
	[NA_T] = (rt_fn)fb_na_t,
	[NW_L] = (rt_fn)fb_nw_l,
	[NA_L] = (rt_fn)fb_na_l,
	[NW_LT] = (rt_fn)fb_nw_lt,
	[NA_LT] = (rt_fn)fb_na_lt,
	[DL] = (rt_fn)fb_free,
	[DA] = (rt_fn)fb_free,
	[DL_S] = (rt_fn)fb_free_s,
	[DA_S] = (rt_fn)fb_free_s,
	[DL_T] = (rt_fn)fb_free_t,
	[DA_T] = (rt_fn)fb_free_t,
	[DL_L] = (rt_fn)fb_free_s,
	[DA_L] = (rt_fn)fb_free_s,
	[DL_SL] = (rt_fn)fb_free_sl,
	[DA_SL] = (rt_fn)fb_free_sl,
	[DL_LT] = (rt_fn)fb_free_lt,
	[DA_LT] = (rt_fn)fb_free_lt,
};

static void cxx_resolve(void)
{
	if (atomic_load_explicit(&cxx_state, memory_order_acquire) == 2)
		return;
	next_sym syms[CXX_N];
	for (int k = 0; k < CXX_N; k++)
		syms[k] = (next_sym){cxx_names[k], &cxx[k], &next[k], cxx_fallbacks[k]};
	next_resolve(&cxx_state, syms, CXX_N);
}

/* Resolve the family when the library is loaded, before the program's
 * threads exist; the stubs below cover calls made even earlier. */
__attribute__((constructor)) static void cxx_constructor(void)
{
	cxx_resolve();
}

/* ---- the entry points ---------------------------------------------------- */

/*
 * NEW(name, sym, i, type, params, args, size, align, nothrow): operator
 * new entry `name` exported as `sym`, slot i of type `type`. Its stub
 * resolves the family on the first call; its slow path serves a sampled
 * request and on failure hands the request to the slot's function (the
 * next definition or the fallback) for C++'s answer. When the program's
 * malloc is not the runtime's (detect.h), nothing is sampled: the block
 * comes from the next definition, as without the runtime, where the
 * program may give it back with its own free(); its profiles are said to
 * be empty, and stay so.
 */
#define NEW(name, sym, i, type, params, args, size, align)                   \
	EXPORT void *name params __asm__(sym);                               \
	static void *name##_stub params                                      \
	{                                                                    \
		cxx_resolve();                                               \
		return ((type)cxx[i])args;                                   \
	}                                                                    \
	static __attribute__((noinline)) void *name##_slow params            \
	{                                                                    \
		ap_sample_info info;                                         \
		if (!rt_sample_begin(size, &info))                           \
			return ((type)cxx[i])args;                           \
		if (AP_UNLIKELY(detect_malloc_elsewhere())) {                \
			rt_sample_end(NULL, &info);                          \
			return ((type)cxx[i])args;                           \
		}                                                            \
		void *p = rt_region_alloc(size, align, false);               \
		if (!p)                                                      \
			p = cxx_real_alloc(size, align);                     \
		rt_sample_end(p, &info);                                     \
		return p ? p : ((type)cxx[i])args;                           \
	}                                                                    \
	void *name params                                                    \
	{                                                                    \
		if (next_not_sampled(size))                                  \
			return ((type)cxx[i])args;                           \
		return name##_slow args;                                     \
	}

/* DEL(name, sym, i, type, params, args): operator delete entry; the range
 * test first, as in free. */
#define DEL(name, sym, i, type, params, args)                                \
	EXPORT void name params __asm__(sym);                                \
	static void name##_stub params                                       \
	{                                                                    \
		cxx_resolve();                                               \
		((type)cxx[i])args;                                          \
	}                                                                    \
	void name params                                                     \
	{                                                                    \
		if (AP_UNLIKELY(rt_maybe_ours(p)) && next_free_ours(p))      \
			return;                                              \
		((type)cxx[i])args;                                          \
	}

#define NT const void *t /* const std::nothrow_t & */

NEW(ap_nw, "_Znwm", NW, new_fn, (size_t n), (n), n, 0)
NEW(ap_na, "_Znam", NA, new_fn, (size_t n), (n), n, 0)
NEW(ap_nw_t, "_ZnwmRKSt9nothrow_t", NW_T, new_t_fn, (size_t n, NT), (n, t), n, 0)
NEW(ap_na_t, "_ZnamRKSt9nothrow_t", NA_T, new_t_fn, (size_t n, NT), (n, t), n, 0)
NEW(ap_nw_l, "_ZnwmSt11align_val_t", NW_L, new_l_fn, (size_t n, size_t al), (n, al), n, al)
NEW(ap_na_l, "_ZnamSt11align_val_t", NA_L, new_l_fn, (size_t n, size_t al), (n, al), n, al)
NEW(ap_nw_lt, "_ZnwmSt11align_val_tRKSt9nothrow_t", NW_LT, new_lt_fn,
    (size_t n, size_t al, NT), (n, al, t), n, al)
NEW(ap_na_lt, "_ZnamSt11align_val_tRKSt9nothrow_t", NA_LT, new_lt_fn,
    (size_t n, size_t al, NT), (n, al, t), n, al)

DEL(ap_dl, "_ZdlPv", DL, del_fn, (void *p), (p))
DEL(ap_da, "_ZdaPv", DA, del_fn, (void *p), (p))
DEL(ap_dl_s, "_ZdlPvm", DL_S, del_s_fn, (void *p, size_t n), (p, n))
DEL(ap_da_s, "_ZdaPvm", DA_S, del_s_fn, (void *p, size_t n), (p, n))
DEL(ap_dl_t, "_ZdlPvRKSt9nothrow_t", DL_T, del_t_fn, (void *p, NT), (p, t))
DEL(ap_da_t, "_ZdaPvRKSt9nothrow_t", DA_T, del_t_fn, (void *p, NT), (p, t))
DEL(ap_dl_l, "_ZdlPvSt11align_val_t", DL_L, del_l_fn, (void *p, size_t al), (p, al))
DEL(ap_da_l, "_ZdaPvSt11align_val_t", DA_L, del_l_fn, (void *p, size_t al), (p, al))
DEL(ap_dl_sl, "_ZdlPvmSt11align_val_t", DL_SL, del_sl_fn,
    (void *p, size_t n, size_t al), (p, n, al))
DEL(ap_da_sl, "_ZdaPvmSt11align_val_t", DA_SL, del_sl_fn,
    (void *p, size_t n, size_t al), (p, n, al))
DEL(ap_dl_lt, "_ZdlPvSt11align_val_tRKSt9nothrow_t", DL_LT, del_lt_fn,
    (void *p, size_t al, NT), (p, al, t))
DEL(ap_da_lt, "_ZdaPvSt11align_val_tRKSt9nothrow_t", DA_LT, del_lt_fn,
    (void *p, size_t al, NT), (p, al, t))

/* Their hidden names (interpose_next.h). */
#define CXX_ALIAS(name, sym) RT_HIDDEN_ALIAS(ap_##name, rt_entry_##name, sym)
CXX_ALIAS(nw, "_Znwm");
CXX_ALIAS(na, "_Znam");
CXX_ALIAS(nw_t, "_ZnwmRKSt9nothrow_t");
CXX_ALIAS(na_t, "_ZnamRKSt9nothrow_t");
CXX_ALIAS(nw_l, "_ZnwmSt11align_val_t");
CXX_ALIAS(na_l, "_ZnamSt11align_val_t");
CXX_ALIAS(nw_lt, "_ZnwmSt11align_val_tRKSt9nothrow_t");
CXX_ALIAS(na_lt, "_ZnamSt11align_val_tRKSt9nothrow_t");
CXX_ALIAS(dl, "_ZdlPv");
CXX_ALIAS(da, "_ZdaPv");
CXX_ALIAS(dl_s, "_ZdlPvm");
CXX_ALIAS(da_s, "_ZdaPvm");
CXX_ALIAS(dl_t, "_ZdlPvRKSt9nothrow_t");
CXX_ALIAS(da_t, "_ZdaPvRKSt9nothrow_t");
CXX_ALIAS(dl_l, "_ZdlPvSt11align_val_t");
CXX_ALIAS(da_l, "_ZdaPvSt11align_val_t");
CXX_ALIAS(dl_sl, "_ZdlPvmSt11align_val_t");
CXX_ALIAS(da_sl, "_ZdaPvmSt11align_val_t");
CXX_ALIAS(dl_lt, "_ZdlPvSt11align_val_tRKSt9nothrow_t");
CXX_ALIAS(da_lt, "_ZdaPvSt11align_val_tRKSt9nothrow_t");

/* Until the family is resolved, every entry point goes to its stub. */
static rt_fn cxx[CXX_N] = {
	(rt_fn)ap_nw_stub,
	(rt_fn)ap_na_stub,
	(rt_fn)ap_nw_t_stub,
	(rt_fn)ap_na_t_stub,
	(rt_fn)ap_nw_l_stub,
	(rt_fn)ap_na_l_stub,
	(rt_fn)ap_nw_lt_stub,
	(rt_fn)ap_na_lt_stub,
	(rt_fn)ap_dl_stub,
	(rt_fn)ap_da_stub,
	(rt_fn)ap_dl_s_stub,
	(rt_fn)ap_da_s_stub,
	(rt_fn)ap_dl_t_stub,
	(rt_fn)ap_da_t_stub,
	(rt_fn)ap_dl_l_stub,
	(rt_fn)ap_da_l_stub,
	(rt_fn)ap_dl_sl_stub,
	(rt_fn)ap_da_sl_stub,
	(rt_fn)ap_dl_lt_stub,
	(rt_fn)ap_da_lt_stub,
};
