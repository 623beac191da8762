/*
 * tlring.h: the heap over time inside the runtime (docs/TIME.md): the
 * timeline ring (`timeline=`), the snapshot of the per-site in-use
 * counters at the in-use peak, and the per-site lifetimes, each written
 * with every profile as an extension (allocprof/timeline.h).
 *
 * Everything here runs in the dumper thread (ticks, peak snapshots) or
 * while a profile is built (dump.c); the sampling path only raises a flag
 * (series_wants_wake) and the free of a sampled block adds one lifetime
 * to its site's bins (lifebins.c, under the table lock). Memory comes from
 * the runtime's arena and is bounded: SERIES_POINTS points of at most
 * SERIES_SITES sites each; the peak holds one entry per (stack, rate).
 */
#ifndef AP_PRELOAD_TLRING_H
#define AP_PRELOAD_TLRING_H

#include <stdbool.h>
#include <stdint.h>

#include "allocprof/profile.h"
#include "allocprof/timeline.h"
#include "arena.h"
#include "stack_table.h"

/* Points the ring holds; when full every other point is dropped and the
 * cadence doubles. */
#define SERIES_POINTS 256
/* Sites listed per point (largest live bytes); the rest is "other". */
#define SERIES_SITES 16
/* A new peak snapshot once the in-use total grew by this fraction over
 * the last one (or after peak_gap at a new maximum). */
#define SERIES_PEAK_GROWTH (1.0 / 64)

/* At initialisation, from the options: timeline cadence (0 = off), peak
 * snapshots on (and their gap), lifetimes on; times are taken from
 * start_realtime_ns, the profile's start. */
void series_configure(stack_table *t, arena *a, uint64_t period,
		      uint64_t cadence_ns, bool peak,
		      uint64_t peak_gap_ns, uint64_t start_realtime_ns,
		      bool lifetimes);
/* Does the dumper thread have work here (ticks or peak snapshots)? */
bool series_needs_thread(void);
/* From the sampling path (after a recorded sample): true when the dumper
 * thread should be woken for a peak snapshot. */
bool series_wants_wake(const table_totals *after);
/* Can series_wants_wake say yes (peak snapshots on)? */
bool series_watches_peak(void);
/* The next monotonic time the dumper thread must wake for (0 = none). */
uint64_t series_deadline(void);
/* In the dumper thread after each wake-up: take due ticks and snapshots. */
void series_poll(uint64_t now_ns);
/* While a profile of table t is built: add the "timeline", "peak" and
 * "lifetimes" extensions that are on (nothing for a table other than the
 * configured one). Temporary memory from a. */
int series_add_extensions(ap_profile *p, stack_table *t, arena *a);
/* The "timeline" extension's data (for HTTP), in a's memory: 0 with
 * *data NULL when the timeline is off. */
int series_timeline_blob(arena *a, unsigned char **data, size_t *len);
/*
 * The stack table of an extension (allocprof/timeline.h): each distinct
 * stack of what is written, numbered by first use; idx maps a stack's id
 * (1-based) to its index + 1. Capacities are given up front.
 */
typedef struct stacks_out {
	ap_tl_stack *v;
	uint64_t *addrs;
	size_t n, naddrs;
	uint32_t *idx;
	size_t idcap;
} stacks_out;

int series_stacks_init(stacks_out *so, stack_table *t, arena *a, size_t max_stacks,
		       size_t max_addrs);
/* Index of stk in the table, adding it (its pcs as Location addresses,
 * return address - 1). */
uint32_t series_stack_ref(stacks_out *so, const stack *stk);
void series_stacks_free(stacks_out *so, arena *a);

/* In a fork child: re-initialise the lock; the child's series starts at
 * the fork (start_realtime_ns), empty. */
void series_atfork_child(uint64_t start_realtime_ns);

#endif
