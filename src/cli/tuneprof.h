/*
 * tuneprof.h: what `allocprof tune` learns from training profiles and the
 * per-site model behind --advise (docs/STATISTICS.md section 10).
 *
 * A training profile (rate 1 or sampled: its values are already unbiased
 * estimates) gives per size class (the runtime's site classes: 16 per
 * doubling, ap_hist keys at TP_SIGBITS) the allocations N_c, those live at
 * the dump L_c and the mean size Z_c; per allocation stack the same per
 * class, so that the variance of each stack's estimate under per-byte
 * sampling at any rate can be predicted. Sizes come from each line's
 * "bytes" label (allocprof profiles) or value / count.
 */
#ifndef ALLOCPROF_CLI_TUNEPROF_H
#define ALLOCPROF_CLI_TUNEPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/tune.h"

/* The runtime's site size classes (src/preload/stack_table.h). */
#define TP_SIGBITS 4

typedef struct tp_class {
	uint64_t lo, hi;   /* sizes of the class */
	double bytes;      /* allocated bytes */
	ap_tune_class c;   /* size = bytes / allocs, allocs, live */
} tp_class;

/* One (stack, class) cell. */
typedef struct tp_cell {
	size_t site, cls;
	double allocs, live;
} tp_cell;

typedef struct tp_site {
	const char *name;  /* first frame outside the allocator */
	double alloc_bytes, inuse_bytes;
} tp_site;

typedef struct tp_data {
	tp_class *cls;     /* by increasing size */
	size_t ncls;
	tp_cell *cells;
	size_t ncells;
	tp_site *sites;
	size_t nsites;
	double duration_s; /* of the profiled interval; 0 when unknown */
	double period;     /* the (first) profile's sampling rate */
	void *priv;
} tp_data;

/* Load and merge profiles (symbolized when `symbolize`, for site names).
 * 0, or an AP_E* code with a one-line reason in err. */
int tp_load(const char *const *paths, size_t n, bool symbolize, tp_data *out,
	    char *err, size_t errlen);
void tp_free(tp_data *d);

/* Per-byte variance at rate R of every site's estimate in one view
 * (inuse: live objects; else allocations): var[nsites]. */
void tp_site_variance(const tp_data *d, double rate, bool inuse, double *var);

/*
 * --advise: the largest rate R at which z sqrt(V_s(R)) <= precision T_s
 * for every site s with T_s >= share * total (T: the view's bytes), by
 * bisection on log R (V_s grows with R). *binding = the site that limits
 * (SIZE_MAX when none qualifies: then R = 2^52). Returns R (>= 1).
 */
double tp_advise_rate(const tp_data *d, bool inuse, double precision,
		      double z, double share, size_t *binding, size_t *checked);

#endif
