/*
 * eh_fns.h: many distinct allocating functions, for progs/eh_pages.c and
 * libs/eh_lib.c (tests/integration/preload_ehtrim_test.sh). EH_Ln(X, k)
 * expands X(kD...D) for each of the 4^n strings of n digits D in 0-3;
 * EH_FN(name) defines one function, with a size of its own (__COUNTER__)
 * so that no two are identical and folded into one.
 */
#ifndef AP_TEST_EH_FNS_H
#define AP_TEST_EH_FNS_H

#include <stdlib.h>

static void *volatile eh_sink __attribute__((unused));

#define EH_FN(name)                                         \
	__attribute__((noinline)) static void name(void)      \
	{                                                     \
		void *p = malloc(32 + __COUNTER__);           \
		eh_sink = p;                                  \
		free(p);                                      \
		__asm__ volatile("");                         \
	}
#define EH_L1(X, k) X(k##0) X(k##1) X(k##2) X(k##3)
#define EH_L2(X, k) EH_L1(X, k##0) EH_L1(X, k##1) EH_L1(X, k##2) EH_L1(X, k##3)
#define EH_L3(X, k) EH_L2(X, k##0) EH_L2(X, k##1) EH_L2(X, k##2) EH_L2(X, k##3)
#define EH_L4(X, k) EH_L3(X, k##0) EH_L3(X, k##1) EH_L3(X, k##2) EH_L3(X, k##3)
#define EH_L5(X, k) EH_L4(X, k##0) EH_L4(X, k##1) EH_L4(X, k##2) EH_L4(X, k##3)
#define EH_L6(X, k) EH_L5(X, k##0) EH_L5(X, k##1) EH_L5(X, k##2) EH_L5(X, k##3)

#endif
