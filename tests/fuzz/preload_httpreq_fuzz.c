/*
 * httpreq_fuzz.c: libFuzzer target for the HTTP request-head parser
 * (src/lib/httpreq.h). The input is parsed whole and at every bound the
 * server could use; results must point inside the input, a complete head
 * must fit its bound, and every prefix of a complete head must be
 * INCOMPLETE or complete too (a parser that accepted a head and rejected a
 * prefix of it would make the answer depend on how TCP split the bytes).
 * The first header's value also goes through the Accept matcher.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_inside(httpreq_str s, const char *buf, size_t size)
{
	if (s.n == 0)
		return;
	/* The absolute-form default path "/" is a literal, not input. */
	if (s.n == 1 && s.p[0] == '/' && (s.p < buf || s.p >= buf + size))
		return;
	if (s.p < buf || s.p + s.n > buf + size)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	static const size_t bounds[] = { 0, 16, 256, 8192 };
	httpreq r;
	for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
		int rc = httpreq_parse(buf, size, bounds[b], &r);
		if (rc != 0)
			continue;
		size_t bound = bounds[b] ? bounds[b] : 8192;
		if (r.head_len == 0 || r.head_len > size || r.head_len > bound)
			abort();
		if (r.nheaders > HTTPREQ_MAX_HEADERS)
			abort();
		check_inside(r.method_name, buf, size);
		check_inside(r.target, buf, size);
		check_inside(r.path, buf, size);
		check_inside(r.query, buf, size);
		for (size_t i = 0; i < r.nheaders; i++) {
			check_inside(r.headers[i].name, buf, size);
			check_inside(r.headers[i].value, buf, size);
		}
		httpreq p;
		for (size_t k = 0; k < r.head_len; k++) {
			int prc = httpreq_parse(buf, k, bounds[b], &p);
			if (prc != HTTPREQ_INCOMPLETE && prc != 0)
				abort();
		}
		if (r.nheaders > 0) {
			static const char *const params[] = { "encoding=delimited" };
			httpreq_accepts(r.headers[0].value.p, r.headers[0].value.n,
					"application/vnd.google.protobuf", params, 1);
		}
	}
	static const char *const params[] = { "a=b", "q=1" };
	httpreq_accepts(buf, size, "text/plain", params, 2);
	return 0;
}
