/*
 * allocprof/hist.h: log-linear histograms of uint64 values with a bounded
 * relative error, after Tony Finch's hg64 proposal for BIND ([R5],
 * https://github.com/fanf2/hg64).
 *
 * A value v is counted in the bucket of its sigbits+1 most significant bits:
 * every bucket [lo, hi] has (hi - lo) / lo < 2^-sigbits, and values below
 * 2^(sigbits+1) get a bucket each (exact). sigbits is 1..15 (1: 50%, 5: ~3%,
 * 7: ~0.8%, 10: ~0.1%). Next to the buckets every histogram keeps the exact
 * count, minimum, maximum, 128-bit sum and 128-bit sum of squares (the
 * latter saturates, with a flag; then the standard deviation falls back to
 * an estimate from the buckets, see HISTOGRAMS.md).
 *
 * Three objects:
 *   ap_hist           the live histogram. ap_hist_add* may be called from any
 *                     number of threads at once, without locks: ap_hist_add
 *                     records into a per-thread recorder of the histogram
 *                     that it binds to the calling thread on first use (and
 *                     releases at thread exit, counts kept), so it costs
 *                     about what a recorder does and does not slow down as
 *                     threads are added; counter arrays are allocated per
 *                     exponent on first use and installed with
 *                     compare-and-swap.
 *   ap_hist_recorder  a per-thread shard of an ap_hist. Its record path has no
 *                     atomic read-modify-write (one writer: load + store), so
 *                     it costs about as much as a plain array increment;
 *                     snapshots of the parent merge every shard.
 *   ap_hist_snap      an immutable snapshot: every query works on one.
 *
 * All three are opaque. A program whose per-thread record cost matters can
 * opt in to allocprof/hist_inline.h, which compiles the recorder's common
 * case into the caller at the price of depending on an unstable layout.
 *
 * Errors follow allocprof/common.h: 0 or a negative AP_E* code. Memory comes
 * from the ap_allocator given at creation (NULL = libc); snapshots and encoded
 * buffers use the allocator passed where they are made.
 */
#ifndef ALLOCPROF_HIST_H
#define ALLOCPROF_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AP_HIST_SIGBITS_MIN 1
#define AP_HIST_SIGBITS_MAX 15

typedef struct ap_hist ap_hist;
typedef struct ap_hist_recorder ap_hist_recorder;
typedef struct ap_hist_snap ap_hist_snap;

/* ---- Bucketing: pure functions, no allocation ---------------------------- */

/*
 * The smallest sigbits whose worst-case relative bucket width 2^-sigbits is
 * at most 10^-digits (digits may be fractional: 2 -> 7, 1 -> 4, 3 -> 10).
 * 0 if digits is NaN, <= 0 or needs more than 15 sigbits (digits > ~4.5).
 */
AP_API unsigned ap_hist_sigbits_for_digits(double digits);

/* Number of keys (buckets) at this precision: (65 - sigbits) << sigbits. */
AP_API uint32_t ap_hist_key_count(unsigned sigbits);

/* Bucket key of v (sigbits must be 1..15; no checks on this hot helper). */
AP_API uint32_t ap_hist_value_to_key(unsigned sigbits, uint64_t v);

/* Inclusive bounds [*lo, *hi] of bucket key. AP_EINVAL for a bad sigbits or key. */
AP_API int ap_hist_key_bounds(unsigned sigbits, uint32_t key, uint64_t *lo,
			      uint64_t *hi);

/* ---- The live histogram -------------------------------------------------- */

/* Create an empty histogram. AP_EINVAL: sigbits outside 1..15. */
AP_API int ap_hist_create(ap_hist **out, unsigned sigbits,
			  const ap_allocator *alloc);
/* Free h, its counters and all its recorders (no thread may still use them). */
AP_API void ap_hist_destroy(ap_hist *h);
AP_API unsigned ap_hist_sigbits(const ap_hist *h);

/*
 * Record v once / n times. Thread-safe; no lock on the record path (a
 * thread's first record into h takes a process-wide lock once to bind
 * its recorder; memory: one recorder, about 1.3 KiB plus counter arrays,
 * per thread recording into h at the same time). AP_ENOMEM when the counter
 * array for v's exponent could not be allocated: v is then not recorded (the
 * number of such losses is kept, ap_hist_snap_dropped). The caller keeps the
 * total count below 2^64 (the snapshot reports AP_ERANGE otherwise).
 */
AP_API int ap_hist_add(ap_hist *h, uint64_t v);
AP_API int ap_hist_add_n(ap_hist *h, uint64_t v, uint64_t n);
/*
 * Record v with a real weight w >= 0 (Horvitz-Thompson 1/pi weights): the
 * integer part of w is added to v's bucket and the fraction to a 32.32
 * fixed-point carry; each time the carry passes a whole unit, v's bucket gets
 * one more. The total count stays within 1 of the total weight (plus 2^-32
 * of rounding per call); each call's bucket error is below 1. The sum grows
 * by v times the count actually added.
 * AP_EINVAL for NaN, negative or w >= 2^63.
 */
AP_API int ap_hist_add_weight(ap_hist *h, uint64_t v, double w);

/* Bytes of memory held by h: the object, counter arrays and recorders. */
AP_API size_t ap_hist_memory(const ap_hist *h);

/*
 * Zero every counter of h and of its recorders. Values recorded concurrently
 * with a reset may be partly kept (each counter is reset atomically, not all
 * at one instant).
 */
AP_API void ap_hist_reset(ap_hist *h);

/* ---- Per-thread recorders ------------------------------------------------ */

/*
 * Get a recorder of h for the calling thread: a released one is reused, else
 * a new one is made. Only one thread may record into a recorder at a time;
 * any thread may snapshot h meanwhile. Recorders belong to h (freed by
 * ap_hist_destroy). AP_ENOMEM.
 */
AP_API int ap_hist_recorder_get(ap_hist *h, ap_hist_recorder **out);
/* Give the recorder back (thread exit): its counts stay in h. */
AP_API void ap_hist_recorder_release(ap_hist_recorder *r);
/* As ap_hist_add / _add_n / _add_weight, for the recorder's owner thread. */
AP_API int ap_hist_recorder_add(ap_hist_recorder *r, uint64_t v);
AP_API int ap_hist_recorder_add_n(ap_hist_recorder *r, uint64_t v, uint64_t n);
AP_API int ap_hist_recorder_add_weight(ap_hist_recorder *r, uint64_t v,
				       double w);
/*
 * Record v[0..n) once each, with the running sums, min and max in registers
 * for the batch (the fewest instructions per value; a snapshot taken
 * meanwhile sees them lag the buckets). 0, or AP_ENOMEM if any value was
 * dropped.
 */
AP_API int ap_hist_recorder_add_many(ap_hist_recorder *r, const uint64_t *v,
				     size_t n);

/* ---- Snapshots and queries ----------------------------------------------- */

/*
 * An immutable copy of h merged with all its recorders, allocated with alloc
 * (NULL = libc). Concurrent recording is allowed; each counter is read
 * atomically but not all at one instant. AP_ENOMEM; AP_ERANGE if the total
 * count exceeds 2^64 - 1.
 */
AP_API int ap_hist_snapshot(const ap_hist *h, const ap_allocator *alloc,
			    ap_hist_snap **out);
AP_API void ap_hist_snap_destroy(ap_hist_snap *s);

AP_API unsigned ap_hist_snap_sigbits(const ap_hist_snap *s);
AP_API uint64_t ap_hist_snap_count(const ap_hist_snap *s);
/* Values lost to allocation failures while recording (never in count). */
AP_API uint64_t ap_hist_snap_dropped(const ap_hist_snap *s);
/* Exact minimum and maximum. AP_ENOTFOUND when the snapshot is empty. */
AP_API int ap_hist_snap_min(const ap_hist_snap *s, uint64_t *out);
AP_API int ap_hist_snap_max(const ap_hist_snap *s, uint64_t *out);
/* Exact 128-bit sum, as two halves. */
AP_API void ap_hist_snap_sum(const ap_hist_snap *s, uint64_t *hi, uint64_t *lo);
/* Exact 128-bit sum of squares; false if it saturated (then *hi = *lo = max). */
AP_API bool ap_hist_snap_sumsq(const ap_hist_snap *s, uint64_t *hi,
			       uint64_t *lo);
/* Mean (exact to double rounding). NaN when empty. */
AP_API double ap_hist_snap_mean(const ap_hist_snap *s);
/*
 * Population standard deviation sqrt(sum (x - mean)^2 / n), from the exact
 * integer moments (HISTOGRAMS.md); if the sum of squares saturated, an
 * estimate from the buckets. NaN when empty.
 */
AP_API double ap_hist_snap_stddev(const ap_hist_snap *s);

/*
 * The value of 0-based rank r (r = 0 is the minimum, r = count-1 the maximum),
 * interpolated inside its bucket and clamped to [min, max]: relative error
 * below 2^-sigbits. AP_ENOTFOUND when empty, AP_ERANGE when r >= count.
 */
AP_API int ap_hist_snap_value_at_rank(const ap_hist_snap *s, uint64_t r,
				      uint64_t *out);
/*
 * Nearest-rank quantile: the value of rank ceil(q * count) - 1 (q = 0 gives
 * the minimum). AP_EINVAL if q is NaN or outside [0, 1]; AP_ENOTFOUND empty.
 */
AP_API int ap_hist_snap_value_at_quantile(const ap_hist_snap *s, double q,
					  uint64_t *out);
/* n quantiles (any order) in one pass over the buckets; errors as above. */
AP_API int ap_hist_snap_values_at_quantiles(const ap_hist_snap *s,
					    const double *q, size_t n,
					    uint64_t *out);
/*
 * Counts of recorded values strictly below / strictly above v. The return is
 * the estimate (uniform spread inside the one bucket v falls in); *at_least
 * and *at_most (each may be NULL) bracket the truth and are equal whenever v
 * is a bucket edge or outside [min, max]. 0 for an empty snapshot.
 */
AP_API double ap_hist_snap_count_below(const ap_hist_snap *s, uint64_t v,
				       uint64_t *at_least, uint64_t *at_most);
AP_API double ap_hist_snap_count_above(const ap_hist_snap *s, uint64_t v,
				       uint64_t *at_least, uint64_t *at_most);
/* Rank of v: the estimated number of values < v (= count_below). */
AP_API double ap_hist_snap_rank_of_value(const ap_hist_snap *s, uint64_t v);
/* Quantile of v: estimated fraction of values <= v. NaN when empty. */
AP_API double ap_hist_snap_quantile_of_value(const ap_hist_snap *s, uint64_t v);

/* Iteration over non-empty buckets, in increasing order of value. */
typedef struct ap_hist_bucket {
	uint64_t lo, hi; /* inclusive bounds */
	uint64_t count;  /* > 0 */
	uint32_t key;
} ap_hist_bucket;
AP_API size_t ap_hist_snap_bucket_count(const ap_hist_snap *s);
/* Bucket i (0 <= i < ap_hist_snap_bucket_count). AP_ERANGE past the end. */
AP_API int ap_hist_snap_bucket(const ap_hist_snap *s, size_t i,
			       ap_hist_bucket *out);

/* ---- Merging ------------------------------------------------------------- */

/*
 * Add src to dst (thread-safe like ap_hist_add). Equal or finer src
 * precision: exact. Coarser src: each src bucket, clipped to [src min, src
 * max], is split over the dst buckets it overlaps in proportion to the
 * overlap (integer shares that sum to the src count exactly). count, sum,
 * min and max stay exact. AP_ENOMEM (dst may then hold part of src).
 */
AP_API int ap_hist_merge(ap_hist *dst, const ap_hist_snap *src);
/* A new snapshot of s at another precision (merge into a fresh histogram). */
AP_API int ap_hist_snap_rebucket(const ap_hist_snap *s, unsigned sigbits,
				 const ap_allocator *alloc, ap_hist_snap **out);
/* True when a and b hold the same buckets, count, sum, sumsq, min and max. */
AP_API bool ap_hist_snap_equal(const ap_hist_snap *a, const ap_hist_snap *b);

/* ---- Serialization ------------------------------------------------------- */

/*
 * Encoded buffers (*out, *len) come from alloc (NULL = libc); text forms are
 * NUL-terminated (not counted in *len). Release with ap_hist_buffer_free.
 */
AP_API void ap_hist_buffer_free(const ap_allocator *alloc, void *p, size_t len);

/* Compact binary form, versioned (HISTOGRAMS.md). */
AP_API int ap_hist_encode(const ap_hist_snap *s, const ap_allocator *alloc,
			  unsigned char **out, size_t *len);
/*
 * Decode the binary form from (buf, len) into a new snapshot. AP_ECORRUPT for
 * malformed, truncated or inconsistent input; AP_EVERSION for a newer
 * version. Never reads outside the buffer.
 */
AP_API int ap_hist_decode(const void *buf, size_t len, const ap_allocator *alloc,
			  ap_hist_snap **out);
/* JSON text form: {"format":"allocprof-hist","version":1,...}. */
AP_API int ap_hist_encode_json(const ap_hist_snap *s, const ap_allocator *alloc,
			       char **out, size_t *len);
AP_API int ap_hist_decode_json(const void *buf, size_t len,
			       const ap_allocator *alloc, ap_hist_snap **out);

/* ---- Export -------------------------------------------------------------- */

/*
 * Prometheus text exposition (0.0.4) of a classic histogram named name (must
 * match [a-zA-Z_:][a-zA-Z0-9_:]*), with an optional HELP text. bounds NULL:
 * one le per non-empty bucket, le = the bucket's inclusive maximum (exact).
 * Otherwise the n strictly increasing bounds given, each an inclusive upper
 * bound; counts of the one bucket a bound cuts are split proportionally.
 * Always +Inf, _sum and _count. AP_EINVAL for a bad name or bounds.
 */
AP_API int ap_hist_export_prometheus(const ap_hist_snap *s, const char *name,
				     const char *help, const uint64_t *bounds,
				     size_t n, const ap_allocator *alloc,
				     char **out, size_t *len);

/*
 * Exponential (base 2^(2^-scale)) buckets, scale -4..8, by proportional split
 * of each log-linear bucket over the integers it holds. Indices follow
 * OpenTelemetry: bucket i holds the values x with base^i < x <= base^(i+1);
 * the Prometheus native-histogram index of the same bucket is i + 1 (schema =
 * scale). Zero is counted in zero_count (threshold 0). counts[] is dense from
 * offset, first and last entries non-zero (ncounts = 0 if only zeros).
 */
typedef struct ap_hist_exp {
	int32_t scale;
	int32_t offset;
	uint64_t zero_count;
	uint64_t *counts; /* from the allocator passed to the export */
	size_t ncounts;
	size_t cap_; /* private: allocated length of counts */
} ap_hist_exp;
AP_API int ap_hist_export_exp(const ap_hist_snap *s, int scale,
			      const ap_allocator *alloc, ap_hist_exp *out);
AP_API void ap_hist_exp_free(const ap_allocator *alloc, ap_hist_exp *e);
/*
 * Prometheus native histogram at schema -4..8, as the fields of its protobuf
 * Histogram message in JSON: {"schema","zero_threshold","zero_count",
 * "count","sum","positive_spans":[{"offset","length"}],"positive_deltas"}.
 * Spans cover runs of non-empty buckets; deltas are count differences
 * (int64, wrapping as two's complement as in the protobuf) across spans.
 */
AP_API int ap_hist_export_prometheus_native_json(const ap_hist_snap *s,
						 int schema,
						 const ap_allocator *alloc,
						 char **out, size_t *len);
/* OpenTelemetry ExponentialHistogramDataPoint in OTLP/JSON (one object). */
AP_API int ap_hist_export_otel_json(const ap_hist_snap *s, int scale,
				    const ap_allocator *alloc, char **out,
				    size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_HIST_H */
