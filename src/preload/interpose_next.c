/*
 * interpose_next.c: resolving the optional entry-point families of the
 * allocator underneath (interpose_next.h explains the scheme), and the
 * shared slow path of their frees.
 */
#include "interpose_next.h"

#include "attach.h"
#include "boot.h"
#include "detect.h"

#include <dlfcn.h>
#include <sched.h>
#include <string.h>

static const void *object_of(rt_fn f)
{
	void *a;
	memcpy(&a, &f, sizeof a);
	return boot_object_of(a);
}

void next_resolve(_Atomic int *state, const next_sym *syms, size_t n)
{
	if (atomic_load_explicit(state, memory_order_acquire) == 2)
		return;
	/* Loaded by allocprof attach: nothing until ap_runtime_attach (the
	 * constructors call this; the stubs call it again later). */
	if (atomic_load(&rt.state) == RT_NEW && attach_loaded_late())
		return;
	int expect = 0;
	if (!atomic_compare_exchange_strong(state, &expect, 1)) {
		while (atomic_load_explicit(state, memory_order_acquire) != 2)
			sched_yield();
		return;
	}
	rt_ensure_init();
	bool ready = atomic_load(&rt.state) == RT_READY;
	/* When the program's malloc is not the runtime's (an allocator the
	 * executable exports), libstdc++'s operators reach that malloc, not
	 * the runtime's: nothing is counted twice, and passing them on as
	 * they are keeps each block with the allocator it had without the
	 * runtime (a block from new released by free, as some code does). */
	bool as_is = !ready || detect_malloc_elsewhere();
	const void *home = ready ? object_of((rt_fn)rt_real.malloc) : NULL;
	for (size_t i = 0; i < n; i++) {
		void *a = boot_next_sym(syms[i].name);
		rt_fn f;
		memcpy(&f, &a, sizeof f);
		*syms[i].next = f;
		/* Runtime off: the next definition as is, when there is one. */
		bool use_next = f && (as_is || object_of(f) == home);
		*syms[i].slot = use_next ? f : syms[i].fallback;
	}
	atomic_store_explicit(state, 2, memory_order_release);
}

bool next_free_ours(void *p)
{
	if (rt_classify(p) == RT_OWNER_NONE)
		return false;
	rt_free_slow(p);
	return true;
}
