/*
 * unwind_fns.h: many functions without frame pointers (unwind_fns.c) and
 * as many with (unwind_fns_fp.c).
 */
#ifndef AP_TEST_UNWIND_FNS_H
#define AP_TEST_UNWIND_FNS_H

#define UNWIND_FNS 2048

typedef void (*ufn_cb)(void *arg);

/* Call function k (0 <= k < UNWIND_FNS), which calls cb(arg): one
 * without a frame pointer (unwind_fns.c), or one with (unwind_fns_fp.c). */
void unwind_fns_call(int k, ufn_cb cb, void *arg);
void unwind_fns_call_fp(int k, ufn_cb cb, void *arg);

#endif
