/*
 * allocprof/lifetime.h: lifetimes of a site's allocations from sampled
 * blocks, with the blocks still alive at the dump counted as censored.
 *
 * Each sampled block is one observation: its lifetime (free time minus
 * allocation time) when it was freed, or its age at the dump when it was
 * still alive (right-censored: it lives at least that long). Every
 * observation carries its Horvitz-Thompson weight 1/pi. The engine is a
 * Kaplan-Meier estimate with weighted risk sets, a variance from the
 * influence functions (it counts both the lifetimes' randomness and the
 * sampling weights), and Brookmeyer-Crowley intervals for the quartiles.
 * docs/TIME.md derives it. Pure functions, no global state.
 */
#ifndef ALLOCPROF_LIFETIME_H
#define ALLOCPROF_LIFETIME_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/common.h"
#include "allocprof/estimate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One sampled block. */
typedef struct ap_life_obs {
	double lifetime_ns; /* freed: lifetime; censored: age at the dump */
	double weight;      /* HT weight 1/pi (>= 1; 1 = recorded exactly) */
	double size;        /* bytes requested */
	bool censored;      /* still alive at the dump */
} ap_life_obs;

/*
 * A lifetime quantile (the time by which a fraction p of the objects is
 * freed) and its interval. estimate/hi are +INFINITY when the survival
 * curve never falls to 1 - p (e.g. objects that live until exit: "not
 * reached"); lo is then still a valid lower bound (at least the oldest
 * observation when even the lower confidence band of S stays above 1 - p).
 */
typedef struct ap_life_quantile {
	double p, estimate, lo, hi;
} ap_life_quantile;

typedef struct ap_life_summary {
	ap_life_quantile q25, median, q75;
	double objects;        /* weighted objects (HT estimate) */
	double freed_fraction; /* 1 - S(last observed time) */
	size_t samples, censored;
} ap_life_summary;

/*
 * Weighted Kaplan-Meier over n observations: quartiles with intervals at
 * level (0 < level < 1). n = 0 gives samples 0 and all quantiles NaN.
 * AP_EINVAL (out NaN) for NULL pointers (n > 0), a negative/NaN/infinite
 * lifetime, a weight < 1 or NaN/infinite, a level outside (0, 1);
 * AP_ENOMEM. alloc NULL = libc.
 */
AP_API int ap_life_km(const ap_life_obs *obs, size_t n, double level,
		      const ap_allocator *alloc, ap_life_summary *out);

/*
 * ap_life_km over observations that each stand for several blocks of one
 * lifetime (a histogram bin: weight = the bin's summed weights),
 * weight_sq[i] the sum of their squared weights (>= weight; NULL = one
 * block each, weight^2), which is what the variance needs. Errors as
 * ap_life_km, and AP_EINVAL for a weight_sq below its weight.
 */
AP_API int ap_life_km_binned(const ap_life_obs *obs, const double *weight_sq,
			     size_t n, double level, const ap_allocator *alloc,
			     ap_life_summary *out);

/*
 * Survival S(t) = P(lifetime > t) and its standard error at time t, as
 * used by ap_life_km (for plots and tests). Errors as ap_life_km.
 */
AP_API int ap_life_survival(const ap_life_obs *obs, size_t n, double t_ns,
			    const ap_allocator *alloc, double *surv,
			    double *se);

/*
 * "Most temporary allocations": bytes of blocks freed with a lifetime <=
 * threshold_ns, per second of run_seconds, with the HT normal interval
 * (variance sum (1 - pi) size^2 / pi^2: the sampling error of this run's
 * short-lived bytes). AP_EINVAL for bad observations, threshold < 0,
 * run_seconds <= 0, a level outside (0, 1) or NULL out.
 */
AP_API int ap_life_short_rate(const ap_life_obs *obs, size_t n,
			      double threshold_ns, double run_seconds,
			      double level, ap_interval *out);

#ifdef __cplusplus
}
#endif
#endif /* ALLOCPROF_LIFETIME_H */
