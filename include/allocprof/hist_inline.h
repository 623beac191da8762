/*
 * allocprof/hist_inline.h: an opt-in inline record path for per-thread
 * histogram recorders (allocprof/hist.h). UNSTABLE: see below.
 *
 * ap_hist_recorder_add_inline(r, v) records v exactly as ap_hist_recorder_add
 * does (same counts, sum, sum of squares, min, max, same errors) but its
 * common case is compiled into the caller: no call, and the recorder's
 * fields stay addressed off one register across a loop. Use it in a
 * thread's own hot loop when the record cost matters (docs/HISTOGRAMS.md
 * has the numbers); elsewhere ap_hist_recorder_add is as good and keeps the
 * program independent of the library's internals.
 *
 * To allow this the header publishes the hot part of a recorder, struct
 * ap_hist_recorder_hot: exactly the fields the common case reads and
 * writes. Inside the library the hot part is the first member of the
 * recorder (C17 6.7.2.1: a pointer to a struct, suitably converted, points
 * to its first member), which is what the cast in ap_hist_recorder_hot_of
 * relies on. Anything rare (the value's counters not yet allocated,
 * v >= 2^32, a carry out of the low word of the sum or of the sum of
 * squares) goes to ap_hist_recorder_add before any field is written, so
 * nothing is recorded twice. The library's own ap_hist_recorder_add runs
 * this very code, so the two cannot drift apart.
 *
 * UNSTABLE: the layout of struct ap_hist_recorder_hot and the meaning of its
 * fields are NOT part of liballocprof's stable API or ABI and may change in
 * any release, without a SONAME change. A program including this header
 * must be built against the same liballocprof release it runs with (link
 * the static library, or pin the exact shared library version). The
 * default header allocprof/hist.h keeps every type opaque and is unaffected.
 * The library pins the current layout with static assertions (src/lib/hist.c)
 * so that no change to it goes unnoticed.
 *
 * Concurrency: only the recorder's owner thread writes these fields, but
 * snapshots read them from other threads, so every access is a C11 atomic
 * (relaxed; the counter table is loaded with acquire, pairing with the
 * release that publishes a new counter array). Relaxed loads and stores are
 * plain moves on x86-64 and ARM64 and keep ThreadSanitizer quiet.
 *
 * C++ and compilers without GNU builtins or C11 atomics do not get the
 * layout (C's _Atomic is not C++'s std::atomic, whose layout the standard
 * does not tie to it): there ap_hist_recorder_add_inline is defined as a
 * plain call to ap_hist_recorder_add, with identical results.
 */
#ifndef ALLOCPROF_HIST_INLINE_H
#define ALLOCPROF_HIST_INLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "allocprof/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__cplusplus) && defined(__GNUC__) && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>

#define AP_HIST_INLINE_RECORD 1

struct ap_hist_recorder_hot {
	/*
	 * base[e]: where the counters of values v with exponent e start, biased
	 * so that the counter of v is the uint64 at base[e] + 8 * (v >> e),
	 * e = floor(log2(v | 2^sigbits)) - sigbits (ap_hist_value_to_key's
	 * exponent). 0 when those counters are not allocated yet, and always 0
	 * for e >= 32 - sigbits, i.e. v >= 2^32, whose square needs 128 bits.
	 */
	_Atomic uintptr_t base[64]; /* first: saves an add per record */
	unsigned sigbits;
	unsigned reserved_; /* zero */
	uint64_t lead;      /* 2^sigbits: v | lead has its top bit where the
			       key's exponent says (one OR, no shift) */
	unsigned char pad0_[64]; /* read-mostly table apart from the writes */
	_Atomic uint64_t min, max; /* min = UINT64_MAX, max = 0 when empty */
	unsigned char pad1_[64];
	_Atomic uint64_t sum_lo, sq_lo; /* low words of the 128-bit sums */
};

/* The hot part of r: its first member (see above). */
static inline struct ap_hist_recorder_hot *
ap_hist_recorder_hot_of(ap_hist_recorder *r)
{
	return (struct ap_hist_recorder_hot *)(void *)r;
}

/*
 * The common case, shared with ap_hist_recorder_add: record v and return
 * true, or change nothing and return false (the caller then takes the
 * general path). Not for direct use: call ap_hist_recorder_add_inline.
 */
static inline unsigned
ap_hist_recorder_exponent(const struct ap_hist_recorder_hot *h, uint64_t v)
{
	/* The key's exponent: how far v is shifted right to keep sigbits + 1
	 * significant bits (63 ^ clz is one BSR). */
	return (63u ^ (unsigned)__builtin_clzll(v | h->lead)) - h->sigbits;
}

/*
 * The same with v's exponent e given (ap_hist_recorder_exponent of any
 * hot part of the same sigbits): lets a caller compute e while it is
 * still finding the recorder.
 */
static inline bool
ap_hist_recorder_add_common_e(struct ap_hist_recorder_hot *h, uint64_t v,
			      unsigned e)
{
	uintptr_t base = atomic_load_explicit(&h->base[e], memory_order_acquire);
	uint64_t sum = atomic_load_explicit(&h->sum_lo, memory_order_relaxed);
	uint64_t sq = atomic_load_explicit(&h->sq_lo, memory_order_relaxed);
	uint64_t vv = v * v; /* exact: base[e] != 0 implies v < 2^32 */
	if (__builtin_expect(!base || sum + v < sum || sq + vv < sq, 0))
		return false;
	_Atomic uint64_t *cnt =
		(_Atomic uint64_t *)(base + (uintptr_t)(v >> e) * sizeof(uint64_t));
	atomic_store_explicit(cnt, atomic_load_explicit(cnt, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_store_explicit(&h->sum_lo, sum + v, memory_order_relaxed);
	atomic_store_explicit(&h->sq_lo, sq + vv, memory_order_relaxed);
	if (v < atomic_load_explicit(&h->min, memory_order_relaxed))
		atomic_store_explicit(&h->min, v, memory_order_relaxed);
	if (v > atomic_load_explicit(&h->max, memory_order_relaxed))
		atomic_store_explicit(&h->max, v, memory_order_relaxed);
	return true;
}

static inline bool
ap_hist_recorder_add_common(struct ap_hist_recorder_hot *h, uint64_t v)
{
	return ap_hist_recorder_add_common_e(h, v, ap_hist_recorder_exponent(h, v));
}

/* As ap_hist_recorder_add (same results, same errors), inlined. */
static inline int ap_hist_recorder_add_inline(ap_hist_recorder *r, uint64_t v)
{
	if (__builtin_expect(
		    ap_hist_recorder_add_common(ap_hist_recorder_hot_of(r), v), 1))
		return 0;
	return ap_hist_recorder_add(r, v);
}
#else
/* No published layout here (see above): the same results through a call. */
static inline int ap_hist_recorder_add_inline(ap_hist_recorder *r, uint64_t v)
{
	return ap_hist_recorder_add(r, v);
}
#endif /* inline record path */

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_HIST_INLINE_H */
