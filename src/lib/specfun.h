/*
 * specfun.h: private special functions shared inside liballocprof (the
 * public ones, ap_betainc and the normal CDF/quantile, are declared in
 * allocprof/estimate.h). Pure functions; NaN for arguments outside the
 * documented domain.
 */
#ifndef ALLOCPROF_SPECFUN_H
#define ALLOCPROF_SPECFUN_H

#include <stdbool.h>

/*
 * Regularized incomplete gamma: P(a, x) (upper = false) or Q(a, x) = 1 - P
 * (upper = true), a > 0, x >= 0. Each is computed directly (series or
 * continued fraction) so a small tail keeps its relative accuracy.
 */
double apx_specfun_gammainc(double a, double x, bool upper);

/*
 * x with P(a, x) = target (upper = false) or Q(a, x) = target (upper =
 * true); a > 0, 0 < target < 1. Relative accuracy ~1e-13. NaN otherwise.
 */
double apx_specfun_gamma_quantile(double a, double target, bool upper);

#endif
