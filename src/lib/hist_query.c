/*
 * hist_query.c: the immutable snapshot (ap_hist_snap) and every query on it:
 * exact count/min/max/sum, mean and standard deviation from exact integer
 * moments, value at rank or quantile (one or many in a single pass), rank and
 * quantile of a value, counts below/above a value with honest bounds, and
 * iteration over the non-empty buckets.
 *
 * Estimates inside a bucket assume the bucket's values are spread uniformly
 * over the part of it that lies within [min, max]; clamping to the exact
 * extremes makes the first and last ranks exact and a constant input exact
 * everywhere. The answer always stays inside the true value's bucket, so the
 * relative error stays below 2^-sigbits whatever the data.
 */
#include <math.h>
#include <string.h>

#include "hist_internal.h"

/* ---- The snapshot object ------------------------------------------------ */

/* The three bucket arrays share one block: counts, cum, then keys. */
static size_t block_bytes(size_t cap)
{
	return cap * (2 * sizeof(uint64_t) + sizeof(uint32_t));
}

static int snap_grow(ap_hist_snap *s, size_t cap)
{
	const ap_allocator *a = &s->alloc;
	if (cap > SIZE_MAX / block_bytes(1))
		return AP_ENOMEM;
	unsigned char *blk = a->alloc(a->ctx, block_bytes(cap));
	if (!blk)
		return AP_ENOMEM;
	uint64_t *counts = (uint64_t *)(void *)blk;
	uint64_t *cum = counts + cap;
	uint32_t *keys = (uint32_t *)(void *)(cum + cap);
	if (s->n) {
		memcpy(counts, s->counts, s->n * sizeof *counts);
		memcpy(cum, s->cum, s->n * sizeof *cum);
		memcpy(keys, s->keys, s->n * sizeof *keys);
	}
	if (s->counts)
		a->free(a->ctx, s->counts, block_bytes(s->cap));
	s->counts = counts;
	s->cum = cum;
	s->keys = keys;
	s->cap = cap;
	return 0;
}

int apx_hist_snap_new(const ap_allocator *alloc, unsigned sigbits, size_t cap,
		  ap_hist_snap **out)
{
	const ap_allocator *a = apx_hist_alloc_or_libc(alloc);
	ap_hist_snap *s = a->alloc(a->ctx, sizeof *s);
	if (!s)
		return AP_ENOMEM;
	memset(s, 0, sizeof *s);
	s->alloc = *a;
	s->sigbits = sigbits;
	s->min = UINT64_MAX;
	if (cap && snap_grow(s, cap)) {
		ap_hist_snap_destroy(s);
		return AP_ENOMEM;
	}
	*out = s;
	return 0;
}

int apx_hist_snap_push(ap_hist_snap *s, uint32_t key, uint64_t count)
{
	uint64_t total;
	if (__builtin_add_overflow(s->count, count, &total))
		return AP_ERANGE;
	if (s->n == s->cap) {
		int rc = snap_grow(s, s->cap ? s->cap * 2 : 16);
		if (rc)
			return rc;
	}
	s->keys[s->n] = key;
	s->counts[s->n] = count;
	s->cum[s->n] = total;
	s->count = total;
	s->n++;
	return 0;
}

void ap_hist_snap_destroy(ap_hist_snap *s)
{
	if (!s)
		return;
	ap_allocator a = s->alloc;
	if (s->counts)
		a.free(a.ctx, s->counts, block_bytes(s->cap));
	a.free(a.ctx, s, sizeof *s);
}

size_t apx_hist_snap_lower_bound(const ap_hist_snap *s, uint32_t key)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Bucket i's bounds clipped to [min, max] (non-empty for valid snapshots). */
static void clipped_bounds(const ap_hist_snap *s, size_t i, uint64_t *lo,
			   uint64_t *hi)
{
	hist_bounds(s->sigbits, s->keys[i], lo, hi);
	if (*lo < s->min)
		*lo = s->min;
	if (*hi > s->max)
		*hi = s->max;
	if (*lo > *hi) /* only for inconsistent (hand-built) snapshots */
		*hi = *lo;
}

/* ---- Scalars ------------------------------------------------------------ */

unsigned ap_hist_snap_sigbits(const ap_hist_snap *s) { return s->sigbits; }
uint64_t ap_hist_snap_count(const ap_hist_snap *s) { return s->count; }
uint64_t ap_hist_snap_dropped(const ap_hist_snap *s) { return s->dropped; }

int ap_hist_snap_min(const ap_hist_snap *s, uint64_t *out)
{
	if (!s->count)
		return AP_ENOTFOUND;
	*out = s->min;
	return 0;
}

int ap_hist_snap_max(const ap_hist_snap *s, uint64_t *out)
{
	if (!s->count)
		return AP_ENOTFOUND;
	*out = s->max;
	return 0;
}

void ap_hist_snap_sum(const ap_hist_snap *s, uint64_t *hi, uint64_t *lo)
{
	*hi = (uint64_t)(s->sum >> 64);
	*lo = (uint64_t)s->sum;
}

bool ap_hist_snap_sumsq(const ap_hist_snap *s, uint64_t *hi, uint64_t *lo)
{
	hist_u128 v = s->sq_sat ? HIST_U128_MAX : s->sumsq;
	*hi = (uint64_t)(v >> 64);
	*lo = (uint64_t)v;
	return !s->sq_sat;
}

double ap_hist_snap_mean(const ap_hist_snap *s)
{
	if (!s->count)
		return (double)NAN;
	return (double)((long double)s->sum / (long double)s->count);
}

/* Variance from the buckets (used only when the sum of squares saturated):
 * each bucket contributes its spread around the exact mean plus the variance
 * of a discrete uniform over its clipped width w, (w^2 - 1) / 12. */
static long double bucket_variance(const ap_hist_snap *s)
{
	long double mean = (long double)s->sum / (long double)s->count, acc = 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t lo, hi;
		clipped_bounds(s, i, &lo, &hi);
		long double mid = ((long double)lo + (long double)hi) / 2;
		long double w = (long double)(hi - lo) + 1;
		acc += (long double)s->counts[i] *
		       ((mid - mean) * (mid - mean) + (w * w - 1) / 12);
	}
	return acc / (long double)s->count;
}

/*
 * Exact variance from n, sum and sumsq. With q = floor(mean) and
 * r = sum - q n (0 <= r < n): S = sum (x - q)^2 = sumsq - 2 q sum + q^2 n
 * fits in 128 bits (it is at most sumsq), so modular 128-bit arithmetic gives
 * it exactly, without the cancellation of sumsq/n - mean^2 that floating
 * point suffers when the spread is small next to the mean. Then
 * n * sum (x - mean)^2 = n S - r^2: exact in 128 bits when S < 2^64, else in
 * long double where the correction r^2/n < n is negligible next to S.
 */
static long double exact_variance(const ap_hist_snap *s)
{
	hist_u128 n = s->count;
	hist_u128 q = s->sum / n, r = s->sum - q * n;
	hist_u128 S = s->sumsq - 2 * q * s->sum + q * q * n;
	if (S >> 64 == 0) {
		hist_u128 nS = n * S, rr = r * r;
		if (nS < rr) /* inconsistent moments (decoded garbage) */
			return 0;
		return (long double)(nS - rr) / (long double)n / (long double)n;
	}
	long double v = ((long double)S - (long double)r * (long double)r /
						   (long double)n) /
			(long double)n;
	return v > 0 ? v : 0;
}

double ap_hist_snap_stddev(const ap_hist_snap *s)
{
	if (!s->count)
		return (double)NAN;
	if (s->min == s->max)
		return 0.0;
	long double v = s->sq_sat ? bucket_variance(s) : exact_variance(s);
	return (double)sqrtl(v);
}

/* ---- Value at rank / quantile ------------------------------------------ */

/* The value of rank r inside bucket i (r within the bucket's ranks). */
static uint64_t value_in_bucket(const ap_hist_snap *s, size_t i, uint64_t r)
{
	if (r == 0)
		return s->min;
	if (r == s->count - 1)
		return s->max;
	uint64_t lo, hi;
	clipped_bounds(s, i, &lo, &hi);
	uint64_t j = r - (s->cum[i] - s->counts[i]);
	/* The j-th of c values sits at (j + 1/2) / c of the clipped width. */
	double t = ((double)j + 0.5) / (double)s->counts[i];
	double off = t * (double)(hi - lo);
	uint64_t v = lo + (off >= (double)(hi - lo) ? hi - lo : (uint64_t)off);
	return v;
}

/* First bucket whose running total exceeds rank r. */
static size_t bucket_of_rank(const ap_hist_snap *s, uint64_t r, size_t from)
{
	size_t lo = from, hi = s->n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->cum[mid] <= r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ap_hist_snap_value_at_rank(const ap_hist_snap *s, uint64_t r,
			       uint64_t *out)
{
	if (!s->count)
		return AP_ENOTFOUND;
	if (r >= s->count)
		return AP_ERANGE;
	*out = value_in_bucket(s, bucket_of_rank(s, r, 0), r);
	return 0;
}

/* Nearest rank of quantile q: ceil(q n) - 1, clamped to [0, n - 1]. */
static uint64_t rank_of_quantile(const ap_hist_snap *s, double q)
{
	/* In double, as a user computes it: 0.001 * 1e6 is 1000, not the
	 * 1000.00000000000002 that the exact product of the double 0.001 is. */
	double x = ceil(q * (double)s->count);
	if (x < 1)
		return 0;
	if (x >= (double)s->count)
		return s->count - 1;
	return (uint64_t)x - 1;
}

int ap_hist_snap_value_at_quantile(const ap_hist_snap *s, double q,
				   uint64_t *out)
{
	if (!(q >= 0.0 && q <= 1.0))
		return AP_EINVAL;
	return ap_hist_snap_value_at_rank(s, rank_of_quantile(s, q), out);
}

int ap_hist_snap_values_at_quantiles(const ap_hist_snap *s, const double *q,
				     size_t n, uint64_t *out)
{
	for (size_t i = 0; i < n; i++)
		if (!(q[i] >= 0.0 && q[i] <= 1.0))
			return AP_EINVAL;
	if (!n)
		return 0;
	if (!s->count)
		return AP_ENOTFOUND;
	/* Visit the quantiles in increasing order (insertion sort of their
	 * indices, in chunks of 64 to avoid allocating), so the bucket cursor
	 * only moves forward within each chunk. */
	for (size_t base = 0; base < n; base += 64) {
		size_t m = n - base < 64 ? n - base : 64, idx[64];
		for (size_t i = 0; i < m; i++) {
			size_t j = i;
			while (j && q[base + idx[j - 1]] > q[base + i]) {
				idx[j] = idx[j - 1];
				j--;
			}
			idx[j] = i;
		}
		size_t b = 0;
		for (size_t i = 0; i < m; i++) {
			uint64_t r = rank_of_quantile(s, q[base + idx[i]]);
			while (s->cum[b] <= r)
				b++;
			out[base + idx[i]] = value_in_bucket(s, b, r);
		}
	}
	return 0;
}

/* ---- Rank and counts of a value ---------------------------------------- */

double ap_hist_snap_count_below(const ap_hist_snap *s, uint64_t v,
				uint64_t *at_least, uint64_t *at_most)
{
	uint64_t lo_n = 0, hi_n = 0;
	double est = 0;
	if (s->count && v > s->max) {
		lo_n = hi_n = s->count;
		est = (double)s->count;
	} else if (s->count && v > s->min) {
		size_t i = apx_hist_snap_lower_bound(s, hist_key(s->sigbits, v));
		lo_n = hi_n = i ? s->cum[i - 1] : 0;
		est = (double)lo_n;
		if (i < s->n && s->keys[i] == hist_key(s->sigbits, v)) {
			uint64_t lo, hi;
			clipped_bounds(s, i, &lo, &hi);
			if (v > hi) {
				lo_n += s->counts[i];
				hi_n = lo_n;
				est = (double)lo_n;
			} else if (v > lo) {
				hi_n += s->counts[i];
				est += (double)s->counts[i] * (double)(v - lo) /
				       ((double)(hi - lo) + 1.0);
			}
		}
	}
	if (at_least)
		*at_least = lo_n;
	if (at_most)
		*at_most = hi_n;
	return est;
}

double ap_hist_snap_count_above(const ap_hist_snap *s, uint64_t v,
				uint64_t *at_least, uint64_t *at_most)
{
	uint64_t lo_n = 0, hi_n = 0;
	double est = 0;
	if (v != UINT64_MAX) {
		/* above v = count - (values <= v) = count - below(v + 1) */
		est = ap_hist_snap_count_below(s, v + 1, &lo_n, &hi_n);
		uint64_t t = lo_n;
		lo_n = s->count - hi_n;
		hi_n = s->count - t;
		est = (double)s->count - est;
	}
	if (at_least)
		*at_least = lo_n;
	if (at_most)
		*at_most = hi_n;
	return est;
}

double ap_hist_snap_rank_of_value(const ap_hist_snap *s, uint64_t v)
{
	return ap_hist_snap_count_below(s, v, NULL, NULL);
}

double ap_hist_snap_quantile_of_value(const ap_hist_snap *s, uint64_t v)
{
	if (!s->count)
		return (double)NAN;
	double n = (double)s->count;
	return (n - ap_hist_snap_count_above(s, v, NULL, NULL)) / n;
}

/* ---- Iteration and comparison ------------------------------------------ */

size_t ap_hist_snap_bucket_count(const ap_hist_snap *s)
{
	return s->n;
}

int ap_hist_snap_bucket(const ap_hist_snap *s, size_t i, ap_hist_bucket *out)
{
	if (i >= s->n)
		return AP_ERANGE;
	out->key = s->keys[i];
	out->count = s->counts[i];
	hist_bounds(s->sigbits, s->keys[i], &out->lo, &out->hi);
	return 0;
}

bool ap_hist_snap_equal(const ap_hist_snap *a, const ap_hist_snap *b)
{
	if (a->sigbits != b->sigbits || a->n != b->n || a->count != b->count ||
	    a->min != b->min || a->max != b->max || a->sum != b->sum ||
	    a->sq_sat != b->sq_sat || (!a->sq_sat && a->sumsq != b->sumsq))
		return false;
	return !a->n || (!memcmp(a->keys, b->keys, a->n * sizeof *a->keys) &&
			 !memcmp(a->counts, b->counts,
				 a->n * sizeof *a->counts));
}
