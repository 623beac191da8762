/*
 * hist_merge.c: adding a snapshot into a live histogram, possibly of another
 * precision, and re-bucketing a snapshot at a new precision.
 *
 * Log-linear buckets nest: a value's bucket at sigbits s is fixed by its top
 * s + 1 bits, so every bucket at a finer precision lies inside exactly one
 * bucket at a coarser one. Merging finer into coarser is therefore exact.
 * Merging coarser into finer must guess where inside a source bucket its
 * values were: we clip the source bucket to the source's exact [min, max]
 * (values cannot lie outside it) and split its count over the destination
 * buckets in proportion to how many integers of the clipped range each one
 * holds. Shares are taken from a running total, floor(c * covered / width),
 * so they are integers, each within 1 of the exact proportion, and add up to
 * c exactly. count, sum, sum of squares, min and max are carried over as the
 * exact values they are.
 */
#include "hist_internal.h"

/* Split count c of the integers [a, b] over dst's buckets. */
static int split_range(ap_hist *dst, uint64_t a, uint64_t b, uint64_t c)
{
	unsigned ds = dst->core.hot.sigbits;
	uint64_t width = b - a + 1; /* b - a < 2^63: one source bucket */
	uint64_t covered = 0, given = 0;
	for (uint32_t k = hist_key(ds, a), last = hist_key(ds, b); k <= last;
	     k++) {
		uint64_t lo, hi;
		hist_bounds(ds, k, &lo, &hi);
		if (lo < a)
			lo = a;
		if (hi > b)
			hi = b;
		covered += hi - lo + 1;
		uint64_t upto = hist_share(c, covered, width);
		if (upto > given) {
			int rc = apx_hist_add_to_key(dst, k, upto - given);
			if (rc)
				return rc;
			given = upto;
		}
	}
	return 0;
}

int ap_hist_merge(ap_hist *dst, const ap_hist_snap *src)
{
	if (!dst || !src)
		return AP_EINVAL;
	unsigned ds = dst->core.hot.sigbits, ss = src->sigbits;
	for (size_t i = 0; i < src->n; i++) {
		uint64_t lo, hi;
		hist_bounds(ss, src->keys[i], &lo, &hi);
		int rc;
		if (ss >= ds || lo == hi) {
			rc = apx_hist_add_to_key(dst, hist_key(ds, lo), src->counts[i]);
		} else {
			if (lo < src->min)
				lo = src->min;
			if (hi > src->max)
				hi = src->max;
			if (lo > hi) /* inconsistent snapshot: keep the count */
				hi = lo;
			rc = split_range(dst, lo, hi, src->counts[i]);
		}
		if (rc)
			return rc;
	}
	apx_hist_add_scalars(dst, src);
	return 0;
}

int ap_hist_snap_rebucket(const ap_hist_snap *s, unsigned sigbits,
			  const ap_allocator *alloc, ap_hist_snap **out)
{
	if (!s || !out)
		return AP_EINVAL;
	ap_hist *h;
	int rc = ap_hist_create(&h, sigbits, alloc);
	if (rc)
		return rc;
	rc = ap_hist_merge(h, s);
	if (!rc)
		rc = ap_hist_snapshot(h, alloc, out);
	ap_hist_destroy(h);
	return rc;
}
