/*
 * hist_codec_test.c: the binary and JSON forms of a histogram snapshot:
 * golden encodings (the format is pinned), exact round trips (decode then
 * re-encode gives the same bytes), and rejection of truncated, corrupt,
 * inconsistent and future-version input without crashing.
 */
#include <string.h>

#include "allocprof/hist.h"
#include "aptest.h"

/* sigbits 3, values {0, 5, 100, 100}: 100 falls in bucket [96, 103]. */
static const unsigned char golden_bin[] = {
	'A', 'P', 'H', 'G', 1, 3, 0, /* magic, version, sigbits, flags */
	0, 3,                        /* dropped, buckets */
	0, 100,                      /* min, max - min */
	0xcd, 0x01,                  /* sum 205 */
	0xb9, 0x9c, 0x01,            /* sumsq 20025 */
	0, 1, 4, 1, 30, 2};          /* keys 0, 5, 36 as deltas; counts */
static const char golden_json[] =
	"{\"format\":\"allocprof-hist\",\"version\":1,\"sigbits\":3,"
	"\"count\":4,\"min\":0,\"max\":100,\"sum\":205,\"sumsq\":20025,"
	"\"dropped\":0,\"buckets\":[[0,0,1],[5,5,1],[96,103,2]]}\n";

static ap_hist_snap *golden_snap(void)
{
	ap_hist *h;
	ap_hist_snap *s = NULL;
	if (ap_hist_create(&h, 3, NULL))
		return NULL;
	ap_hist_add(h, 0);
	ap_hist_add(h, 5);
	ap_hist_add_n(h, 100, 2);
	ap_hist_snapshot(h, NULL, &s);
	ap_hist_destroy(h);
	return s;
}

AP_TEST(binary_and_json_encodings_match_the_golden_bytes)
{
	ap_hist_snap *s = golden_snap();
	AP_CHECK(s);
	unsigned char *bin;
	char *json;
	size_t blen, jlen;
	AP_CHECK_EQ_INT(ap_hist_encode(s, NULL, &bin, &blen), 0);
	AP_CHECK_EQ_INT(ap_hist_encode_json(s, NULL, &json, &jlen), 0);
	AP_CHECK_EQ_U64(blen, sizeof golden_bin);
	AP_CHECK(!memcmp(bin, golden_bin, blen));
	AP_CHECK_MSG(jlen == strlen(golden_json) && !strcmp(json, golden_json),
		     "got %s", json);
	ap_hist_buffer_free(NULL, bin, blen);
	ap_hist_buffer_free(NULL, json, jlen);
	ap_hist_snap_destroy(s);
}

/* Decode, compare with want, re-encode and compare bytes. */
static int round_trip(const ap_hist_snap *want)
{
	unsigned char *bin, *bin2;
	char *json, *json2;
	size_t blen, blen2, jlen, jlen2;
	ap_hist_snap *a = NULL, *b = NULL;
	int ok = !ap_hist_encode(want, NULL, &bin, &blen) &&
		 !ap_hist_encode_json(want, NULL, &json, &jlen) &&
		 !ap_hist_decode(bin, blen, NULL, &a) &&
		 !ap_hist_decode_json(json, jlen, NULL, &b) &&
		 ap_hist_snap_equal(a, want) && ap_hist_snap_equal(b, want) &&
		 ap_hist_snap_dropped(a) == ap_hist_snap_dropped(want) &&
		 !ap_hist_encode(a, NULL, &bin2, &blen2) &&
		 !ap_hist_encode_json(b, NULL, &json2, &jlen2) &&
		 blen == blen2 && !memcmp(bin, bin2, blen) && jlen == jlen2 &&
		 !memcmp(json, json2, jlen);
	/* On failure some buffers leak; the test fails anyway. */
	if (ok) {
		ap_hist_buffer_free(NULL, bin, blen);
		ap_hist_buffer_free(NULL, bin2, blen2);
		ap_hist_buffer_free(NULL, json, jlen);
		ap_hist_buffer_free(NULL, json2, jlen2);
	}
	ap_hist_snap_destroy(a);
	ap_hist_snap_destroy(b);
	return ok ? 0 : -1;
}

AP_TEST(round_trip_is_exact_for_empty_extreme_saturated_and_wide_data)
{
	uint64_t x = 88172645463325252u;
	for (unsigned s = 1; s <= 15; s++) {
		for (int kind = 0; kind < 4; kind++) {
			ap_hist *h;
			ap_hist_snap *snap;
			AP_CHECK_EQ_INT(ap_hist_create(&h, s, NULL), 0);
			if (kind == 1) {
				ap_hist_add(h, 0);
				ap_hist_add(h, UINT64_MAX);
			} else if (kind == 2) { /* saturates the sum of squares */
				ap_hist_add_n(h, UINT64_MAX, 8);
				ap_hist_add(h, 3);
			} else if (kind == 3) {
				for (int i = 0; i < 2000; i++) {
					x ^= x << 13, x ^= x >> 7, x ^= x << 17;
					ap_hist_add(h, x >> (x % 64));
				}
			}
			AP_CHECK_EQ_INT(ap_hist_snapshot(h, NULL, &snap), 0);
			AP_CHECK_MSG(round_trip(snap) == 0, "sigbits %u kind %d",
				     s, kind);
			ap_hist_snap_destroy(snap);
			ap_hist_destroy(h);
		}
	}
}

AP_TEST(every_truncation_is_rejected)
{
	ap_hist_snap *s = NULL;
	for (size_t n = 0; n < sizeof golden_bin; n++)
		AP_CHECK_MSG(ap_hist_decode(golden_bin, n, NULL, &s) == AP_ECORRUPT,
			     "binary prefix %zu accepted", n);
	for (size_t n = 0; n + 2 < strlen(golden_json); n++)
		AP_CHECK_MSG(ap_hist_decode_json(golden_json, n, NULL, &s) ==
				     AP_ECORRUPT,
			     "json prefix %zu accepted", n);
	AP_CHECK(s == NULL);
	AP_CHECK_EQ_INT(ap_hist_decode(NULL, 0, NULL, &s), AP_ECORRUPT);
}

AP_TEST(every_bit_flip_is_rejected_or_decodes_to_a_canonical_snapshot)
{
	unsigned char buf[sizeof golden_bin];
	for (size_t i = 0; i < sizeof buf * 8; i++) {
		memcpy(buf, golden_bin, sizeof buf);
		buf[i / 8] ^= (unsigned char)(1u << (i % 8));
		ap_hist_snap *s = NULL;
		int rc = ap_hist_decode(buf, sizeof buf, NULL, &s);
		AP_CHECK(rc == 0 || rc == AP_ECORRUPT || rc == AP_EVERSION);
		if (rc)
			continue;
		unsigned char *again;
		size_t len;
		AP_CHECK_EQ_INT(ap_hist_encode(s, NULL, &again, &len), 0);
		AP_CHECK_MSG(len == sizeof buf && !memcmp(again, buf, len),
			     "flip %zu accepted but not canonical", i);
		ap_hist_buffer_free(NULL, again, len);
		ap_hist_snap_destroy(s);
	}
}

struct bad_bin {
	const char *why;
	size_t at;
	unsigned char byte;
	int rc;
};

AP_TEST(specific_binary_corruptions_are_named_errors)
{
	static const struct bad_bin cases[] = {
		{"magic", 0, 'X', AP_ECORRUPT},
		{"version 2", 4, 2, AP_EVERSION},
		{"version 0", 4, 0, AP_ECORRUPT},
		{"sigbits 0", 5, 0, AP_ECORRUPT},
		{"sigbits 16", 5, 16, AP_ECORRUPT},
		{"unknown flag", 6, 2, AP_ECORRUPT},
		{"more buckets than bytes", 8, 100, AP_ECORRUPT},
		{"min above first bucket", 9, 1, AP_ECORRUPT},
		{"sum below n * min", 11, 0x80, AP_ECORRUPT},
		{"zero count", 17, 0, AP_ECORRUPT},
		{"key past the range", 20, 0x7f, AP_ECORRUPT},
	};
	unsigned char buf[sizeof golden_bin + 1];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(buf, golden_bin, sizeof golden_bin);
		buf[cases[i].at] = cases[i].byte;
		ap_hist_snap *s = NULL;
		AP_CHECK_MSG(ap_hist_decode(buf, sizeof golden_bin, NULL, &s) ==
				     cases[i].rc,
			     "%s", cases[i].why);
	}
	memcpy(buf, golden_bin, sizeof golden_bin);
	buf[sizeof golden_bin] = 0;
	ap_hist_snap *s = NULL;
	AP_CHECK_EQ_INT(ap_hist_decode(buf, sizeof buf, NULL, &s), AP_ECORRUPT);
	/* Overlong varint: dropped = 0 written as 0x80 0x00. */
	static const unsigned char overlong[] = {'A', 'P', 'H', 'G', 1, 3, 0,
						 0x80, 0x00, 0};
	AP_CHECK_EQ_INT(ap_hist_decode(overlong, sizeof overlong, NULL, &s),
			AP_ECORRUPT);
	static const unsigned char empty[] = {'A', 'P', 'H', 'G', 1, 3, 0, 0, 0};
	AP_CHECK_EQ_INT(ap_hist_decode(empty, sizeof empty, NULL, &s), 0);
	AP_CHECK(ap_hist_snap_count(s) == 0);
	ap_hist_snap_destroy(s);
}

AP_TEST(json_accepts_any_key_order_whitespace_and_unknown_keys)
{
	static const char doc[] =
		" {\n \"buckets\" : [ [96,103,2] , [0,0,1],[5,5,1] ] ,"
		"\"x-note\": {\"a\": [1, -2.5e3, true, null, \"s\\\"q\\u00e9\"]},"
		"\"sum\":205, \"sumsq\":20025, \"min\":0, \"max\":100,"
		"\"count\":4, \"sigbits\":3, \"version\":1,"
		"\"\\u0066ormat\":\"allocprof-hist\"}\n";
	ap_hist_snap *s = NULL, *want = golden_snap();
	AP_CHECK(want);
	/* Buckets out of order are rejected; in order they are fine. */
	AP_CHECK_EQ_INT(ap_hist_decode_json(doc, strlen(doc), NULL, &s),
			AP_ECORRUPT);
	char fixed[sizeof doc];
	memcpy(fixed, doc, sizeof doc);
	char *p = strstr(fixed, "[96,103,2] , [0,0,1],[5,5,1]");
	AP_CHECK(p);
	memcpy(p, "[0,0,1] , [5,5,1],[96,103,2]", 28);
	AP_CHECK_EQ_INT(ap_hist_decode_json(fixed, strlen(fixed), NULL, &s), 0);
	AP_CHECK(ap_hist_snap_equal(s, want));
	ap_hist_snap_destroy(s);
	ap_hist_snap_destroy(want);
}

AP_TEST(json_corruptions_are_rejected)
{
	static const struct {
		const char *from, *to;
		int rc;
	} cases[] = {
		{"\"version\":1", "\"version\":2", AP_EVERSION},
		{"\"version\":1", "\"version\":0", AP_ECORRUPT},
		{"\"format\":\"allocprof-hist\"", "\"format\":\"hdr\"", AP_ECORRUPT},
		{"\"count\":4", "\"count\":5", AP_ECORRUPT},
		{"\"count\":4", "\"count\":4.0", AP_ECORRUPT},
		{"\"count\":4", "\"count\":04", AP_ECORRUPT},
		{"\"count\":4", "\"count\":-4", AP_ECORRUPT},
		{"\"count\":4", "\"count\":4,\"count\":4", AP_ECORRUPT},
		{"\"sigbits\":3,", "", AP_ECORRUPT},
		{"\"sigbits\":3", "\"sigbits\":16", AP_ECORRUPT},
		{"\"sigbits\":3", "\"sigbits\":99999999999999999999", AP_ECORRUPT},
		{"[96,103,2]", "[96,102,2]", AP_ECORRUPT},
		{"[96,103,2]", "[97,103,2]", AP_ECORRUPT},
		{"[5,5,1]", "[5,5,0]", AP_ECORRUPT},
		{"\"min\":0", "\"min\":null", AP_ECORRUPT},
		{"\"sum\":205", "\"sum\":2050", AP_ECORRUPT},
		{"\"sumsq\":20025", "\"sumsq\":20", AP_ECORRUPT},
		{"}\n", "}x", AP_ECORRUPT},
		{"\"dropped\":0,", "\"z\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
				   "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]"
				   "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
				   "]]]]]]]]]]]]]]]]],", AP_ECORRUPT},
		{"\"dropped\":0,", "\"z\":\"\\x\",", AP_ECORRUPT},
		{"\"dropped\":0,", "\"z\":\"\x01\",", AP_ECORRUPT},
		{"\"dropped\":0,", "\"z\":1.,", AP_ECORRUPT},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char doc[512];
		const char *at = strstr(golden_json, cases[i].from);
		AP_CHECK(at);
		size_t pre = (size_t)(at - golden_json);
		snprintf(doc, sizeof doc, "%.*s%s%s", (int)pre, golden_json,
			 cases[i].to, at + strlen(cases[i].from));
		ap_hist_snap *s = NULL;
		int rc = ap_hist_decode_json(doc, strlen(doc), NULL, &s);
		AP_CHECK_MSG(rc == cases[i].rc, "case %zu (%s): rc %d", i,
			     cases[i].to, rc);
	}
}

AP_TEST(encoders_reject_null_arguments)
{
	unsigned char *b;
	char *j;
	size_t n;
	AP_CHECK_EQ_INT(ap_hist_encode(NULL, NULL, &b, &n), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_encode_json(NULL, NULL, &j, &n), AP_EINVAL);
	ap_hist_snap *s = NULL;
	AP_CHECK_EQ_INT(ap_hist_decode(golden_bin, sizeof golden_bin, NULL, NULL),
			AP_EINVAL);
	AP_CHECK_EQ_INT(ap_hist_decode_json(NULL, 5, NULL, &s), AP_EINVAL);
}
