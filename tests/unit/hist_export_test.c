/*
 * hist_export_test.c: Prometheus classic exposition (native bucket edges and
 * user bounds), exponential buckets for Prometheus native / OpenTelemetry
 * histograms, and the OTLP/JSON data point: golden outputs, proportional
 * splits checked by hand, totals preserved, bad arguments rejected.
 */
#include <string.h>

#include "allocprof/hist.h"
#include "aptest.h"

static ap_hist_snap *snap_of(unsigned sigbits, const uint64_t *v, size_t n)
{
	ap_hist *h;
	ap_hist_snap *s = NULL;
	if (ap_hist_create(&h, sigbits, NULL))
		return NULL;
	for (size_t i = 0; i < n; i++)
		ap_hist_add(h, v[i]);
	ap_hist_snapshot(h, NULL, &s);
	ap_hist_destroy(h);
	return s;
}

static const uint64_t small[] = {0, 5, 100, 100};

AP_TEST(prometheus_uses_bucket_maxima_as_le_and_escapes_help)
{
	ap_hist_snap *s = snap_of(3, small, 4);
	AP_CHECK(s);
	char *out;
	size_t len;
	AP_CHECK_EQ_INT(ap_hist_export_prometheus(s, "x_bytes",
						  "Sizes.\nsecond \\ line", NULL,
						  0, NULL, &out, &len), 0);
	static const char want[] =
		"# HELP x_bytes Sizes.\\nsecond \\\\ line\n"
		"# TYPE x_bytes histogram\n"
		"x_bytes_bucket{le=\"0\"} 1\n"
		"x_bytes_bucket{le=\"5\"} 2\n"
		"x_bytes_bucket{le=\"103\"} 4\n"
		"x_bytes_bucket{le=\"+Inf\"} 4\n"
		"x_bytes_sum 205\n"
		"x_bytes_count 4\n";
	AP_CHECK_MSG(len == strlen(want) && !strcmp(out, want), "got:\n%s", out);
	ap_hist_buffer_free(NULL, out, len);
	ap_hist_snap_destroy(s);
}

AP_TEST(prometheus_rebuckets_onto_user_bounds_splitting_one_bucket)
{
	ap_hist_snap *s = snap_of(3, small, 4);
	AP_CHECK(s);
	/* 98 cuts [96, 103], clipped to [96, 100] by max: 3 of its 5 integers
	 * are <= 98, so floor(2 * 3 / 5) = 1 of its 2 values counts. */
	static const uint64_t bounds[] = {4, 50, 98, 1000};
	char *out;
	size_t len;
	AP_CHECK_EQ_INT(ap_hist_export_prometheus(s, "m", NULL, bounds, 4, NULL,
						  &out, &len), 0);
	AP_CHECK(strstr(out, "m_bucket{le=\"4\"} 1\n"));
	AP_CHECK(strstr(out, "m_bucket{le=\"50\"} 2\n"));
	AP_CHECK(strstr(out, "m_bucket{le=\"98\"} 3\n"));
	AP_CHECK(strstr(out, "m_bucket{le=\"1000\"} 4\n"));
	AP_CHECK(strstr(out, "m_bucket{le=\"+Inf\"} 4\nm_sum 205\nm_count 4\n"));
	AP_CHECK(strstr(out, "# HELP m "));
	ap_hist_buffer_free(NULL, out, len);
	ap_hist_snap_destroy(s);
}

AP_TEST(prometheus_rejects_bad_names_and_bounds)
{
	ap_hist_snap *s = snap_of(3, small, 4);
	AP_CHECK(s);
	char *out = NULL;
	size_t len;
	const char *bad[] = {"", "1abc", "a-b", "a b", "é", NULL};
	for (int i = 0; i < 6; i++)
		AP_CHECK_EQ_INT(ap_hist_export_prometheus(s, bad[i], NULL, NULL, 0,
							  NULL, &out, &len),
				AP_EINVAL);
	static const uint64_t dup[] = {5, 5};
	AP_CHECK_EQ_INT(ap_hist_export_prometheus(s, "ok:name_1", NULL, dup, 2,
						  NULL, &out, &len),
			AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_export_prometheus(s, "ok", NULL, NULL, 2, NULL,
						  &out, &len),
			AP_EINVAL);
	AP_CHECK(out == NULL);
	ap_hist_snap_destroy(s);
}

AP_TEST(exponential_buckets_follow_otel_indexing_with_a_zero_bucket)
{
	static const uint64_t v[] = {0, 1, 2, 3, 4};
	ap_hist_snap *s = snap_of(3, v, 5);
	AP_CHECK(s);
	ap_hist_exp e;
	/* scale 0, base 2: 1 in (1/2, 1] = index -1; 2 in (1, 2] = 0;
	 * 3 and 4 in (2, 4] = 1. */
	AP_CHECK_EQ_INT(ap_hist_export_exp(s, 0, NULL, &e), 0);
	AP_CHECK(e.zero_count == 1 && e.offset == -1 && e.ncounts == 3);
	AP_CHECK(e.counts[0] == 1 && e.counts[1] == 1 && e.counts[2] == 2);
	ap_hist_exp_free(NULL, &e);
	AP_CHECK_EQ_INT(ap_hist_export_exp(s, 9, NULL, &e), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_export_exp(s, -5, NULL, &e), AP_EINVAL);
	char *out;
	size_t len;
	AP_CHECK_EQ_INT(ap_hist_export_otel_json(s, 0, NULL, &out, &len), 0);
	static const char want[] =
		"{\"count\":\"5\",\"sum\":10,\"scale\":0,\"zeroCount\":\"1\","
		"\"zeroThreshold\":0,\"positive\":{\"offset\":-1,"
		"\"bucketCounts\":[\"1\",\"1\",\"2\"]},\"negative\":{\"offset\":0,"
		"\"bucketCounts\":[]},\"min\":0,\"max\":4}\n";
	AP_CHECK_MSG(!strcmp(out, want), "got %s", out);
	ap_hist_buffer_free(NULL, out, len);
	ap_hist_snap_destroy(s);
}

AP_TEST(exponential_split_is_proportional_over_the_integers)
{
	/* sigbits 1: [8, 11] is one bucket; 4 values at 8 and 4 at 11. At
	 * scale 2 (base 2^(1/4)) edges are 8, 9.51, 11.31: 8 -> index 11,
	 * 9 -> 12, 10 and 11 -> 13. Even split over 4 integers: 2, 2, 4. */
	static const uint64_t v[] = {8, 8, 8, 8, 11, 11, 11, 11};
	ap_hist_snap *s = snap_of(1, v, 8);
	AP_CHECK(s);
	ap_hist_exp e;
	AP_CHECK_EQ_INT(ap_hist_export_exp(s, 2, NULL, &e), 0);
	AP_CHECK(e.offset == 11 && e.ncounts == 3 && e.zero_count == 0);
	AP_CHECK(e.counts[0] == 2 && e.counts[1] == 2 && e.counts[2] == 4);
	ap_hist_exp_free(NULL, &e);
	ap_hist_snap_destroy(s);
}

AP_TEST(exponential_export_keeps_the_total_at_every_scale)
{
	uint64_t v[3000], x = 0x2545f4914f6cdd1du;
	for (int i = 0; i < 3000; i++) {
		x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
		v[i] = i % 10 ? (x * 2685821657736338717u) >> (i % 64) : 0;
	}
	v[0] = UINT64_MAX;
	ap_hist_snap *s = snap_of(6, v, 3000);
	AP_CHECK(s);
	for (int scale = -4; scale <= 8; scale++) {
		ap_hist_exp e;
		AP_CHECK_EQ_INT(ap_hist_export_exp(s, scale, NULL, &e), 0);
		uint64_t total = e.zero_count;
		for (size_t i = 0; i < e.ncounts; i++)
			total += e.counts[i];
		AP_CHECK_MSG(total == 3000, "scale %d: %llu", scale,
			     (unsigned long long)total);
		AP_CHECK(e.ncounts && e.counts[0] && e.counts[e.ncounts - 1]);
		/* UINT64_MAX = 2^64 - 1 is in (2^63, 2^64]: OTel index
		 * 64 * 2^scale - 1, the last bucket. */
		AP_CHECK_EQ_INT(e.offset + (int64_t)e.ncounts - 1,
				(int64_t)(64 * (scale >= 0 ? 1 << scale : 1)) /
						(scale >= 0 ? 1 : 1 << -scale) - 1);
		ap_hist_exp_free(NULL, &e);
	}
	ap_hist_snap_destroy(s);
}

AP_TEST(prometheus_native_uses_spans_and_deltas_with_index_plus_one)
{
	/* schema 0: 1 -> native index 0, 2 -> 1, 3 and 4 -> 2, 100 -> 7,
	 * 1000 -> 10: spans [0, 3), then gap 4, then gap 2. */
	static const uint64_t v[] = {0, 1, 2, 3, 4, 100, 1000};
	ap_hist_snap *s = snap_of(7, v, 7);
	AP_CHECK(s);
	char *out;
	size_t len;
	AP_CHECK_EQ_INT(ap_hist_export_prometheus_native_json(s, 0, NULL, &out,
							      &len), 0);
	static const char want[] =
		"{\"schema\":0,\"zero_threshold\":0,\"zero_count\":1,\"count\":7,"
		"\"sum\":1110,\"positive_spans\":[{\"offset\":0,\"length\":3},"
		"{\"offset\":4,\"length\":1},{\"offset\":2,\"length\":1}],"
		"\"positive_deltas\":[1,0,1,-1,0]}\n";
	AP_CHECK_MSG(!strcmp(out, want), "got %s", out);
	ap_hist_buffer_free(NULL, out, len);
	AP_CHECK_EQ_INT(ap_hist_export_prometheus_native_json(s, 9, NULL, &out,
							      &len), AP_EINVAL);
	ap_hist_snap_destroy(s);
}
