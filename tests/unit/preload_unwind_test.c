/*
 * preload_unwind_test.c: the three stack unwinders (src/preload/unwinder.h)
 * agree on a known recursion, honour max_depth, and drop the frames of the
 * range given to unwind_set_self. AP_TEST_OWN_FRAMES: built with every
 * call a real frame in any build type (tests/CMakeLists.txt).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "aptest.h"
#include "unwinder.h"

#define DEPTH 12

typedef struct capture {
	unwinder_kind kind;
	uintptr_t pcs[64];
	int n;
	int max;
} capture;

/* Recursion with frame pointers kept (AP_TEST_OWN_FRAMES builds this file
 * with -fno-omit-frame-pointer) so even the fp walk sees every level; the
 * volatile use after the call prevents a tail call. */
__attribute__((noinline)) static int
recurse(capture *c, int level)
{
	volatile int keep = level;
	if (level == 0)
		c->n = unwind_capture(c->kind, c->pcs, c->max);
	else
		recurse(c, level - 1);
	return keep;
}

static int run(unwinder_kind k, int max, capture *c)
{
	memset(c, 0, sizeof *c);
	c->kind = k;
	c->max = max;
	recurse(c, DEPTH);
	return c->n;
}

/* How often addr occurs in a capture. */
static int occurrences(const capture *c, uintptr_t addr)
{
	int k = 0;
	for (int i = 0; i < c->n; i++)
		k += c->pcs[i] == addr;
	return k;
}

/* The return address inside recurse that follows its recursive call: the
 * most frequent frame of a capture. */
static uintptr_t recursion_return(const capture *c)
{
	uintptr_t best = 0;
	int best_n = 0;
	for (int i = 0; i < c->n; i++) {
		int k = occurrences(c, c->pcs[i]);
		if (k > best_n) {
			best_n = k;
			best = c->pcs[i];
		}
	}
	return best;
}

/* A level of recursion without a frame pointer (this file is built with
 * them): the libunwind unwinder's frame-pointer fast path must hand over
 * to libunwind here. The volatile use after the call keeps it a frame;
 * -fomit-frame-pointer with optimisation makes GCC skip push %rbp (clang
 * has no per-function switch: there it keeps one). */
#ifdef __clang__
#define NO_FRAME_POINTER /* no per-function switch: a frame like the rest */
#else
#define NO_FRAME_POINTER __attribute__((optimize("O2", "omit-frame-pointer")))
#endif
__attribute__((noinline)) NO_FRAME_POINTER static int no_fp(capture *c, int level)
{
	volatile int keep = level;
	recurse(c, level);
	return keep + 1;
}

/* recurse's levels above, no_fp in the middle, recurse's below it. */
static int (*volatile middle)(capture *, int) = no_fp;

__attribute__((noinline)) static int
outer(capture *c, int level)
{
	volatile int keep = level;
	if (level == 0)
		middle(c, DEPTH / 2);
	else
		outer(c, level - 1);
	return keep;
}

/* Equal but for frame 0, the unwinder's own call site (different code
 * for each kind; a frame of the runtime, dropped in use). */
static bool same_capture(const capture *a, const capture *b)
{
	return a->n == b->n && a->n > 1 &&
	       memcmp(a->pcs + 1, b->pcs + 1, (size_t)(a->n - 1) * sizeof a->pcs[0]) == 0;
}

/* Both captures taken from the same call site (the same return address
 * into recurse and the same stack above it), with each unwinder. */
static void run_pair(capture *fast, capture *only, bool through_no_fp)
{
	memset(fast, 0, sizeof *fast);
	memset(only, 0, sizeof *only);
	fast->kind = UNWINDER_LIBUNWIND;
	only->kind = UNWINDER_LIBUNWIND_ONLY;
	fast->max = only->max = 64;
	/* volatile: one call site for both, never unrolled into two */
	for (volatile int k = 0; k < 2; k++) {
		capture *c = k ? only : fast;
		if (through_no_fp)
			outer(c, DEPTH / 2);
		else
			recurse(c, DEPTH);
	}
}

/* The fast path changes only the cost: the same frames as libunwind's
 * own unw_backtrace, innermost first, on a stack kept with frame pointers
 * down to libc's start of main (which has none: libunwind finishes) and
 * on one with a function without them in the middle. The first frame of
 * each capture is the return address into recurse, identical for both. */
AP_TEST(libunwind_fast_path_finds_libunwinds_frames)
{
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_LIBUNWIND_ONLY), 0);
	for (int mid = 0; mid < 2; mid++) {
		capture fast, only;
		run_pair(&fast, &only, mid == 1);
		if (!same_capture(&fast, &only))
			for (int i = 0; i < 64 && (i < fast.n || i < only.n); i++)
				fprintf(stderr, "  %2d %#lx %#lx\n", i,
					i < fast.n ? (unsigned long)fast.pcs[i] : 0UL,
					i < only.n ? (unsigned long)only.pcs[i] : 0UL);
		AP_CHECK(fast.n >= DEPTH + 2);
		AP_CHECK(same_capture(&fast, &only));
	}
}

AP_TEST(every_unwinder_is_available)
{
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_LIBUNWIND), 0);
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_LIBGCC), 0);
	AP_CHECK_EQ_INT(unwind_prepare(UNWINDER_FP), 0);
	AP_CHECK(strcmp(unwinder_names[UNWINDER_FP], "fp") == 0);
	AP_CHECK(unwinder_names[3] == NULL);
}

AP_TEST(unwinders_see_the_whole_recursion_and_agree)
{
	capture u, g, f;
	unwind_prepare(UNWINDER_LIBGCC);
	AP_CHECK(run(UNWINDER_LIBUNWIND, 64, &u) >= DEPTH + 2);
	AP_CHECK(run(UNWINDER_LIBGCC, 64, &g) >= DEPTH + 2);
	AP_CHECK(run(UNWINDER_FP, 64, &f) >= DEPTH);
	/* Each level of the recursion returns to the same address: all three
	 * unwinders must find it exactly DEPTH times. */
	uintptr_t ret = recursion_return(&u);
	AP_CHECK_EQ_INT(occurrences(&u, ret), DEPTH);
	AP_CHECK_EQ_INT(occurrences(&g, ret), DEPTH);
	AP_CHECK_EQ_INT(occurrences(&f, ret), DEPTH);
}

AP_TEST(depth_is_capped)
{
	capture c;
	AP_CHECK_EQ_INT(run(UNWINDER_LIBUNWIND, 5, &c), 5);
	AP_CHECK_EQ_INT(run(UNWINDER_LIBGCC, 3, &c), 3);
	AP_CHECK_EQ_INT(run(UNWINDER_FP, 2, &c), 2);
	AP_CHECK_EQ_INT(run(UNWINDER_LIBUNWIND, 0, &c), 0);
	/* Requests above the maximum are clamped, not overflowed. */
	uintptr_t big[UNWIND_DEPTH_MAX];
	AP_CHECK(unwind_capture(UNWINDER_LIBUNWIND, big, 100000) <= UNWIND_DEPTH_MAX);
}

AP_TEST(frames_of_the_runtime_itself_are_dropped)
{
	capture all, skipped;
	run(UNWINDER_LIBUNWIND, 64, &all);
	/* Declare this whole executable to be "the runtime": every leading
	 * frame inside it goes, leaving the C library's frames below main. */
	uintptr_t lo, hi;
	AP_CHECK_EQ_INT(unwind_object_range((const void *)&recurse, &lo, &hi), 0);
	AP_CHECK(lo <= (uintptr_t)&recurse && (uintptr_t)&recurse < hi);
	unwind_set_self(lo, hi);
	run(UNWINDER_LIBUNWIND, 64, &skipped);
	unwind_set_self(0, 0);
	AP_CHECK(skipped.n < all.n - DEPTH);
	AP_CHECK(skipped.n == 0 || skipped.pcs[0] < lo || skipped.pcs[0] >= hi);
}

#if defined(__x86_64__)
/*
 * ap_test_under_fake_frame(fn, c, next): calls fn(c) with %rbp pointing at
 * a frame record {next, a return address} on the stack, as a caller built
 * without frame pointers that keeps data in %rbp leaves it. fn's own frame
 * record then links to a record whose saved frame pointer is next: what a
 * frame-pointer walk meets in such a program (as, from binutils, crashed
 * under unwinder=fp with next = -16, whose record end wrapped to 0).
 * Stack alignment: entry 8 mod 16, three pushes, the call sees 0.
 */
__attribute__((visibility("hidden"))) int
ap_test_under_fake_frame(int (*fn)(capture *), capture *c, uintptr_t next);
__asm__(".text\n"
	".type ap_test_under_fake_frame, @function\n"
	"ap_test_under_fake_frame:\n"
	"	push %rbp\n"
	"	lea 1f(%rip), %rax\n"
	"	push %rax\n"
	"	push %rdx\n"
	"	mov %rsp, %rbp\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"1:	add $16, %rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size ap_test_under_fake_frame, .-ap_test_under_fake_frame\n");

__attribute__((noinline)) static int under_fake(capture *c)
{
	volatile int keep = 1;
	c->n = unwind_capture(c->kind, c->pcs, c->max);
	return keep;
}

/* Frame pointers that are really data end the walk: each unwinder returns
 * the frames up to the bad record instead of reading through it. -16 and
 * -8 are aligned and above every stack frame, so only the bounds check
 * stands between them and a read past the end of the address space;
 * 0x7ffffffff000 is above the stack, unmapped. */
AP_TEST(frame_pointers_holding_data_end_the_walk)
{
	static const uintptr_t bad[] = { (uintptr_t)-16, (uintptr_t)-8,
					 (uintptr_t)0x7ffffffff000 };
	static const unwinder_kind kinds[] = { UNWINDER_FP, UNWINDER_LIBUNWIND,
					       UNWINDER_LIBUNWIND_ONLY, UNWINDER_LIBGCC };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
			capture c;
			memset(&c, 0, sizeof c);
			c.kind = kinds[k];
			c.max = 64;
			ap_test_under_fake_frame(under_fake, &c, bad[i]);
			/* under_fake's return into the trampoline at least */
			AP_CHECK(c.n >= 1);
			AP_CHECK(c.n < c.max);
		}
	}
}
#endif
