/*
 * churn.h: CHURN(n, size), n blocks of size bytes allocated and freed at
 * once, for the test programs whose profiles are checked by exact counts
 * per function at rate 1 (chroot_daemon.c, self_sandbox.c, userns.c).
 * A macro, not a function: the function that uses it is the allocating
 * frame; and the pointer is volatile, so the compiler keeps each pair.
 */
#ifndef AP_TEST_CHURN_H
#define AP_TEST_CHURN_H

#include <stdlib.h>

#define CHURN(n, size)                                     \
	do {                                               \
		for (int i_ = 0; i_ < (n); i_++) {         \
			void *volatile p_ = malloc(size);  \
			free(p_);                          \
		}                                          \
	} while (0)

#endif
