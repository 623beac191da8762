/*
 * timeview.h: the runtime's time extensions (allocprof/timeline.h) read
 * back as profiles and per-site tables, for `report --peak` and
 * `report --lifetimes` (docs/TIME.md).
 *
 * Extension sites are stacks of Location addresses; they are turned into
 * samples of the profile they came with (Locations found by address, or
 * added in the mapping that holds the address), so symbolizing, frame
 * skipping and naming are exactly the report's.
 */
#ifndef ALLOCPROF_CLI_TIMEVIEW_H
#define ALLOCPROF_CLI_TIMEVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/estimate.h"
#include "allocprof/lifetime.h"
#include "allocprof/profile.h"
#include "allocprof/timeline.h"
#include "heapview.h"

/*
 * Location ids for every stack of an extension: found by address among
 * p's Locations, or added in the mapping holding the address. (*out)[k]
 * are stack k's ids; free (*out)[0] then *out. 0 or AP_ENOMEM.
 */
int tv_stack_locations(ap_profile *p, const ap_tl_stack *st, size_t n,
		       uint64_t ***out);
/*
 * Append to p (a heap profile) a sample of stack k (ids from
 * tv_stack_locations) with the alloc and inuse sums at rate, labelled
 * with mark (> 0) so it can be told from p's own samples.
 */
int tv_add_marked(ap_profile *p, uint64_t *const *ids, const ap_tl_stack *st,
		  uint32_t k, uint64_t rate, const ap_heap_sums *alloc,
		  const ap_heap_sums *inuse, int64_t mark);

/* What the "peak" extension says beside its sites. */
typedef struct tv_peak_info {
	uint64_t t_ns;       /* the snapshot's time since the profile's start */
	uint64_t candidates; /* m: sampled events up to the snapshot, the
				values the maximum was chosen among */
	double max_space;    /* the running maximum of the in-use estimate */
	ap_heap_sums total;  /* the in-use total at the snapshot */
	double period;
} tv_peak_info;

/*
 * The profile of the heap at the peak: the profile at paths[0] (exactly
 * one) with its samples replaced by the "peak" extension's sites, each
 * carrying its in-use sums (the alloc view is empty), symbolized when
 * symbolize. *out is freed with tv_profile_free. AP_ENOTFOUND (err says
 * the profile has no peak: run with timeline= or peak=1), AP_ECORRUPT,
 * AP_EIO, AP_EINVAL (several profiles).
 */
int tv_peak_profile(const char *const *paths, size_t n, bool symbolize,
		    ap_profile **out, tv_peak_info *info, char *err, size_t errlen);
void tv_profile_free(ap_profile *p);

/*
 * The interval of the true peak, protected against choosing the maximum
 * of noisy estimates (docs/TIME.md, "Peak"): the snapshot's estimate E
 * with standard error s; lower bound E - z(1 - a/(2m)) s (Bonferroni
 * over the m values the estimate took), upper bound
 * max(E, running maximum) + z(1 - a/2) s, a = 1 - level.
 */
void tv_peak_interval(const tv_peak_info *info, double level, ap_interval *out);

/* One named group of lifetimes (a function, a line or a stack). */
typedef struct tv_life_row {
	const char *name, *function, *file;
	int64_t line;
	ap_life_summary km;        /* freed and live (censored) */
	ap_life_summary freed_only; /* the naive view: freed blocks only */
	ap_interval short_rate;    /* bytes/s of blocks freed within the threshold */
	uint64_t freed_samples, live_samples;
} tv_life_row;

typedef struct tv_lifetimes tv_lifetimes;

/*
 * Per group of o->by (function, line or stack; o's filters and frame
 * rules apply), the weighted Kaplan-Meier quartiles of the lifetimes in
 * the "lifetimes" extension of paths[0] (exactly one profile), and the
 * short-lived bytes per second (lifetime <= short_ns). Rows are sorted by
 * short-lived bytes per second, largest first. Errors as tv_peak_profile.
 */
int tv_lifetimes_open(const char *const *paths, size_t n, const hv_options *o,
		      double short_ns, tv_lifetimes **out, char *err, size_t errlen);
size_t tv_lifetimes_count(const tv_lifetimes *t);
const tv_life_row *tv_lifetimes_row(const tv_lifetimes *t, size_t i);
/* The dump's time since the profile's start, in seconds. */
double tv_lifetimes_seconds(const tv_lifetimes *t);
void tv_lifetimes_free(tv_lifetimes *t);

#endif
