/*
 * apmath.h: the logarithm and exponential the sampler needs, computed
 * here instead of by libm (internal to liballocprof; not installed).
 *
 * Why: the sampler calls them inside the runtime's malloc (every gap draw
 * takes a log), where libm could only be reached by loading it at start-up
 * (a dlopen inside malloc is not safe); with them the runtime does not
 * need libm loaded at all: a C program that does not use libm itself is
 * spared its resident pages (about 0.5 MiB, src/preload/README.md "Fixed
 * costs"). The interval estimates on the runtime's /metrics still use
 * libm, opened on first use (src/preload/interpose_libm.c).
 *
 * Accuracy: under 1 unit in the last place of the exact result over the
 * whole domain (tests/unit/apmath_test.c measures it against extended
 * precision; libm's own are under 0.85 there), far below the sampling
 * error these numbers feed. Special cases as C's log, log1p and expm1:
 * NaN in, NaN out; log(0) = -inf; log(x < 0) = NaN; expm1(+inf) = +inf,
 * expm1(-inf) = -1; the sign of zero kept. errno is never set.
 */
#ifndef AP_APMATH_H
#define AP_APMATH_H

double ap_log(double x);
double ap_log1p(double x);
double ap_expm1(double x);

#endif
