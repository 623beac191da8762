/*
 * allocprof/tune.h: the optimal per-size-class sampling design (issue 16,
 * docs/STATISTICS.md "Optimal per-class sampling").
 *
 * Per-byte sampling gives an allocation of Z bytes the inclusion
 * probability 1 - (1 - 1/R)^Z. Any other per-class probability p_c keeps
 * the Horvitz-Thompson estimates unbiased, so the probabilities can be
 * chosen to minimise a weighted sum of the variances users look at
 * (allocated bytes, in-use bytes, objects) for a budget of expected
 * samples and, optionally, of sampled live bytes:
 *
 *   minimise sum_c A_c (1 - p_c) / p_c
 *   subject to sum_c N_c p_c <= K,  sum_c L_c Z_c p_c <= M,
 *              p_min,c <= p_c <= p_max,c <= 1,
 *   A_c = w_alloc N_c Z_c^2 + w_inuse L_c Z_c^2 + w_obj N_c.
 *
 * The solution is p_c = clip(sqrt(A_c / (lambda N_c + mu L_c Z_c)),
 * p_min,c, p_max,c) with the multipliers found by nested bisection. The
 * runtime realises p_c as per-byte sampling at a class rate R_c
 * (ap_tune_class_rate), by thinning the successes of a sampler that runs
 * at a base rate R <= every R_c (ap_sampler_sample_at, sample tables);
 * the virtual-size realisation below (ap_tune_virtual_size) is the
 * alternative it was measured against (docs/STATISTICS.md section 10).
 * Pure functions, no global state.
 */
#ifndef ALLOCPROF_TUNE_H
#define ALLOCPROF_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One size class of the training profile. */
typedef struct ap_tune_class {
	double size;   /* Z_c, bytes (> 0) */
	double allocs; /* N_c, allocations over the profiled interval (>= 0) */
	double live;   /* L_c, of those live at the dump (0 <= L_c <= N_c) */
	double p_min;  /* floor on p_c, in [0, 1]; 0 = none (see ap_tune_floor) */
	double p_max;  /* ceiling on p_c, in [p_min, 1]; 0 = none (1). A sample
			  table's base rate R caps p_c at 1 - (1 - 1/R)^Z_c */
} ap_tune_class;

/* Weights of the three views in the objective (each >= 0, not all 0). */
typedef struct ap_tune_weights {
	double alloc, inuse, objects;
} ap_tune_weights;

/* The HT variances of the three views for given probabilities. */
typedef struct ap_tune_var {
	double alloc, inuse, objects;
	double samples;     /* expected samples sum N_c p_c */
	double live_bytes;  /* expected sampled live bytes sum L_c Z_c p_c */
} ap_tune_var;

/* A_c of the objective for one class. */
AP_API double ap_tune_coef(const ap_tune_class *c, const ap_tune_weights *w);

/*
 * Solve the problem above: p[i] for the n classes. budget = K (> 0);
 * memory = M, or 0 for no memory constraint. *lambda / *mu (may be NULL)
 * receive the multipliers (0 when the constraint is slack). Classes with
 * A_c = 0 get p_min,c; classes with N_c = 0 get 1 (they cost nothing).
 * AP_EINVAL for invalid input (NULL, n = 0, NaN, negative, live > allocs,
 * p_min outside [0, 1], all weights 0); AP_ERANGE when even the floors
 * exceed the budget or the memory (then p holds the floors).
 */
AP_API int ap_tune_solve(const ap_tune_class *cls, size_t n,
			 const ap_tune_weights *w, double budget,
			 double memory, double *p, double *lambda, double *mu);

/* Variances and costs of probabilities p (p[i] in (0, 1]; 0 gives inf). */
AP_API void ap_tune_variance(const ap_tune_class *cls, size_t n,
			     const double *p, ap_tune_var *out);

/* Per-byte probabilities at rate R (real R >= 1): 1 - (1 - 1/R)^Z_c. */
AP_API void ap_tune_perbyte(const ap_tune_class *cls, size_t n, double rate,
			    double *p);

/*
 * The per-byte rate R in [1, 2^52] whose expected sample count
 * sum N_c (1 - (1 - 1/R)^Z_c) equals budget (bisection on log R; 1 if
 * the budget covers every allocation). NaN for invalid input.
 */
AP_API double ap_tune_perbyte_rate(const ap_tune_class *cls, size_t n,
				   double budget);

/*
 * The floor that bounds the loss against per-byte sampling at rate R by
 * a factor f >= 1 on EVERY view and workload: the p whose odds
 * (1 - p)/p are f times the per-byte odds, p = pb / (pb + f (1 - pb))
 * (about pb / f for small pb, 1 when pb = 1). Then each variance term,
 * hence each view's variance on any workload, is at most f times its
 * per-byte value at R. NaN for invalid input.
 */
AP_API double ap_tune_floor(double size, double rate, double factor);

/*
 * Virtual size realising p at rate R: g = ln(1 - p) / ln(1 - 1/R), so
 * that 1 - (1 - 1/R)^g = p. +INFINITY for p = 1 (record exactly), 0 for
 * p = 0, NaN for invalid input.
 */
AP_API double ap_tune_virtual_size(double p, double rate);

/*
 * Fixed-point charge: the sampler counts trials in units of 2^-shift
 * byte (each unit a trial with probability 1 - (1 - 1/R)^(2^-shift)), so
 * a class is charged the integer *units = round(g 2^shift) (at least 1)
 * and its realised probability, which the HT weight must use, is
 * *p_real = 1 - (1 - 1/R)^(units 2^-shift). shift in [0, 16]. AP_EINVAL
 * for invalid input, AP_ERANGE if units would exceed 2^62 (record the
 * class exactly: its p is then 1 within exp(-2^46 / R)). The sampler then
 * runs at rate R 2^shift, so R <= 2^(52 - shift); its own q is
 * 1 - 2^-shift/R, which moves p_real by a relative ~1/(R 2^(shift+1)):
 * weight by the sampler's law (the runtime uses thinning instead:
 * ap_sampler_sample_at; docs/STATISTICS.md section 10 compares the two).
 */
AP_API int ap_tune_gap_units(double p, double rate, unsigned shift,
			     uint64_t *units, double *p_real);

/*
 * The per-byte rate whose inclusion probability for size bytes is p:
 * R_c = 1 / (1 - (1 - p)^(1/size)), so that 1 - (1 - 1/R_c)^size = p.
 * 1 for p = 1, +INFINITY for p = 0, NaN for invalid input.
 */
AP_API double ap_tune_class_rate(double p, double size);

/*
 * The rate a sample table gives a class wanting p: ap_tune_class_rate
 * rounded to the nearest base 2^k in log scale (k >= 0), at most
 * AP_SAMPLER_RATE_MAX, and halved while its probability falls below
 * p_min (so the floor's guarantee survives the rounding; 0 = no floor).
 * Power-of-two ratios make the runtime's thinning
 * coin exact and keep the distinct rates few (the NB interval groups
 * samples by rate, at most 8 per row); the rounding moves p by at most a
 * factor sqrt(2), which costs at most 6% of that class's variance term
 * at the optimum ((x + 1/x)/2 at x = sqrt 2). 0 for invalid input.
 */
AP_API uint64_t ap_tune_table_rate(double p, double p_min, double size,
				   uint64_t base);

/* Effective per-byte rate of a class for the NB groups: R Z / g. */
AP_API double ap_tune_effective_rate(double size, double p, double rate);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_TUNE_H */
