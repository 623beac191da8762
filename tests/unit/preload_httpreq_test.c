/*
 * httpreq_test.c: the HTTP/1.x request-head parser (src/lib/httpreq.h):
 * what a well-formed head yields, that every prefix of it is INCOMPLETE,
 * and that malformed, oversized and unsupported heads get the error their
 * HTTP status needs (400, 431, 505). Also the Accept matcher that chooses
 * the Prometheus protobuf format.
 */
#include <string.h>

#include "aptest.h"
#include "httpreq.h"

static int parse(const char *s, httpreq *r)
{
	return httpreq_parse(s, strlen(s), 0, r);
}

AP_TEST(parses_a_curl_request)
{
	const char *s = "GET /debug/pprof/heap?gc=1 HTTP/1.1\r\n"
			"Host: 127.0.0.1:8080\r\n"
			"User-Agent: curl/7.88.1\r\n"
			"Accept: */*\r\n\r\n";
	httpreq r;
	AP_CHECK_EQ_INT(parse(s, &r), 0);
	AP_CHECK_EQ_INT(r.method, HTTPREQ_GET);
	AP_CHECK(httpreq_str_eq(r.path, "/debug/pprof/heap"));
	AP_CHECK(httpreq_str_eq(r.query, "gc=1"));
	AP_CHECK(httpreq_str_eq(r.target, "/debug/pprof/heap?gc=1"));
	AP_CHECK_EQ_INT(r.version_minor, 1);
	AP_CHECK_EQ_U64(r.nheaders, 3);
	AP_CHECK_EQ_U64(r.head_len, strlen(s));
	const httpreq_str *ua = httpreq_header_value(&r, "user-agent");
	AP_CHECK(ua && httpreq_str_eq(*ua, "curl/7.88.1"));
	AP_CHECK(httpreq_header_value(&r, "cookie") == NULL);
}

AP_TEST(head_len_stops_before_pipelined_bytes)
{
	const char *s = "HEAD / HTTP/1.0\n\nGET /x HTTP/1.0\n\n";
	httpreq r;
	AP_CHECK_EQ_INT(parse(s, &r), 0);
	AP_CHECK_EQ_INT(r.method, HTTPREQ_HEAD);
	AP_CHECK_EQ_INT(r.version_minor, 0);
	AP_CHECK_EQ_U64(r.head_len, strlen("HEAD / HTTP/1.0\n\n"));
	AP_CHECK_EQ_U64(r.nheaders, 0);
}

AP_TEST(every_proper_prefix_is_incomplete)
{
	const char *s = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n";
	size_t n = strlen(s);
	httpreq r;
	for (size_t k = 0; k < n; k++)
		AP_CHECK_MSG(httpreq_parse(s, k, 0, &r) == HTTPREQ_INCOMPLETE,
			     "prefix of %zu bytes", k);
	AP_CHECK_EQ_INT(httpreq_parse(s, n, 0, &r), 0);
}

AP_TEST(leading_empty_lines_are_skipped)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("\r\n\nGET / HTTP/1.0\r\n\r\n", &r), 0);
	AP_CHECK(httpreq_str_eq(r.path, "/"));
}

AP_TEST(field_values_are_trimmed_and_may_be_empty)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nHost:\t h \t\r\nX-Empty:\r\n\r\n", &r), 0);
	AP_CHECK(httpreq_str_eq(*httpreq_header_value(&r, "HOST"), "h"));
	AP_CHECK(httpreq_str_eq(*httpreq_header_value(&r, "x-empty"), ""));
}

AP_TEST(absolute_form_targets_give_their_path)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("GET http://h:1/metrics?a HTTP/1.1\r\nHost: h:1\r\n\r\n", &r), 0);
	AP_CHECK(httpreq_str_eq(r.path, "/metrics"));
	AP_CHECK(httpreq_str_eq(r.query, "a"));
	AP_CHECK_EQ_INT(parse("GET HTTP://h HTTP/1.0\r\n\r\n", &r), 0);
	AP_CHECK(httpreq_str_eq(r.path, "/"));
	AP_CHECK_EQ_INT(parse("GET http:///x HTTP/1.0\r\n\r\n", &r), AP_ECORRUPT);
}

AP_TEST(unknown_methods_parse_as_other)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("BREW /pot HTTP/1.0\r\n\r\n", &r), 0);
	AP_CHECK_EQ_INT(r.method, HTTPREQ_OTHER);
	AP_CHECK_EQ_INT(parse("get / HTTP/1.0\r\n\r\n", &r), 0);
	AP_CHECK_EQ_INT(r.method, HTTPREQ_OTHER); /* methods are case-sensitive */
	AP_CHECK_EQ_INT(parse("POST / HTTP/1.0\r\n\r\n", &r), 0);
	AP_CHECK_EQ_INT(r.method, HTTPREQ_POST);
}

AP_TEST(malformed_request_lines_are_corrupt)
{
	static const char *const bad[] = {
		"GET\r\n\r\n",
		"GET /\r\n\r\n",
		"GET  / HTTP/1.0\r\n\r\n",       /* two spaces */
		"GET / HTTP/1.0 \r\n\r\n",       /* trailing space */
		" GET / HTTP/1.0\r\n\r\n",
		"GET / http/1.0\r\n\r\n",        /* version is case-sensitive */
		"GET / HTTP/1\r\n\r\n",
		"GET / HTTP/1.10\r\n\r\n",
		"GET / HTTP/x.1\r\n\r\n",
		"G(T / HTTP/1.0\r\n\r\n",        /* '(' is not a token byte */
		"GET relative HTTP/1.0\r\n\r\n", /* neither origin nor absolute form */
		"GET * HTTP/1.0\r\n\r\n",
		"GET /\x7f HTTP/1.0\r\n\r\n",
		"GET /\xc3\xa9 HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.0\rX\r\n\r\n",     /* bare CR */
	};
	httpreq r;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		AP_CHECK_MSG(parse(bad[i], &r) == AP_ECORRUPT, "case %zu", i);
}

AP_TEST(malformed_fields_are_corrupt)
{
	static const char *const bad[] = {
		"GET / HTTP/1.0\r\nHost : x\r\n\r\n",    /* space before colon */
		"GET / HTTP/1.0\r\nHost: x\r\n folded\r\n\r\n",
		"GET / HTTP/1.0\r\nNoColon\r\n\r\n",
		"GET / HTTP/1.0\r\n: novalue\r\n\r\n",
		"GET / HTTP/1.0\r\nX: a\001b\r\n\r\n",
		"GET / HTTP/1.0\r\nX: a\x7f\r\n\r\n",
		"GET / HTTP/1.0\r\nX\x80: a\r\n\r\n",
		"GET / HTTP/1.0\r\nX: a\rb\r\n\r\n",
	};
	httpreq r;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		AP_CHECK_MSG(parse(bad[i], &r) == AP_ECORRUPT, "case %zu", i);
	/* obs-text (bytes >= 0x80) is allowed in values. */
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nX: caf\xc3\xa9\r\n\r\n", &r), 0);
}

AP_TEST(an_embedded_nul_is_corrupt_not_a_terminator)
{
	const char s[] = "GET / HTTP/1.0\r\nX: a\0b\r\n\r\n";
	httpreq r;
	AP_CHECK_EQ_INT(httpreq_parse(s, sizeof s - 1, 0, &r), AP_ECORRUPT);
}

AP_TEST(http11_needs_exactly_one_host)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.1\r\n\r\n", &r), AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", &r),
			AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", &r),
			AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\n\r\n", &r), 0);
}

/* RFC 9112 6.3: differing or malformed Content-Length values are 400. */
AP_TEST(conflicting_content_lengths_are_corrupt)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: 5\r\n"
			      "Content-Length: 6\r\n\r\n", &r), AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: 5, 6\r\n\r\n", &r),
			AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: -1\r\n\r\n", &r),
			AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: 5,\r\n\r\n", &r),
			AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: "
			      "99999999999999999999999\r\n\r\n", &r), AP_ECORRUPT);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: 5\r\n"
			      "content-length: 05\r\n\r\n", &r), 0);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nContent-Length: 5 , 5\r\n\r\n", &r),
			0);
}

AP_TEST(other_versions_are_unsupported)
{
	httpreq r;
	AP_CHECK_EQ_INT(parse("GET / HTTP/2.0\r\n\r\n", &r), AP_EVERSION);
	AP_CHECK_EQ_INT(parse("GET / HTTP/1.2\r\n\r\n", &r), AP_EVERSION);
	AP_CHECK_EQ_INT(parse("GET / HTTP/0.9\r\n\r\n", &r), AP_EVERSION);
}

AP_TEST(heads_over_the_bound_are_too_large)
{
	char buf[300];
	memset(buf, 'a', sizeof buf);
	memcpy(buf, "GET /", 5);
	httpreq r;
	/* No line end within max_head bytes: 431, however much arrived. */
	AP_CHECK_EQ_INT(httpreq_parse(buf, 100, 100, &r), AP_ERANGE);
	AP_CHECK_EQ_INT(httpreq_parse(buf, sizeof buf, 100, &r), AP_ERANGE);
	AP_CHECK_EQ_INT(httpreq_parse(buf, 99, 100, &r), HTTPREQ_INCOMPLETE);
	/* A head that ends exactly at the bound is accepted. */
	const char *s = "GET / HTTP/1.0\r\n\r\n";
	AP_CHECK_EQ_INT(httpreq_parse(s, strlen(s), strlen(s), &r), 0);
	AP_CHECK_EQ_INT(httpreq_parse(s, strlen(s), strlen(s) - 1, &r), AP_ERANGE);
}

AP_TEST(too_many_fields_are_too_large)
{
	char buf[4096];
	size_t n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.0\r\n");
	for (int i = 0; i < HTTPREQ_MAX_HEADERS; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "X%d: v\r\n", i);
	memcpy(buf + n, "\r\n", 3);
	httpreq r;
	AP_CHECK_EQ_INT(httpreq_parse(buf, n + 2, 0, &r), 0);
	AP_CHECK_EQ_U64(r.nheaders, HTTPREQ_MAX_HEADERS);
	memcpy(buf + n, "Y: v\r\n\r\n", 9);
	AP_CHECK_EQ_INT(httpreq_parse(buf, n + 8, 0, &r), AP_ERANGE);
}

AP_TEST(null_arguments_are_invalid)
{
	httpreq r;
	AP_CHECK_EQ_INT(httpreq_parse(NULL, 0, 0, &r), AP_EINVAL);
	AP_CHECK_EQ_INT(httpreq_parse("x", 1, 0, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(httpreq_parse("", 0, 0, &r), HTTPREQ_INCOMPLETE);
}

static const char *const proto_params[] = {
	"proto=io.prometheus.client.MetricFamily", "encoding=delimited"
};

static bool accepts_proto(const char *v)
{
	return httpreq_accepts(v, strlen(v), "application/vnd.google.protobuf",
			       proto_params, 2);
}

AP_TEST(accept_matches_prometheus_protobuf_negotiation)
{
	/* What Prometheus 2.42 sends with native histograms enabled. */
	AP_CHECK(accepts_proto(
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
		"encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1"));
	AP_CHECK(accepts_proto("text/plain, Application/Vnd.Google.Protobuf ; "
			       "ENCODING=\"delimited\" ; proto=io.prometheus.client.MetricFamily"));
	/* Its default without the feature flag: text only. */
	AP_CHECK(!accepts_proto("text/plain;version=0.0.4;q=1,*/*;q=0.1"));
	AP_CHECK(!accepts_proto("application/vnd.google.protobuf;"
				"proto=io.prometheus.client.MetricFamily;encoding=text"));
	AP_CHECK(!accepts_proto("application/vnd.google.protobuf;"
				"proto=io.prometheus.client.MetricFamily;"
				"encoding=delimited;q=0.000"));
	AP_CHECK(!accepts_proto("application/vnd.google.protobuf"));
	AP_CHECK(!accepts_proto(""));
	AP_CHECK(!accepts_proto("\"application/vnd.google.protobuf,;;=\""));
	AP_CHECK(httpreq_accepts("text/plain", 10, "text/plain", NULL, 0));
}

AP_TEST(a_line_that_cannot_become_a_request_is_corrupt_before_its_end)
{
	httpreq r;
	/* A TLS ClientHello: no line end will come, so do not wait for one. */
	AP_CHECK_EQ_INT(httpreq_parse("\x16\x03\x01\x02", 4, 0, &r), AP_ECORRUPT);
	AP_CHECK_EQ_INT(httpreq_parse(" GET", 4, 0, &r), AP_ECORRUPT);
	AP_CHECK_EQ_INT(httpreq_parse("GE", 2, 0, &r), HTTPREQ_INCOMPLETE);
	AP_CHECK_EQ_INT(httpreq_parse("GET /\x01", 6, 0, &r), HTTPREQ_INCOMPLETE);
	AP_CHECK_EQ_INT(httpreq_parse("\r", 1, 0, &r), HTTPREQ_INCOMPLETE);
	AP_CHECK_EQ_INT(httpreq_parse("\r\n\r", 3, 0, &r), HTTPREQ_INCOMPLETE);
}
