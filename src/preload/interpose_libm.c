/*
 * interpose_libm.c: the math functions the runtime's own code calls,
 * defined inside liballocprof_preload.so so that the runtime does not
 * need libm (no DT_NEEDED entry). A C program that does not use libm is
 * then not made to map it: about 0.5 MiB of resident pages, a third of
 * the runtime's fixed memory cost (src/preload/README.md, "Fixed costs").
 *
 * Three kinds, by where they are called:
 *   - log, log1p, expm1: the sampler (inside malloc) calls liballocprof's
 *     own ap_log, ap_log1p and ap_expm1 directly (src/lib/apmath.h); the
 *     rest of the runtime's code gets the same functions under libm's
 *     names;
 *   - exact and trivial ones (sqrt, sqrtl, fmin, fmax, ceil, round,
 *     llround): computed here;
 *   - the special functions of the interval estimates (exp, log2, cbrt,
 *     erfc, lgamma_r, ldexp): reached only from /metrics, which the
 *     HTTP server renders in its own thread, never inside the program's
 *     malloc or a signal handler. They go to libm,
 *     opened with dlopen on first use (the same pages when the program
 *     has it already); if it cannot be opened they return NaN, which the
 *     exporters print as NaN, and nothing else fails.
 *
 * The version script keeps every one of them local (exports.map), so the
 * program's own calls still go to libm.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "../lib/apmath.h"

/* Declared here, not through <math.h>: these are the definitions. */
double log(double x);
double log1p(double x);
double expm1(double x);
double sqrt(double x);
long double sqrtl(long double x);
double fmin(double a, double b);
double fmax(double a, double b);
double ceil(double x);
double round(double x);
long long llround(double x);
double exp(double x);
double log2(double x);
double cbrt(double x);
double erfc(double x);
double lgamma_r(double x, int *sign);
double ldexp(double x, int e);

double log(double x) { return ap_log(x); }
double log1p(double x) { return ap_log1p(x); }
double expm1(double x) { return ap_expm1(x); }

/* The hardware's correctly rounded square roots (no errno to set: a
 * negative argument gives NaN). */
double sqrt(double x)
{
	__asm__("sqrtsd %1, %0" : "=x"(x) : "x"(x));
	return x;
}

long double sqrtl(long double x)
{
	__asm__("fsqrt" : "+t"(x));
	return x;
}

/* C's fmin and fmax: a NaN argument loses to a number. */
double fmin(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	return a < b ? a : b;
}

double fmax(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	return a > b ? a : b;
}

/* |x| >= 2^52 (or NaN, inf) is already an integer. */
static int integral(double x)
{
	return !(x > -0x1p52 && x < 0x1p52);
}

double ceil(double x)
{
	if (integral(x))
		return x;
	double t = (double)(int64_t)x; /* toward zero: exact here */
	if (t < x)
		t += 1.0;
	return t == 0 ? __builtin_copysign(0.0, x) : t; /* -0 stays -0 */
}

/* Halfway cases away from zero. */
double round(double x)
{
	if (integral(x))
		return x;
	double t = (double)(int64_t)x, f = x - t; /* both exact */
	if (f >= 0.5)
		t += 1.0;
	else if (f <= -0.5)
		t -= 1.0;
	return t == 0 ? __builtin_copysign(0.0, x) : t; /* -0 stays -0 */
}

long long llround(double x)
{
	double r = round(x);
	if (!(r >= -0x1p63 && r < 0x1p63)) /* NaN or out of range */
		return INT64_MIN; /* glibc's result */
	return (long long)r;
}

/* ---- from libm, opened on first use ------------------------------------ */

static pthread_once_t libm_once = PTHREAD_ONCE_INIT;
static void *libm;

static void libm_open(void)
{
	libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
}

/* The address of libm's name, cached in *slot; NULL when unavailable. */
static void *libm_fn(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		pthread_once(&libm_once, libm_open);
		f = libm ? dlsym(libm, name) : NULL;
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

#define LIBM_NAN __builtin_nan("")

#define LIBM1(name)                                                         \
	double name(double x)                                               \
	{                                                                   \
		static void *slot;                                          \
		double (*f)(double) = (double (*)(double))libm_fn(&slot, #name); \
		return f ? f(x) : LIBM_NAN;                                 \
	}

LIBM1(exp)
LIBM1(log2)
LIBM1(cbrt)
LIBM1(erfc)

double lgamma_r(double x, int *sign)
{
	static void *slot;
	double (*f)(double, int *) = (double (*)(double, int *))libm_fn(&slot, "lgamma_r");
	if (!f) {
		*sign = 1;
		return LIBM_NAN;
	}
	return f(x, sign);
}

double ldexp(double x, int e)
{
	static void *slot;
	double (*f)(double, int) = (double (*)(double, int))libm_fn(&slot, "ldexp");
	return f ? f(x, e) : LIBM_NAN;
}
