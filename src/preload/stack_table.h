/*
 * stack_table.h: interned stacks and the additive counters of each
 * (stack, size class, rate) "site" -- the data a heap profile is made of.
 *
 * Size classes are log-linear (ap_hist keys at SITE_SIZE_SIGBITS): sizes
 * below 2^(SITE_SIZE_SIGBITS+1) each have their own class, larger ones share
 * a class with sizes less than 2^-SITE_SIZE_SIGBITS apart. So a stack that
 * allocates many distinct sizes (strings, buffers) has a bounded number of
 * sites (about 2^SITE_SIZE_SIGBITS per power of two it spans) instead of one
 * per distinct size: the table, every dump and every lookup stay small in a
 * long-running program. The counters stay exact sums over the class's
 * samples, each with its own size and weight, so no estimate changes; only
 * the size a site reports is the class's HT-weighted average size
 * (site_snap.size), which is the exact size when the class saw one size.
 *
 * Every sampled allocation adds its Horvitz-Thompson contributions to its
 * site's alloc and inuse counters; freeing it subtracts exactly the same
 * inuse contributions again (recomputed from the weight kept in its
 * sample_rec). Counters are sums, so they merge across threads, processes
 * and machines by addition (STATISTICS.md section 2):
 *   objects  += w              space += w * size        (w = 1/pi)
 *   samples  += 1              u     += size - offset   ([R4]'s NB estimator)
 *   objects_var += (1-pi)/pi^2 = w^2 - w
 *   space_var   += (w^2 - w) * size^2                   (HT variance estimate)
 *   usable   += w * malloc_usable_size
 *   exact += [pi = 1]   objects_var2 += (w^2 - w)^2   space_var2 += ((w^2 - w) size^2)^2
 * (the last three feed the effective-sample-size rule of estimate.h's
 * ap_row_* intervals; ap_sample_terms_of gives all the terms).
 *
 * One mutex guards the table, and the runtime's sampled set with it
 * (sampled_set.h): only sampled allocations and frees of sampled pointers
 * come here, and the unwinding they already did costs far more.
 * Tables, stacks and sites come from the runtime's arena, never from malloc.
 */
#ifndef AP_PRELOAD_STACK_TABLE_H
#define AP_PRELOAD_STACK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/hist.h"
#include "allocprof/profile.h"
#include "allocprof/sampler.h"
#include "arena.h"
#include "rt_lock.h"
#include "sampled_set.h"

typedef struct stack {
	struct stack *next; /* hash chain */
	uint64_t hash;
	uint32_t id;        /* 1-based, in interning order */
	uint32_t depth;
	uintptr_t pcs[];    /* return addresses, innermost first */
} stack;

/* A site's additive sums per view: the library's heap sums, which
 * ap_heap_sums_encode writes as the profile's values. */
typedef ap_heap_sums site_counts;

typedef struct site {
	struct site *next;     /* hash chain */
	struct site *all_next; /* every site, newest first, for dumps */
	const stack *stk;
	uint64_t size_class;   /* ap_hist_value_to_key(SITE_SIZE_SIGBITS, size) */
	uint64_t rate;
	site_counts alloc, inuse;
	struct life_bins *life; /* lifetimes of freed samples (lifebins.h) */
} site;

/* A consistent copy of one site's numbers, for building a profile. */
typedef struct site_snap {
	const stack *stk; /* stacks are immutable once interned */
	uint64_t size;    /* HT-weighted average requested size of the class */
	uint64_t rate;
	site_counts alloc, inuse;
} site_snap;

typedef struct table_totals {
	double alloc_space, alloc_objects, inuse_space, inuse_objects;
	double peak_inuse_space; /* highest inuse_space seen */
	uint64_t samples, frees;
	size_t nstacks, nsites;
} table_totals;

/* Records a batch holds (stack_table.pend_*). */
#define TABLE_PEND 32

typedef struct stack_table {
	/* What every sampled allocation or free reads or writes (the lock,
	 * the batch counts, the hash's buckets) on the first 64 bytes, and
	 * the totals on the next: between two samples the program evicts
	 * them, and each line is a miss. */
	rt_lock lock;
	uint32_t npend_size, npend_free; /* records batched (below) */
	bool life_on;           /* per-site lifetime bins (lifebins.h) */
	uint64_t gen;    /* this table's number in the process (1, 2, ...) */
	site **sites;    /* hash buckets */
	size_t site_cap;
	stack **stacks;  /* hash buckets */
	size_t stack_cap;
	arena *a;
	table_totals tot;
	size_t nstacks, nsites;
	site *all_sites;
	ap_hist *hist_size;     /* requested sizes, HT-weighted */
	ap_hist *hist_lifetime; /* ns from allocation to free, HT-weighted */
	/* The table's recorders of the two: written under lock only, so one
	 * writer at a time (snapshots of the histograms include them). */
	ap_hist_recorder *rec_size, *rec_lifetime;
	/* Records not yet in the histograms and lifetime bins, applied
	 * TABLE_PEND at a time (table_flush_locked): a sample between two
	 * others finds the recorders' and bins' cache lines (and their code)
	 * evicted by the program, and one batch pays that once. Written under
	 * the lock; every reader of those flushes first. */
	struct table_pend_size {
		uint64_t size;
		double w;
	} pend_size[TABLE_PEND];
	struct table_pend_free {
		struct site *s; /* NULL: no lifetime bins wanted */
		uint64_t life_ns, size;
		double w;
	} pend_free[TABLE_PEND];
} stack_table;

/* The layout the comment above promises (the runtime 64-aligns its table). */
_Static_assert(offsetof(stack_table, tot) == 64,
	       "the per-sample fields fill the first line, the totals start the second");
_Static_assert(offsetof(stack_table, tot) + offsetof(table_totals, frees) +
		       sizeof(uint64_t) <= 128,
	       "the totals a sample updates share the second line");

/* Histogram precision: 2^-5 ~ 3% relative bucket width. */
#define TABLE_HIST_SIGBITS 5
/* Site size classes: exact below 32 bytes, then 16 classes per power of two
 * (sizes in one class differ by less than 6.25%). */
#define SITE_SIZE_SIGBITS 4

/* 0, or AP_ENOMEM. The table allocates from a. */
int table_init(stack_table *t, arena *a);

/*
 * Record one sampled allocation of info->size bytes with stack pcs[0..depth)
 * drawn at rate `rate`; usable = malloc_usable_size of the block. Fills *rec
 * (site, weight, size, u, usable; t_ns is the caller's) for the sampled set, and
 * *after (may be NULL) with the totals right after this sample.
 * 0 or AP_ENOMEM (then nothing was recorded).
 */
int table_record_alloc(stack_table *t, const uintptr_t *pcs, int depth,
		       uint64_t rate, const ap_sample_info *info,
		       uint64_t usable, sample_rec *rec, table_totals *after);

/*
 * Take back a recorded sample the runtime could not keep track of (its
 * free would never be seen): out of both views, alloc and in-use, so the
 * two stay consistent (docs/STATISTICS.md section 7). Only the lock-free
 * size histogram keeps it.
 */
void table_record_drop(stack_table *t, const sample_rec *rec);

/* Take a freed sampled allocation out of the inuse view (now_ns: free time). */
void table_record_free(stack_table *t, const sample_rec *rec, uint64_t now_ns);

/* The three above, for a caller that holds the table's lock (table_lock):
 * the runtime's sampled set shares it (sampled_set.h), so a sampled
 * allocation or free takes one lock for its record and its entry. */
int table_record_alloc_locked(stack_table *t, const uintptr_t *pcs, int depth,
			      uint64_t rate, const ap_sample_info *info,
			      uint64_t usable, sample_rec *rec, table_totals *after);
void table_record_drop_locked(stack_table *t, const sample_rec *rec);
void table_record_free_locked(stack_table *t, const sample_rec *rec, uint64_t now_ns);

/*
 * Copy every site into an array from arena a, the caller's (*out, freed
 * with arena_free(a, ...); a block goes back only to the arena it came
 * from), and the totals into *tot (may be NULL). 0 or AP_ENOMEM.
 */
int table_snapshot(stack_table *t, arena *a, site_snap **out, size_t *n,
		   table_totals *tot);
/* Current totals only (cheap). */
void table_totals_get(stack_table *t, table_totals *tot);

/*
 * Forget every allocation recorded so far in the alloc view (its site
 * counters, the alloc totals and the allocation-size histogram; in-use
 * and the lifetime histogram stay): a fork
 * child's profile then holds only what the child allocated, so the merge
 * of parent and children counts each allocation once. Called in the child
 * only, single-threaded.
 */
void table_reset_alloc(stack_table *t);

/*
 * Apply the pending records to the size and lifetime histograms and the
 * sites' lifetime bins: before reading any of them. _locked: the caller
 * holds the table's lock (table_lock).
 */
void table_flush(stack_table *t);
void table_flush_locked(stack_table *t);

/* Fork handlers; also for readers that walk the sites themselves. */
void table_lock(stack_table *t);
void table_unlock(stack_table *t);

#endif
