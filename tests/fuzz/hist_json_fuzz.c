/*
 * hist_json_fuzz.c: libFuzzer target for ap_hist_decode_json. Whatever
 * decodes must survive the round trip JSON -> snapshot -> JSON -> snapshot
 * and JSON -> snapshot -> binary -> snapshot with equal snapshots, and its
 * canonical JSON must re-encode to itself. Anything else traps.
 */
#include <string.h>

#include "allocprof/hist.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ap_hist_snap *s, *a, *b;
	if (ap_hist_decode_json(data, size, NULL, &s))
		return 0;
	char *json, *json2;
	unsigned char *bin;
	size_t jlen, jlen2, blen;
	REQUIRE(!ap_hist_encode_json(s, NULL, &json, &jlen));
	REQUIRE(!ap_hist_decode_json(json, jlen, NULL, &a));
	REQUIRE(ap_hist_snap_equal(s, a));
	REQUIRE(!ap_hist_encode_json(a, NULL, &json2, &jlen2));
	REQUIRE(jlen == jlen2 && !memcmp(json, json2, jlen));
	REQUIRE(!ap_hist_encode(s, NULL, &bin, &blen));
	REQUIRE(!ap_hist_decode(bin, blen, NULL, &b));
	REQUIRE(ap_hist_snap_equal(s, b));
	ap_hist_buffer_free(NULL, json, jlen);
	ap_hist_buffer_free(NULL, json2, jlen2);
	ap_hist_buffer_free(NULL, bin, blen);
	ap_hist_snap_destroy(a);
	ap_hist_snap_destroy(b);
	ap_hist_snap_destroy(s);
	return 0;
}
