/*
 * unwind_fns.c: 2048 distinct functions built without frame pointers
 * (tests/CMakeLists.txt), for tests/unit/preload_unwind_cache_test.c. Each
 * calls back once, so a capture from the callback meets a return address
 * of its own in a function the frame-pointer walk cannot pass: the
 * libunwind unwinder judges it (a frame-pointer verdict) and learns its
 * frame rule, one entry of each of its caches per function.
 */
#include "unwind_fns.h"

#include "eh_fns.h"

#include <stdatomic.h>
#include <stdint.h>

/* Written by every thread of the test: atomic, unlike eh_fns.h's sink. */
static _Atomic uintptr_t sink;

/* Distinct bodies (__COUNTER__), so no two are merged into one. */
#define UFN(name)                                                        \
	__attribute__((noinline)) static void name(ufn_cb cb, void *arg) \
	{                                                                \
		atomic_store_explicit(&sink, (uintptr_t)arg + __COUNTER__, \
				      memory_order_relaxed);              \
		cb(arg);                                                 \
		__asm__ volatile("");                                    \
	}
#define UREF(k) u##k,
#define UFN_K(k) UFN(u##k)

EH_L5(UFN_K, 1)
EH_L5(UFN_K, 2)
static void (*const ufns[UNWIND_FNS])(ufn_cb, void *) = { EH_L5(UREF, 1) EH_L5(UREF, 2) };

void unwind_fns_call(int k, ufn_cb cb, void *arg)
{
	ufns[k](cb, arg);
	__asm__ volatile("");
}
