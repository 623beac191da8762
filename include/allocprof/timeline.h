/*
 * allocprof/timeline.h: the heap over time as the runtime records it, in
 * the profile's extensions (allocprof/profile.h, ap_profile_ext_next):
 *
 *   "timeline"  live bytes and objects per site at a fixed cadence (the
 *               runtime's `timeline=` option): a bounded series of points;
 *   "peak"      the per-site in-use counters at the highest in-use total
 *               the runtime saw: the same layout with one point;
 *   "lifetimes" per site, weighted log-scale histograms of the lifetimes
 *               of freed sampled blocks and of the ages of those still
 *               alive at the dump (censored).
 *
 * Sites are referenced through a stack table of Location addresses
 * (return address - 1, leaf first: the addresses of the profile's
 * Locations), so a reader can find or add the matching Locations and name
 * them as the profile's samples are named. Per-site values are the
 * profile's in-use sums (ap_heap_sums): the same Horvitz-Thompson
 * estimates and variances, so the intervals follow estimate.h's row rule.
 * Byte layouts: docs/FORMATS.md, "Time extensions". docs/TIME.md says how
 * the series is kept and how to read the peak and the lifetimes.
 *
 * Decoders validate everything (counts against the bytes left, stack
 * indices, finite values) and return one block freed by one call.
 */
#ifndef ALLOCPROF_TIMELINE_H
#define ALLOCPROF_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"
#include "allocprof/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AP_TIMELINE_EXT "timeline"
#define AP_PEAK_EXT "peak"
#define AP_LIFETIMES_EXT "lifetimes"
/* The layout version these functions write and read. */
#define AP_TIMELINE_VERSION 1
/* Deepest stack a decoder accepts. */
#define AP_TIMELINE_DEPTH_MAX 1024

/* One stack: Location addresses, leaf first. */
typedef struct ap_tl_stack {
	const uint64_t *addrs;
	size_t depth;
} ap_tl_stack;

/* One site in one point: the in-use sums of every sample of its stack
 * drawn at its rate (size classes summed). */
typedef struct ap_tl_site {
	uint32_t stack;     /* index into ap_timeline.stacks */
	uint64_t rate;      /* sampling rate R of these samples */
	ap_heap_sums inuse; /* live objects/bytes and their HT variances */
} ap_tl_site;

typedef struct ap_tl_point {
	uint64_t t_ns;      /* time since the profile's start */
	ap_heap_sums total; /* every site of the process */
	ap_heap_sums other; /* the sites not listed in sites[] */
	const ap_tl_site *sites; /* the largest sites, by live bytes */
	size_t nsites;
} ap_tl_point;

typedef struct ap_timeline {
	uint32_t version;
	uint64_t period;     /* the process's sampling rate R */
	uint64_t cadence_ns; /* spacing of the points now (doubles as the
				ring thins); 0 in a "peak" */
	uint64_t candidates; /* sampled allocations and frees up to the
				point(s): the in-use estimate changes only at
				these, so the peak was chosen among at most
				this many values (docs/TIME.md, "Peak") */
	double max_space;    /* the highest in-use total estimate the runtime
				saw (a "peak" snapshot may lag it by up to
				1/64: snapshots are taken as it grows) */
	const ap_tl_stack *stacks;
	size_t nstacks;
	const ap_tl_point *points; /* increasing t_ns */
	size_t npoints;
	/* private */
	const ap_allocator *alloc_;
	size_t size_;
} ap_timeline;

/*
 * Decode a "timeline" or "peak" extension's data. *out is one block,
 * freed with ap_timeline_free. AP_ECORRUPT (err gets a one-line reason,
 * err may be NULL) for malformed data, AP_EVERSION for another layout
 * version, AP_ENOMEM, AP_EINVAL for NULL pointers. alloc NULL = libc.
 */
AP_API int ap_timeline_decode(const void *data, size_t len,
			      const ap_allocator *alloc, ap_timeline **out,
			      char *err, size_t errlen);
AP_API void ap_timeline_free(ap_timeline *tl);
/*
 * Encode tl (version ignored: AP_TIMELINE_VERSION is written) into a
 * buffer from alloc (*out, *len; free with alloc->free(ctx, *out, *cap)).
 * AP_EINVAL for a site whose stack index is out of range, AP_ENOMEM.
 */
AP_API int ap_timeline_encode(const ap_timeline *tl, const ap_allocator *alloc,
			      unsigned char **out, size_t *len, size_t *cap);

/* A bin of lifetimes: n sampled blocks whose lifetime (or age) fell in
 * [t_lo, t_hi]; its representative value is the middle. */
typedef struct ap_lt_bin {
	uint64_t t_lo, t_hi;
	uint64_t n;       /* sampled blocks */
	double w, w2;     /* sums of HT weights 1/pi and of their squares */
	double bytes;     /* sum of w * size */
	double bytes_var; /* sum of (w^2 - w) * size^2 */
} ap_lt_bin;

typedef struct ap_lt_site {
	uint32_t stack; /* index into ap_lifetimes.stacks */
	uint64_t rate;
	const ap_lt_bin *freed; /* lifetimes of freed blocks, disjoint bins in
				   increasing order */
	size_t nfreed;
	const ap_lt_bin *live;  /* ages at the dump of live blocks (censored) */
	size_t nlive;
} ap_lt_site;

typedef struct ap_lifetimes {
	uint32_t version;
	uint64_t t_ns; /* the dump's time since the profile's start */
	const ap_tl_stack *stacks;
	size_t nstacks;
	const ap_lt_site *sites;
	size_t nsites;
	/* private */
	const ap_allocator *alloc_;
	size_t size_;
} ap_lifetimes;

/* As ap_timeline_decode, for a "lifetimes" extension. */
AP_API int ap_lifetimes_decode(const void *data, size_t len,
			       const ap_allocator *alloc, ap_lifetimes **out,
			       char *err, size_t errlen);
AP_API void ap_lifetimes_free(ap_lifetimes *lt);
AP_API int ap_lifetimes_encode(const ap_lifetimes *lt, const ap_allocator *alloc,
			       unsigned char **out, size_t *len, size_t *cap);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_TIMELINE_H */
