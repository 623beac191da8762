/*
 * diffstat.h: the statistics behind allocprof diff and the differential
 * flame graph: one side of a difference as a row of allocprof/estimate.h
 * (from a statistic of a heap view, heapview.h), the per-site test of
 * allocprof/difftest.h, and the site-by-site join of one or several BASE
 * and NEW views with Benjamini-Hochberg q-values across the sites.
 */
#ifndef ALLOCPROF_CLI_DIFFSTAT_H
#define ALLOCPROF_CLI_DIFFSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/difftest.h"
#include "heapview.h"

/* NEW - BASE of one site: change, interval, p, q, significant, method. */
typedef ap_diff_result vu_diff;

/*
 * The row of a statistic st of view v in the view's bytes (requested or
 * usable). st NULL or without samples is a side with no sample: its rate
 * is the view's (0 when the view mixes rates) and rate_max the coarsest
 * rate of the view, whose zero-sample bound it then takes.
 */
void vu_row_of(const hv_view *v, const hv_stat *st, ap_row *out);

/*
 * NEW - BASE of one site (b in view vb, n in view vn; either may be NULL
 * or have no samples) by ap_diff_test at level: q = p and significant =
 * (p <= 1 - level), the per-site answer (the flame graph's). 0 or
 * AP_EINVAL.
 */
int vu_diff_stats(const hv_view *vb, const hv_stat *b, const hv_view *vn,
		  const hv_stat *n, double level, vu_diff *out);

/* One site of the joined views. */
typedef struct vu_row {
	const char *name;
	const hv_site *site;  /* a representative (NEW's first run if any) */
	/* Per side, over its runs: the sums of the site's statistics (a run
	 * without the site adds nothing) and how many runs had it. */
	hv_stat base, nw;
	size_t base_present, new_present;
	vu_diff d; /* lo, hi NaN when no interval can be given */
} vu_row;

/* The sites of the BASE and NEW views matched by name, and their totals. */
typedef struct vu_join {
	const hv_view *const *vb, *const *vn;
	size_t nb, nn;  /* runs per side */
	double level, fdr;
	bool delta;     /* vu_join_delta */
	vu_row *rows;   /* by the size of the change, largest first */
	size_t nrows;
	vu_row total;   /* the change of the totals (outside the q family) */
} vu_join;

/*
 * Join the sites of nb BASE views and nn NEW views (runs) by display name
 * and test each site: one run per side by ap_diff_test, several by
 * ap_diff_test_runs (Welch; the change is that of the per-run means).
 * Then q-values across the sites by Benjamini-Hochberg, significant =
 * q <= fdr. The total is tested on its own. 0, or -1 when out of memory.
 * Free with vu_join_free.
 */
int vu_join_views(const hv_view *const *vb, size_t nb,
		  const hv_view *const *vn, size_t nn, double level,
		  double fdr, vu_join *out);
void vu_join_free(vu_join *j);

/*
 * The join of a delta view vd (NEW - BASE of two dumps of one process,
 * hv_profile_subtract; alloc view): each site's change is its delta
 * estimate with the delta row's own interval (only what was allocated in
 * between), p = 0 when a sample fell in between (something certainly was
 * allocated), else 1; q-values as for vu_join_views. *vd_slot must
 * outlive the join (it holds vd for vb and vn). 0 or -1 out of memory.
 */
int vu_join_delta(const hv_view *const *vd_slot, double level, double fdr,
		  vu_join *out);

/* A side's display statistic: the sums over its m runs divided by m (the
 * mean run; intervals of the mean run's sampling noise). */
void vu_side_mean(const hv_stat *sum, size_t m, double level, hv_stat *out);

#endif
