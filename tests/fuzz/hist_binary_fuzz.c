/*
 * hist_binary_fuzz.c: libFuzzer target for ap_hist_decode. Whatever decodes
 * must re-encode to the very same bytes (the encoding is canonical), decode
 * again to an equal snapshot, and survive every query, re-bucketing and
 * export without a sanitizer report. Anything else traps.
 */
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist.h"
#include "fuzz.h"

/* Exercise the read side on a decoded snapshot; seed picks parameters. */
static void exercise(const ap_hist_snap *s, unsigned seed)
{
	static const double q[] = {0, 0.001, 0.25, 0.5, 0.9, 0.999, 1};
	uint64_t v[sizeof q / sizeof q[0]], lo, hi, mn, mx;
	if (ap_hist_snap_count(s)) {
		REQUIRE(!ap_hist_snap_values_at_quantiles(s, q, 7, v));
		REQUIRE(!ap_hist_snap_min(s, &mn) && !ap_hist_snap_max(s, &mx));
		for (int i = 0; i < 7; i++)
			REQUIRE(v[i] >= mn && v[i] <= mx);
		for (int i = 1; i < 7; i++)
			REQUIRE(v[i] >= v[i - 1]);
		double b = ap_hist_snap_count_below(s, v[3], &lo, &hi);
		REQUIRE(lo <= hi && b >= (double)lo && b <= (double)hi);
	}
	(void)ap_hist_snap_stddev(s);
	(void)ap_hist_snap_quantile_of_value(s, seed * 7919u);
	char *out;
	size_t len;
	if (!ap_hist_export_prometheus(s, "f", NULL, NULL, 0, NULL, &out, &len))
		ap_hist_buffer_free(NULL, out, len);
	if (!ap_hist_export_otel_json(s, (int)(seed % 13) - 4, NULL, &out, &len))
		ap_hist_buffer_free(NULL, out, len);
	ap_hist_snap *r;
	if (!ap_hist_snap_rebucket(s, 1 + seed % 15, NULL, &r)) {
		REQUIRE(ap_hist_snap_count(r) == ap_hist_snap_count(s));
		ap_hist_snap_destroy(r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ap_hist_snap *s, *again;
	if (ap_hist_decode(data, size, NULL, &s))
		return 0;
	unsigned char *enc;
	size_t len;
	REQUIRE(!ap_hist_encode(s, NULL, &enc, &len));
	REQUIRE(len == size && !memcmp(enc, data, size));
	REQUIRE(!ap_hist_decode(enc, len, NULL, &again));
	REQUIRE(ap_hist_snap_equal(s, again));
	ap_hist_buffer_free(NULL, enc, len);
	ap_hist_snap_destroy(again);
	exercise(s, size ? data[size - 1] : 0);
	ap_hist_snap_destroy(s);
	return 0;
}
