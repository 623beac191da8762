/*
 * hist_export.c: a snapshot in other systems' histogram formats:
 *  - Prometheus text exposition of a classic histogram, either with one `le`
 *    per non-empty bucket (le = the bucket's inclusive maximum: exact, since
 *    Prometheus buckets are inclusive upper bounds) or re-bucketed onto bounds
 *    the user chose;
 *  - exponential buckets (base 2^(2^-scale)) as used by Prometheus native
 *    histograms and OpenTelemetry exponential histograms, plus the OTLP/JSON
 *    data point.
 * Where target bucket edges cut a log-linear bucket, its count is split in
 * proportion to the integers on each side (assuming values spread evenly
 * inside the bucket, clipped to [min, max]); shares come from running totals
 * so they are integers that add up exactly. docs/HISTOGRAMS.md bounds the
 * error this adds.
 */
#include <math.h>
#include <string.h>

#include "hist_internal.h"

/* Number of values <= b, splitting the one bucket b cuts. Monotone in b. */
static uint64_t count_le(const ap_hist_snap *s, uint64_t b)
{
	if (!s->count || b < s->min)
		return 0;
	if (b >= s->max)
		return s->count;
	uint32_t key = hist_key(s->sigbits, b);
	size_t i = apx_hist_snap_lower_bound(s, key);
	uint64_t n = i ? s->cum[i - 1] : 0;
	if (i < s->n && s->keys[i] == key) {
		uint64_t lo, hi;
		hist_bounds(s->sigbits, key, &lo, &hi);
		if (lo < s->min)
			lo = s->min;
		if (hi > s->max)
			hi = s->max;
		if (b >= hi)
			n += s->counts[i];
		else if (b >= lo)
			n += hist_share(s->counts[i], b - lo + 1, hi - lo + 1);
	}
	return n;
}

static bool metric_name_ok(const char *name)
{
	if (!name || !*name)
		return false;
	for (const char *p = name; *p; p++) {
		char c = *p;
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     c == '_' || c == ':';
		if (!alpha && !(p != name && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

int ap_hist_export_prometheus(const ap_hist_snap *s, const char *name,
			      const char *help, const uint64_t *bounds,
			      size_t n, const ap_allocator *alloc, char **out,
			      size_t *len)
{
	if (!s || !out || !len || !metric_name_ok(name) || (n && !bounds))
		return AP_EINVAL;
	for (size_t i = 1; i < n; i++)
		if (bounds[i] <= bounds[i - 1])
			return AP_EINVAL;
	struct hist_buf b;
	apx_hist_buf_init(&b, alloc);
	/* HELP text escapes backslash and newline (exposition format 0.0.4). */
	apx_hist_buf_printf(&b, "# HELP %s ", name);
	for (const char *p = help ? help : "Histogram of recorded values."; *p;
	     p++)
		apx_hist_buf_puts(&b, *p == '\\' ? "\\\\" : *p == '\n' ? "\\n"
								   : (char[]){*p, 0});
	apx_hist_buf_printf(&b, "\n# TYPE %s histogram\n", name);
	size_t rows = bounds ? n : s->n;
	for (size_t i = 0; i < rows; i++) {
		uint64_t le, cum;
		if (bounds) {
			le = bounds[i];
			cum = count_le(s, le);
		} else {
			uint64_t lo;
			hist_bounds(s->sigbits, s->keys[i], &lo, &le);
			cum = s->cum[i];
		}
		apx_hist_buf_printf(&b, "%s_bucket{le=\"%llu\"} %llu\n", name,
				(unsigned long long)le, (unsigned long long)cum);
	}
	apx_hist_buf_printf(&b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum ", name,
			(unsigned long long)s->count, name);
	apx_hist_buf_u128(&b, s->sum);
	apx_hist_buf_printf(&b, "\n%s_count %llu\n", name,
			(unsigned long long)s->count);
	return apx_hist_buf_finish(&b, (unsigned char **)out, len);
}

/* ---- Exponential buckets ------------------------------------------------ */

/*
 * OpenTelemetry index of x >= 1 at this scale: the i with
 * base^i < x <= base^(i+1), i.e. ceil(log2(x) * 2^scale) - 1. log2 is exact
 * at powers of two, so those land exactly; elsewhere the edges are
 * irrational and a value within double rounding of an edge may go to the
 * neighbouring bucket.
 */
static int64_t exp_index(uint64_t x, int scale)
{
	return (int64_t)ceil(ldexp(log2((double)x), scale)) - 1;
}

/* Largest integer x >= x0 with exp_index(x) <= i (x0 has index i): a
 * binary search using exp_index itself, so the split agrees exactly with
 * the classification above (64 steps at most; exp_index is monotone). */
static uint64_t exp_upper(int64_t i, int scale, uint64_t x0)
{
	uint64_t lo = x0, hi = UINT64_MAX;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2 + (hi - lo) % 2;
		if (exp_index(mid, scale) <= i)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

int ap_hist_export_exp(const ap_hist_snap *s, int scale,
		       const ap_allocator *alloc, ap_hist_exp *out)
{
	if (!s || !out || scale < -4 || scale > 8)
		return AP_EINVAL;
	const ap_allocator *a = apx_hist_alloc_or_libc(alloc);
	memset(out, 0, sizeof *out);
	out->scale = scale;
	size_t first = s->n && s->keys[0] == 0 ? 1 : 0;
	if (first)
		out->zero_count = s->counts[0];
	if (first == s->n)
		return 0;
	uint64_t vlo = s->min ? s->min : 1;
	int64_t imin = exp_index(vlo, scale), imax = exp_index(s->max, scale);
	size_t nc = (size_t)(imax - imin + 1);
	uint64_t *counts = a->alloc(a->ctx, nc * sizeof *counts);
	if (!counts)
		return AP_ENOMEM;
	memset(counts, 0, nc * sizeof *counts);
	for (size_t k = first; k < s->n; k++) {
		uint64_t lo, hi;
		hist_bounds(s->sigbits, s->keys[k], &lo, &hi);
		lo = lo < vlo ? vlo : lo;
		hi = hi > s->max ? s->max : hi;
		if (lo > hi)
			hi = lo;
		uint64_t width = hi - lo + 1, covered = 0, given = 0, x = lo;
		while (x <= hi) {
			/* Index by index; buckets holding no integer (below
			 * 2^(2^-scale) apart) are simply stepped over. */
			int64_t i = exp_index(x, scale);
			uint64_t u = exp_upper(i, scale, x);
			if (u > hi)
				u = hi;
			covered += u - x + 1;
			uint64_t upto = hist_share(s->counts[k], covered, width);
			size_t slot = (size_t)(i - imin);
			if (slot < nc)
				counts[slot] += upto - given;
			given = upto;
			if (u == UINT64_MAX)
				break;
			x = u + 1;
		}
	}
	/* Trim zero ends (shares can round to zero at the edges). */
	size_t b = 0, e = nc;
	while (b < e && !counts[b])
		b++;
	while (e > b && !counts[e - 1])
		e--;
	if (b)
		memmove(counts, counts + b, (e - b) * sizeof *counts);
	out->offset = (int32_t)(imin + (int64_t)b);
	out->counts = counts;
	out->ncounts = e - b;
	/* Remember the allocation size for ap_hist_exp_free. */
	out->cap_ = nc;
	return 0;
}

void ap_hist_exp_free(const ap_allocator *alloc, ap_hist_exp *e)
{
	const ap_allocator *a = apx_hist_alloc_or_libc(alloc);
	if (e && e->counts)
		a->free(a->ctx, e->counts, e->cap_ * sizeof *e->counts);
	if (e)
		memset(e, 0, sizeof *e);
}

/* OTLP/JSON: lowerCamelCase names, 64-bit integers as strings. */
static void write_otel(struct hist_buf *b, const ap_hist_snap *s,
		       const ap_hist_exp *e)
{
	apx_hist_buf_printf(b, "{\"count\":\"%llu\",\"sum\":",
			(unsigned long long)s->count);
	apx_hist_buf_u128(b, s->sum);
	apx_hist_buf_printf(b,
			",\"scale\":%d,\"zeroCount\":\"%llu\","
			"\"zeroThreshold\":0,\"positive\":{\"offset\":%d,"
			"\"bucketCounts\":[",
			e->scale, (unsigned long long)e->zero_count,
			(int)e->offset);
	for (size_t i = 0; i < e->ncounts; i++)
		apx_hist_buf_printf(b, "%s\"%llu\"", i ? "," : "",
				(unsigned long long)e->counts[i]);
	apx_hist_buf_puts(b, "]},\"negative\":{\"offset\":0,\"bucketCounts\":[]}");
	if (s->count)
		apx_hist_buf_printf(b, ",\"min\":%llu,\"max\":%llu",
				(unsigned long long)s->min,
				(unsigned long long)s->max);
	apx_hist_buf_puts(b, "}\n");
}

/*
 * Prometheus native histogram, as the fields of its protobuf Histogram
 * message in JSON: spans of consecutive non-empty buckets (the first span's
 * offset is the index of its first bucket, later ones the gap since the
 * previous span's end) and counts delta-encoded across all spans.
 */
static void write_native(struct hist_buf *b, const ap_hist_snap *s,
			 const ap_hist_exp *e)
{
	apx_hist_buf_printf(b, "{\"schema\":%d,\"zero_threshold\":0,"
			    "\"zero_count\":%llu,\"count\":%llu,\"sum\":",
			e->scale, (unsigned long long)e->zero_count,
			(unsigned long long)s->count);
	apx_hist_buf_u128(b, s->sum);
	apx_hist_buf_puts(b, ",\"positive_spans\":[");
	/* Prometheus index = OpenTelemetry index + 1. */
	int64_t next = 0; /* index just past the previous span */
	bool first = true;
	for (size_t i = 0; i < e->ncounts;) {
		size_t j = i;
		while (j < e->ncounts && e->counts[j])
			j++;
		int64_t start = (int64_t)e->offset + 1 + (int64_t)i;
		apx_hist_buf_printf(b, "%s{\"offset\":%lld,\"length\":%zu}",
				first ? "" : ",",
				(long long)(first ? start : start - next), j - i);
		next = start + (int64_t)(j - i);
		first = false;
		for (i = j; i < e->ncounts && !e->counts[i]; i++) {
		}
	}
	apx_hist_buf_puts(b, "],\"positive_deltas\":[");
	uint64_t prev = 0;
	first = true;
	for (size_t i = 0; i < e->ncounts; i++) {
		if (!e->counts[i])
			continue;
		apx_hist_buf_printf(b, "%s%lld", first ? "" : ",",
				(long long)(e->counts[i] - prev));
		prev = e->counts[i];
		first = false;
	}
	apx_hist_buf_puts(b, "]}\n");
}

/* Exponential buckets at scale, written out by one of the writers above. */
static int export_exp_text(const ap_hist_snap *s, int scale,
			   const ap_allocator *alloc, char **out, size_t *len,
			   void (*write)(struct hist_buf *, const ap_hist_snap *,
					 const ap_hist_exp *))
{
	if (!out || !len)
		return AP_EINVAL;
	ap_hist_exp e;
	int rc = ap_hist_export_exp(s, scale, alloc, &e);
	if (rc)
		return rc;
	struct hist_buf b;
	apx_hist_buf_init(&b, alloc);
	write(&b, s, &e);
	ap_hist_exp_free(alloc, &e);
	return apx_hist_buf_finish(&b, (unsigned char **)out, len);
}

int ap_hist_export_otel_json(const ap_hist_snap *s, int scale,
			     const ap_allocator *alloc, char **out, size_t *len)
{
	return export_exp_text(s, scale, alloc, out, len, write_otel);
}

int ap_hist_export_prometheus_native_json(const ap_hist_snap *s, int schema,
					  const ap_allocator *alloc, char **out,
					  size_t *len)
{
	return export_exp_text(s, schema, alloc, out, len, write_native);
}
