/*
 * allocprof/sampler.h: per-byte random allocation sampling.
 *
 * Model (STATISTICS.md section 1; [R1] jemalloc, [R3]
 * heapprofd, [R4] .NET AllocationSampled): every allocated byte is a Bernoulli
 * trial with success probability p; an allocation is sampled when one of its
 * bytes succeeds. Instead of flipping a coin per byte, the sampler keeps
 * bytes_until_sample = the number of failed trials left before the next
 * success, drawn from the geometric distribution, and subtracts each size
 * from it. Random numbers are drawn only when a sample is taken.
 *
 * Use: one ap_sampler per thread (no locking inside). On every allocation
 *
 *     if (AP_UNLIKELY(ap_sampler_should_sample_pt(&s, size))) {
 *             ap_sample_info info;
 *             ap_sampler_sample(&s, size, &info);   // record the stack etc.
 *     }
 *
 * Size 0 is never sampled: it has no bytes, hence no trials, and pi(0) = 0;
 * a profiler that wants zero-sized allocations counted must count them
 * exactly on its own.
 *
 * Bump-pointer allocators fold the sampler into their bound check with the
 * combined limit (ap_bump_*, bottom of this file; examples/bump_arena.c).
 */
#ifndef ALLOCPROF_SAMPLER_H
#define ALLOCPROF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"
#include "allocprof/prng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default mean sampling interval R in bytes (512 KiB, as jemalloc/Go). */
#define AP_SAMPLER_DEFAULT_RATE 524288u
/*
 * Largest accepted R: 2^52. Gaps are drawn from a uniform U on the lattice
 * k 2^-53 (ap_prng_uniform); near U = 1 consecutive lattice points are
 * R 2^-53 bytes of gap apart, so above 2^53 some gap lengths can never be
 * drawn (at 2^56 the gap after 0 is 8), and in general P(gap < Z) = pi(Z)
 * is off by up to 2^-53 absolute, R / (Z 2^53) relative. R <= 2^52 keeps
 * at least two lattice points per gap length, makes P(gap = 0) = 1/R
 * exactly, and bounds the relative error of pi(Z) by 1/(2Z) (6e-11 / Z at
 * the default rate); docs/STATISTICS.md section 1. Gap draws are also
 * capped at AP_SAMPLER_GAP_MAX so the counter can never overflow; with
 * R <= 2^52 the cap cuts a tail of probability (1 - 1/R)^(2^62) <=
 * exp(-1024) per draw.
 */
#define AP_SAMPLER_RATE_MAX ((uint64_t)1 << 52)
#define AP_SAMPLER_GAP_MAX ((uint64_t)1 << 62)
/* Passthrough: sizes whose pi exceeds this are recorded exactly ([R3]). */
#define AP_SAMPLER_PASSTHROUGH_PROB 0.99

typedef enum {
	AP_GAP_GEOMETRIC,  /* exact: floor(log(U) / log1p(-1/R)), P(byte) = 1/R */
	AP_GAP_EXPONENTIAL /* floor(-R log(U)): geometric with P(byte) = 1 - e^(-1/R) */
} ap_gap_kind;

typedef enum {
	AP_SAMPLE_FIRST, /* .NET: after the first success skip the rest of the
			    allocation (legal: [R4], point 4) */
	AP_SAMPLE_COUNT  /* heapprofd: count every success inside the allocation;
			    the leftover gap carries over to the next one */
} ap_sample_mode;

typedef struct ap_sampler_config {
	uint64_t rate;          /* mean interval R in bytes; 1 = every allocation */
	ap_gap_kind gap;        /* default AP_GAP_GEOMETRIC (exact) */
	ap_sample_mode mode;    /* default AP_SAMPLE_FIRST */
	bool passthrough;       /* sizes with pi > 0.99 recorded exactly (default off) */
	uint64_t seed;          /* 0 = random */
} ap_sampler_config;

/*
 * Sampler state. bytes_until_sample comes first so that fast paths written
 * in assembly or by a runtime find it at offset 0; it always lies in
 * [0, AP_SAMPLER_GAP_MAX] between calls. The other fields are read-only to
 * users: change them through ap_sampler_init / ap_sampler_set_rate.
 */
typedef struct ap_sampler {
	int64_t bytes_until_sample; /* failed trials before the next success */
	uint64_t exact_min;  /* passthrough: sizes >= this are exact; else UINT64_MAX */
	uint64_t rate;       /* R */
	double log_q;        /* log P(byte not sampled): log1p(-1/R) or -1/R */
	double byte_p;       /* P(byte sampled) = -expm1(log_q) */
	ap_gap_kind gap;
	ap_sample_mode mode;
	bool passthrough;
	ap_prng prng;
} ap_sampler;

typedef struct ap_sample_info {
	uint64_t size;   /* requested size */
	uint64_t offset; /* 0-based offset of the first sampled byte (u = size - offset);
			    0 for exact (passthrough) records */
	uint64_t count;  /* samples inside the allocation: 1 in FIRST mode, >= 1 in COUNT;
			    0 only if ap_sampler_sample was called for an allocation
			    that is not sampled */
	double prob;     /* pi = P(this allocation is sampled); 1 when exact */
	double weight;   /* HT multiplier: objects estimate = weight, bytes = weight * size.
			    FIRST: 1/pi; COUNT: count / (P(byte) * size), which is
			    count * R / size for geometric gaps; exact: 1 */
	bool exact;      /* recorded with probability 1 (passthrough or R = 1) */
	uint64_t rate;   /* the per-byte rate R behind prob and offset: the
			    sampler's, or the class rate of ap_sampler_sample_at */
} ap_sample_info;

/* R = 524288, geometric gaps, FIRST mode, no passthrough, random seed. */
AP_API void ap_sampler_config_default(ap_sampler_config *c);

/*
 * Initialise s from c and draw the first gap. Errors: AP_EINVAL for a NULL
 * argument, rate 0 or an unknown gap/mode; AP_ERANGE for rate above
 * AP_SAMPLER_RATE_MAX. On error (s non-NULL) s is left inert: the fast
 * path passes everything below 2^62 bytes and ap_sampler_sample never
 * samples: a caller that ignores the error loses its profile, nothing else.
 * R = 1 samples every non-empty allocation with probability 1 whatever the
 * gap kind or mode (records are exact, weight 1).
 */
AP_API int ap_sampler_init(ap_sampler *s, const ap_sampler_config *c);

/*
 * Change R (same domain and errors as init; s unchanged on error). Redraws
 * the gap: legal because the pending trials are discarded without looking
 * at them ([R4], point 4). Recomputes the passthrough threshold.
 */
AP_API int ap_sampler_set_rate(ap_sampler *s, uint64_t rate);

/*
 * Fast path: true when the allocation of `size` bytes is sampled; then call
 * ap_sampler_sample. Otherwise charges the bytes to the counter. One
 * unsigned subtraction whose borrow is the branch, so every size_t is safe
 * (a borrow means size > bytes_until_sample, i.e. the success lies inside
 * the allocation). On true the counter is left untouched: the slow path
 * reads the offset from it.
 */
static inline bool ap_sampler_should_sample(ap_sampler *s, size_t size)
{
	uint64_t left;
	if (AP_UNLIKELY(__builtin_sub_overflow((uint64_t)s->bytes_until_sample,
					       (uint64_t)size, &left)))
		return true;
	s->bytes_until_sample = (int64_t)left;
	return false;
}

/*
 * Fast path with the passthrough check: also true for sizes >= exact_min,
 * which ap_sampler_sample records exactly without consuming trials. Use this
 * one whenever passthrough is on (with plain should_sample, large unsampled
 * allocations would be charged as trials and missed). With passthrough off
 * exact_min is UINT64_MAX and only sizes that the counter samples anyway
 * reach the slow path.
 */
static inline bool ap_sampler_should_sample_pt(ap_sampler *s, size_t size)
{
	if (AP_UNLIKELY((uint64_t)size >= s->exact_min))
		return true;
	return ap_sampler_should_sample(s, size);
}

/*
 * Slow path: fill *out for an allocation of `size` bytes after a fast path
 * returned true, and advance the counter past it (FIRST: fresh gap after the
 * allocation; COUNT: keep drawing inside it, leftover carries over; exact:
 * counter untouched). Called for an allocation that is not sampled, it
 * behaves like the fast path: charges the bytes and reports count 0,
 * weight 0, prob pi.
 */
AP_API void ap_sampler_sample(ap_sampler *s, size_t size, ap_sample_info *out);

/*
 * Slow path at a per-class rate (sample tables, docs/STATISTICS.md section
 * 10): like ap_sampler_sample, but the allocation is sampled exactly as if
 * the sampler ran at `rate` R_c >= R, its own rate, for this allocation
 * alone: prob = 1 - (1 - 1/R_c)^size, offset the first success of a
 * per-byte run at R_c, out->rate = R_c. The fast path is unchanged; this
 * thins its successes: the success at the counter's offset is kept with
 * probability R/R_c, and if it is dropped, the rest of the allocation is
 * searched with one geometric draw at R_c (by memorylessness its bytes are
 * independent trials of probability 1/R_c). So every byte of the
 * allocation is an independent trial of probability (1/R)(R/R_c) = 1/R_c.
 * Then the counter takes a fresh gap at R as in FIRST mode. The keep coin
 * compares a uniform on the 2^-53 lattice with R/R_c: exact when R_c/R is
 * a power of two (what `allocprof tune` writes), else off by < 2^-53.
 * Requires geometric gaps and FIRST mode, no passthrough for this
 * size and R < R_c <= AP_SAMPLER_RATE_MAX; otherwise (or rate <= R) it is
 * ap_sampler_sample. An allocation all of whose successes are dropped
 * reports count 0 and costs at most two random draws.
 */
AP_API void ap_sampler_sample_at(ap_sampler *s, size_t size, uint64_t rate,
				 ap_sample_info *out);

/*
 * pi(size) = P(an allocation of `size` bytes is sampled) for this sampler:
 * -expm1(size * log_q), i.e. 1 - (1 - 1/R)^size for geometric gaps and
 * 1 - exp(-size/R) for exponential ones (exact for the floored exponential
 * draw, see ap_gap_kind). 0 for size 0; 1 for R = 1 or passthrough sizes.
 */
AP_API double ap_sampler_prob(const ap_sampler *s, uint64_t size);

/*
 * Passthrough threshold for rate R and gap kind: the smallest Z with
 * pi(Z) > AP_SAMPLER_PASSTHROUGH_PROB (1 for R = 1). 0 for invalid R.
 */
AP_API uint64_t ap_sampler_exact_threshold(uint64_t rate, ap_gap_kind gap);

/* One gap draw from s's distribution (capped at AP_SAMPLER_GAP_MAX). Does not
 * change the counter; exposed for tests and benchmarks. */
AP_API uint64_t ap_sampler_next_gap(ap_sampler *s);

/*
 * Discard the next n trials without looking at them: as if n bytes were
 * allocated but no sample inside them could be recorded. Legal ([R4],
 * point 4): the decision does not depend on the outcomes. O(1): when a
 * success falls inside the skipped bytes, the trials after the skip are a
 * fresh geometric run by memorylessness.
 */
AP_API void ap_sampler_skip(ap_sampler *s, uint64_t n);

/* Replace the pending gap with a fresh draw (also legal, same reason). */
AP_API void ap_sampler_redraw(ap_sampler *s);

/*
 * Combined limit for bump-pointer allocators ([R4], "combined limit").
 * The allocator keeps its bump region in an ap_bump and checks only
 * combined_limit = min(anchor + bytes_until_sample, limit) on its fast path:
 *
 *     if (AP_LIKELY(size <= b->combined_limit - b->ptr)) {  // fits, not sampled
 *             void *p = (void *)b->ptr; b->ptr += size; return p;
 *     }
 *     unsigned hit = ap_bump_slow(b, s, size, &info);  // accounts the bytes
 *     if (hit & AP_BUMP_REFILL) ... get a new region; ap_bump_reset(b, s, lo, hi);
 *     p = ap_bump_place(b, s, size);      // or serve it elsewhere
 *     if (hit & AP_BUMP_SAMPLE) ... record p with info;
 *
 * Between slow paths the sampler's counter is stale: the bytes bumped since
 * `anchor` are charged at the next ap_bump_slow / ap_bump_sync. The bytes of
 * a region left unused at refill are never charged, so the bump allocator
 * samples exactly the objects that ap_sampler_should_sample would for the
 * same sequence of sizes and seed (allocprof's unit tests).
 */
typedef struct ap_bump {
	uintptr_t ptr;            /* next free byte (alloc_ptr) */
	uintptr_t combined_limit; /* min(anchor + bytes_until_sample, limit), and
				     with passthrough below anchor + exact_min */
	uintptr_t limit;          /* end of the region (alloc_limit) */
	uintptr_t anchor;         /* ptr when the counter was last synced */
} ap_bump;

enum {
	AP_BUMP_SAMPLE = 1, /* the allocation is sampled: info is filled */
	AP_BUMP_REFILL = 2  /* it does not fit in [ptr, limit) */
};

/*
 * Start with region [lo, hi) (hi < lo is taken as empty). Use once, before
 * any other ap_bump call on b: it does not read b's previous contents.
 */
AP_API void ap_bump_init(ap_bump *b, const ap_sampler *s, uintptr_t lo, uintptr_t hi);

/*
 * Switch to region [lo, hi), e.g. after a refill: first charges the bytes
 * bumped since the last sync, then drops the rest of the old region
 * uncharged. With lo = b->ptr, hi = b->limit it only recomputes
 * combined_limit, which is needed after changing s directly (set_rate, skip,
 * redraw: call ap_bump_sync before those).
 */
AP_API void ap_bump_reset(ap_bump *b, ap_sampler *s, uintptr_t lo, uintptr_t hi);

/* Charge the bytes bumped since the last sync to s (then s is current). */
AP_API void ap_bump_sync(ap_bump *b, ap_sampler *s);

/*
 * Slow path, after the fast-path check failed for `size`: syncs s, decides
 * sampling for the allocation exactly as ap_sampler_should_sample (+ _pt
 * when passthrough is on) followed by ap_sampler_sample would, and returns
 * AP_BUMP_SAMPLE (info filled) and/or AP_BUMP_REFILL. The bytes are then
 * accounted for: place them with ap_bump_place, or serve them elsewhere
 * (a dedicated block for a large object) without further calls. If the
 * allocation then fails (no memory for a refill), simply drop it and the
 * sample: its trials are discarded for a reason independent of their
 * outcomes, which keeps the stream valid ([R4], point 4).
 */
AP_API unsigned ap_bump_slow(ap_bump *b, ap_sampler *s, size_t size, ap_sample_info *info);

/*
 * Bump `size` bytes accounted for by ap_bump_slow and recompute the combined
 * limit. Returns the old ptr, or 0 if size does not fit in [ptr, limit)
 * (then b is unchanged).
 */
AP_API uintptr_t ap_bump_place(ap_bump *b, const ap_sampler *s, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_SAMPLER_H */
