/*
 * interpose_next.h: shared by the interpose_*.c files that wrap an
 * allocator's extra entry points (C++ operators, jemalloc's *allocx,
 * tcmalloc's tc_*), which may or may not exist in the program.
 *
 * Each such entry point tail-calls a pointer that starts at a stub; the
 * first call of any stub resolves the whole family at once (dlsym
 * RTLD_NEXT, after the runtime is initialised) and re-points them. A
 * symbol found in the allocator underneath (the object rt_real.malloc
 * came from) is used as is, so jemalloc's and tcmalloc's own fast paths
 * (sized delete, nothrow new) stay in use; one found elsewhere (libstdc++,
 * which merely calls malloc) or nowhere is replaced by a local fallback on
 * the runtime's malloc family, so no byte is counted twice and no block
 * crosses allocators. Except when the program's malloc is not the
 * runtime's (detect.h): then libstdc++'s operators reach the program's
 * malloc, and every next definition is used as is.
 */
#ifndef AP_PRELOAD_INTERPOSE_NEXT_H
#define AP_PRELOAD_INTERPOSE_NEXT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "runtime_core.h"

#define EXPORT __attribute__((visibility("default")))

/* One symbol of a family: its name, where the entry point jumps, the next
 * definition found (NULL: none), and the local fallback. */
/* Any function pointer, stored untyped and cast back to its own type at
 * the call (a cast between function pointer types is plain C). */
typedef void (*rt_fn)(void);

typedef struct next_sym {
	const char *name;
	rt_fn *slot;
	rt_fn *next;
	rt_fn fallback;
} next_sym;

/*
 * Resolve a family once (thread-safe; *state 0 = not yet, 2 = done): each
 * slot gets the next definition when it lives in the allocator underneath,
 * else its fallback.
 */
RT_HIDDEN void next_resolve(_Atomic int *state, const next_sym *syms, size_t n);

/* Delete/free of p behind rt_maybe_ours: true when p was the runtime's
 * (a range or sampled-set block) and is now freed; false: not ours. */
RT_HIDDEN bool next_free_ours(void *p);

/* The runtime's own C++ operators (interpose_cxx.c) under hidden names,
 * for the same reason as rt_entry_malloc (runtime_core.h): a program may
 * define operator new itself. */
#define NT_ const void * /* const std::nothrow_t & */
RT_HIDDEN void *rt_entry_nw(size_t n);
RT_HIDDEN void *rt_entry_na(size_t n);
RT_HIDDEN void *rt_entry_nw_t(size_t n, NT_ t);
RT_HIDDEN void *rt_entry_na_t(size_t n, NT_ t);
RT_HIDDEN void *rt_entry_nw_l(size_t n, size_t al);
RT_HIDDEN void *rt_entry_na_l(size_t n, size_t al);
RT_HIDDEN void *rt_entry_nw_lt(size_t n, size_t al, NT_ t);
RT_HIDDEN void *rt_entry_na_lt(size_t n, size_t al, NT_ t);
RT_HIDDEN void rt_entry_dl(void *p);
RT_HIDDEN void rt_entry_da(void *p);
RT_HIDDEN void rt_entry_dl_s(void *p, size_t n);
RT_HIDDEN void rt_entry_da_s(void *p, size_t n);
RT_HIDDEN void rt_entry_dl_t(void *p, NT_ t);
RT_HIDDEN void rt_entry_da_t(void *p, NT_ t);
RT_HIDDEN void rt_entry_dl_l(void *p, size_t al);
RT_HIDDEN void rt_entry_da_l(void *p, size_t al);
RT_HIDDEN void rt_entry_dl_sl(void *p, size_t n, size_t al);
RT_HIDDEN void rt_entry_da_sl(void *p, size_t n, size_t al);
RT_HIDDEN void rt_entry_dl_lt(void *p, size_t al, NT_ t);
RT_HIDDEN void rt_entry_da_lt(void *p, size_t al, NT_ t);
#undef NT_

static inline bool next_not_sampled(size_t n)
{
	return AP_LIKELY(!ap_sampler_should_sample(&rt_tls.sampler, n));
}

#endif
