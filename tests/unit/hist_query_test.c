/*
 * hist_query_test.c: snapshot queries against the exact sorted data.
 *
 * For lognormal, uniform, Pareto and constant inputs of 10^6 values (fixed
 * seeds) and every sigbits 1..15, every quantile on a 0.001 grid (plus the
 * far tail) must be within 2^-sigbits of the exact nearest-rank quantile.
 * That bound is not a tolerance picked to pass: the estimate always lies in
 * the bucket of the true value, and a bucket [lo, hi] has hi - lo < lo /
 * 2^sigbits, so a larger error means a wrong bucket or a wrong rank. Counts
 * below/above a value must bracket the true counts, and the exact moments
 * must match the data. One sort per input is reused for all precisions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist.h"
#include "aptest.h"

#define N 1000000

__extension__ typedef unsigned __int128 u128;

static uint64_t rng_state;

static uint64_t next_u64(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static double unit_open(void) /* uniform in (0, 1) */
{
	return ((double)(next_u64() >> 11) + 0.5) / 9007199254740992.0;
}

static uint64_t clamp_u64(double x)
{
	return x >= 9.2e18 ? (uint64_t)9.2e18 : (uint64_t)x;
}

enum dist { LOGNORMAL, UNIFORM, PARETO, CONSTANT };

static void generate(enum dist d, uint64_t *x)
{
	rng_state = 20261121u + (uint64_t)d;
	for (size_t i = 0; i < N; i++) {
		switch (d) {
		case LOGNORMAL: { /* median 1e5, sigma 2.5: ~13 decades */
			double z = sqrt(-2 * log(unit_open())) *
				   cos(6.283185307179586 * unit_open());
			x[i] = clamp_u64(exp(log(1e5) + 2.5 * z));
			break;
		}
		case UNIFORM: x[i] = next_u64() % 1000000000u; break;
		case PARETO: /* x_m = 1000, alpha = 1.2: heavy tail */
			x[i] = clamp_u64(1000.0 / pow(unit_open(), 1 / 1.2));
			break;
		case CONSTANT: x[i] = 4242; break;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static size_t lower_index(const uint64_t *sorted, uint64_t v)
{
	size_t lo = 0, hi = N;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sorted[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Check every query of one precision against the sorted data. */
static int check_precision(const uint64_t *x, const uint64_t *sorted,
			   unsigned s, double exact_sd)
{
	ap_hist *h;
	ap_hist_snap *snap;
	if (ap_hist_create(&h, s, NULL))
		return -1;
	for (size_t i = 0; i < N; i++)
		ap_hist_add(h, x[i]);
	int rc = ap_hist_snapshot(h, NULL, &snap);
	ap_hist_destroy(h);
	if (rc)
		return -1;
	enum { NQ = 1003 };
	double q[NQ];
	uint64_t many[NQ];
	for (int i = 0; i <= 1000; i++)
		q[i] = i / 1000.0;
	q[1001] = 0.9999;
	q[1002] = 0.99999;
	rc = ap_hist_snap_values_at_quantiles(snap, q, NQ, many);
	for (int i = 0; i < NQ && !rc; i++) {
		uint64_t est;
		double r = ceil(q[i] * N);
		size_t rank = r < 1 ? 0 : (size_t)r - 1;
		uint64_t exact = sorted[rank];
		if (ap_hist_snap_value_at_quantile(snap, q[i], &est) ||
		    est != many[i]) {
			ap_test_fail(__FILE__, __LINE__, "s=%u q=%g: batch %llu",
				     s, q[i], (unsigned long long)many[i]);
			rc = -1;
			break;
		}
		uint64_t d = est > exact ? est - exact : exact - est;
		if (((u128)d << s) > exact) {
			ap_test_fail(__FILE__, __LINE__,
				     "s=%u q=%g: %llu vs exact %llu", s, q[i],
				     (unsigned long long)est,
				     (unsigned long long)exact);
			rc = -1;
		}
	}
	/* Counts below / above bracket the truth, estimates inside brackets. */
	for (size_t i = 0; i < N && !rc; i += 9973) {
		uint64_t v = sorted[i] + (i % 2);
		uint64_t lo, hi, alo, ahi;
		double below = ap_hist_snap_count_below(snap, v, &lo, &hi);
		double above = ap_hist_snap_count_above(snap, v, &alo, &ahi);
		size_t tb = lower_index(sorted, v);
		size_t ta = N - lower_index(sorted, v == UINT64_MAX ? v : v + 1);
		if (!(lo <= tb && tb <= hi && below >= lo && below <= hi &&
		      alo <= ta && ta <= ahi && above >= alo && above <= ahi)) {
			ap_test_fail(__FILE__, __LINE__,
				     "s=%u v=%llu: below %zu not in [%llu,%llu]"
				     " or above %zu not in [%llu,%llu]",
				     s, (unsigned long long)v, tb,
				     (unsigned long long)lo,
				     (unsigned long long)hi, ta,
				     (unsigned long long)alo,
				     (unsigned long long)ahi);
			rc = -1;
		}
	}
	/* Exact moments: both sides exact to double rounding. */
	if (!rc && fabs(ap_hist_snap_stddev(snap) - exact_sd) >
			   1e-9 * exact_sd + 1e-12) {
		ap_test_fail(__FILE__, __LINE__, "s=%u sd %.17g vs %.17g", s,
			     ap_hist_snap_stddev(snap), exact_sd);
		rc = -1;
	}
	ap_hist_snap_destroy(snap);
	return rc;
}

static void check_distribution(enum dist d)
{
	uint64_t *x = malloc(N * sizeof *x), *sorted = malloc(N * sizeof *x);
	AP_CHECK(x && sorted);
	generate(d, x);
	memcpy(sorted, x, N * sizeof *x);
	qsort(sorted, N, sizeof *sorted, cmp_u64);
	long double m = 0, v = 0;
	for (size_t i = 0; i < N; i++)
		m += x[i];
	m /= N;
	for (size_t i = 0; i < N; i++)
		v += ((long double)x[i] - m) * ((long double)x[i] - m);
	double sd = (double)sqrtl(v / N);
	int failures = 0;
	for (unsigned s = 1; s <= 15 && !failures; s++)
		failures += check_precision(x, sorted, s, sd) != 0;
	free(x);
	free(sorted);
	AP_CHECK(failures == 0);
}

AP_TEST(quantiles_of_lognormal_within_2_pow_minus_sigbits)
{
	check_distribution(LOGNORMAL);
}

AP_TEST(quantiles_of_uniform_within_2_pow_minus_sigbits)
{
	check_distribution(UNIFORM);
}

AP_TEST(quantiles_of_pareto_within_2_pow_minus_sigbits)
{
	check_distribution(PARETO);
}

AP_TEST(quantiles_of_constant_input_are_exact)
{
	check_distribution(CONSTANT);
}

AP_TEST(rank_and_quantile_arguments_are_checked)
{
	ap_hist *h;
	ap_hist_snap *s;
	AP_CHECK_EQ_INT(ap_hist_create(&h, 4, NULL), 0);
	for (uint64_t v = 1; v <= 100; v++)
		AP_CHECK_EQ_INT(ap_hist_add(h, v), 0);
	AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &s), 0);
	uint64_t v = 0;
	double bad[] = {(double)NAN, -0.01, 1.01};
	for (int i = 0; i < 3; i++) {
		AP_CHECK_EQ_INT(ap_hist_snap_value_at_quantile(s, bad[i], &v),
				AP_EINVAL);
		AP_CHECK_EQ_INT(ap_hist_snap_values_at_quantiles(s, &bad[i], 1, &v),
				AP_EINVAL);
	}
	AP_CHECK_EQ_INT(ap_hist_snap_value_at_rank(s, 100, &v), AP_ERANGE);
	AP_CHECK(!ap_hist_snap_value_at_rank(s, 0, &v) && v == 1);
	AP_CHECK(!ap_hist_snap_value_at_rank(s, 99, &v) && v == 100);
	AP_CHECK(!ap_hist_snap_value_at_quantile(s, 0.5, &v) && v >= 47 && v <= 53);
	AP_CHECK_EQ_INT(ap_hist_snap_values_at_quantiles(s, NULL, 0, NULL), 0);
	/* Rank of a value, quantile of a value: edges are exact. */
	AP_CHECK(ap_hist_snap_rank_of_value(s, 1) == 0);
	AP_CHECK(ap_hist_snap_rank_of_value(s, 101) == 100);
	AP_CHECK(ap_hist_snap_quantile_of_value(s, 100) == 1.0);
	AP_CHECK(ap_hist_snap_quantile_of_value(s, 0) == 0.0);
	AP_CHECK(ap_hist_snap_count_above(s, UINT64_MAX, NULL, NULL) == 0);
	/* 32 is a bucket edge at sigbits 4 (values < 32 exact): exact counts. */
	uint64_t lo, hi;
	AP_CHECK(ap_hist_snap_count_below(s, 32, &lo, &hi) == 31 && lo == 31 &&
		 hi == 31);
	AP_CHECK(ap_hist_snap_quantile_of_value(s, 31) == 0.31);
	ap_hist_snap_destroy(s);
	ap_hist_destroy(h);
}
