/*
 * unwind_fns_fp.c: unwind_fns.c's 2048 functions again, as
 * unwind_fns_call_fp, built with frame pointers and without optimisation
 * (tests/CMakeLists.txt), so that each opens with the plain push %rbp;
 * mov %rsp,%rbp the unwinder recognises: the frame-pointer walk passes
 * each one after its verdict is cached.
 */
#define unwind_fns_call unwind_fns_call_fp
#include "unwind_fns.c"
