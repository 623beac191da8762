/*
 * preload_http_test.c: the runtime's HTTP endpoint (src/preload/http.h,
 * metrics.h) served from a real stack table fed known exact samples
 * (weight 1, so every estimate is the truth and every interval collapses
 * to it), over real loopback sockets: endpoints, status codes for bad,
 * oversized, unsupported and slow requests, the protobuf negotiation, the
 * connection limit and a bounded stop. The server runs its own thread;
 * this file is AP_TEST_THREADED so CI runs it under ThreadSanitizer.
 */
#include <arpa/inet.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "allocprof/estimate.h"
#include "allocprof/profile.h"
#include "aptest.h"
#include "http.h"
#include "protobuf.h"

static const uintptr_t stack_a[] = { 0x1000, 0x2000 };
static const uintptr_t stack_b[] = { 0x5000 };

typedef struct fixture {
	arena a;
	stack_table t;
	http_server *s;
	uint16_t port;
} fixture;

/* Serve f's table on listen (an http= value) with period R. */
static int start_on(fixture *f, const char *listen, uint64_t period)
{
	http_listen l;
	char err[160];
	if (http_parse_listen(listen, strlen(listen), &l, err, sizeof err) != 0)
		return -1;
	http_source src = { .table = &f->t, .a = &f->a, .period = period,
			    .start_realtime_ns = 1, .with_mappings = false };
	if (http_server_start(&l, &src, &f->s, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	f->port = http_server_port(f->s);
	return 0;
}

/* Exact samples: 3 x 100 bytes at stack a (one freed), 1 x 5000 at b. */
static int setup(fixture *f)
{
	memset(f, 0, sizeof *f);
	arena_init(&f->a);
	if (table_init(&f->t, &f->a) != 0)
		return -1;
	ap_sample_info info;
	memset(&info, 0, sizeof info);
	info.count = 1;
	info.prob = info.weight = 1;
	info.exact = true;
	sample_rec rec;
	info.size = 100;
	for (int i = 0; i < 3; i++)
		if (table_record_alloc(&f->t, stack_a, 2, 1, &info, 112, &rec, NULL) != 0)
			return -1;
	rec.t_ns = 0;
	table_record_free(&f->t, &rec, 1000);
	info.size = 5000;
	if (table_record_alloc(&f->t, stack_b, 1, 1, &info, 5008, &rec, NULL) != 0)
		return -1;
	return start_on(f, "0", 1);
}

static int dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read until EOF (at most cap - 1 bytes, 8 s); NUL-terminate. */
static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (n + 1 < cap && poll(&p, 1, 8000) > 0) {
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

typedef struct reply {
	int status;
	char *head;   /* NUL-terminated head text */
	char *body;
	size_t body_len;
	char raw[1 << 20];
} reply;

static int ask(uint16_t port, const char *req, size_t req_len, reply *r)
{
	memset(r, 0, offsetof(reply, raw));
	int fd = dial(port);
	if (fd < 0)
		return -1;
	if (send(fd, req, req_len, MSG_NOSIGNAL) != (ssize_t)req_len) {
		close(fd);
		return -1;
	}
	size_t n = read_all(fd, r->raw, sizeof r->raw);
	close(fd);
	char *end = strstr(r->raw, "\r\n\r\n");
	if (!end || sscanf(r->raw, "HTTP/1.1 %d", &r->status) != 1)
		return -1;
	*end = '\0';
	r->head = r->raw;
	r->body = end + 4;
	r->body_len = n - (size_t)(r->body - r->raw);
	return 0;
}

static int get(uint16_t port, const char *path, const char *extra, reply *r)
{
	char req[1024];
	int k = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n%s\r\n", path,
			 extra ? extra : "");
	return ask(port, req, (size_t)k, r);
}

static reply R; /* 1 MiB: not on the stack */

AP_TEST(metrics_text_carries_exact_totals)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	http_server_stop(f.s);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK(strstr(R.head, "Content-Type: text/plain; version=0.0.4"));
	/* 3 x 100 + 5000 allocated; one 100 freed. Weights are 1: exact. */
	AP_CHECK(strstr(R.body, "\nallocprof_allocated_bytes_total 5300\n"));
	AP_CHECK(strstr(R.body, "\nallocprof_allocated_objects_total 4\n"));
	AP_CHECK(strstr(R.body, "\nallocprof_inuse_bytes 5200\n"));
	AP_CHECK(strstr(R.body, "\nallocprof_inuse_objects 3\n"));
	/* Every sample certain: the interval is the point. */
	AP_CHECK(strstr(R.body, "\nallocprof_inuse_bytes_lower{level=\"0.95\"} 5200\n"));
	AP_CHECK(strstr(R.body, "\nallocprof_inuse_bytes_upper{level=\"0.95\"} 5200\n"));
	AP_CHECK(strstr(R.body, "\nallocprof_sampled_allocations_total 4\n"));
	AP_CHECK(strstr(R.body, "\nallocprof_sampled_frees_total 1\n"));
	AP_CHECK(strstr(R.body, "# TYPE allocprof_allocation_size_bytes histogram\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_bucket{le=\"128\"} 3\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_bucket{le=\"4096\"} 3\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_bucket{le=\"8192\"} 4\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_count 4\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_sum 5300\n"));
}

static int64_t value_of(const ap_profile *p, const char *type)
{
	int k = ap_profile_find_sample_type(p, type);
	int64_t sum = 0;
	for (size_t i = 0; k >= 0 && i < p->nsamples; i++)
		sum += p->samples[i].values[k];
	return k >= 0 ? sum : -1;
}

AP_TEST(heap_and_allocs_are_gzipped_pprof_with_their_default_type)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	static const char *const paths[] = { "/debug/pprof/heap", "/debug/pprof/allocs" };
	static const char *const defaults[] = { "inuse_space", "alloc_space" };
	for (int i = 0; i < 2; i++) {
		AP_CHECK_EQ_INT(get(f.port, paths[i], NULL, &R), 0);
		AP_CHECK_EQ_INT(R.status, 200);
		AP_CHECK(strstr(R.head, "Content-Type: application/octet-stream"));
		AP_CHECK(strstr(R.head, "Content-Disposition: attachment"));
		AP_CHECK(R.body_len > 2 && (unsigned char)R.body[0] == 0x1f);
		ap_profile *p = NULL;
		char err[160];
		AP_CHECK_EQ_INT(ap_pprof_decode((const unsigned char *)R.body, R.body_len,
						NULL, &p, err, sizeof err), 0);
		AP_CHECK(strcmp(ap_profile_string(p, p->default_sample_type), defaults[i]) == 0);
		AP_CHECK_EQ_INT(value_of(p, "alloc_space"), 5300);
		AP_CHECK_EQ_INT(value_of(p, "inuse_space"), 5200);
		AP_CHECK_EQ_INT(value_of(p, "inuse_objects"), 3);
		ap_profile_destroy(p);
	}
	http_server_stop(f.s);
}

/* The shared arena's bytes in use once the server is done with the last
 * request (it frees a connection's buffers after sending the reply):
 * the value unchanged over 10 reads 10 ms apart, or the last after 3 s. */
static size_t arena_settled(arena *a)
{
	size_t v = SIZE_MAX;
	int same = 0;
	for (int i = 0; i < 300 && same < 10; i++) {
		arena_lock(a);
		size_t now = a->in_use;
		arena_unlock(a);
		same = now == v ? same + 1 : 0;
		v = now;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return v;
}

/*
 * A long-running service is scraped for ever: each profile is built in a
 * scratch arena, and nothing of it may stay in the shared one. The sites'
 * copy used to come from the table's arena and go back to the scratch
 * one, leaking it from the shared arena at every request (16 KiB a
 * request on a program of 150 sites: 90 MiB a day at one scrape every
 * 15 s).
 */
AP_TEST(serving_profiles_leaves_the_shared_arena_as_it_was)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	static const char *const paths[] = { "/debug/pprof/heap", "/debug/pprof/allocs",
					     "/debug/pprof/heap?debug=1", "/metrics" };
	/* once each first: whatever the server sets up on first use */
	for (size_t i = 0; i < 4; i++)
		AP_CHECK_EQ_INT(get(f.port, paths[i], NULL, &R), 0);
	size_t base = arena_settled(&f.a);
	for (int k = 0; k < 25; k++)
		for (size_t i = 0; i < 4; i++) {
			AP_CHECK_EQ_INT(get(f.port, paths[i], NULL, &R), 0);
			AP_CHECK_EQ_INT(R.status, 200);
		}
	AP_CHECK_EQ_U64(arena_settled(&f.a), base);
	http_server_stop(f.s);
}

AP_TEST(status_codes_for_paths_methods_and_bad_requests)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	static const struct {
		const char *req;
		int status;
	} cases[] = {
		{ "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", 404 },
		{ "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", 405 },
		{ "DELETE /debug/pprof/heap HTTP/1.0\r\n\r\n", 405 },
		{ "GET /metrics HTTP/1.1\r\n\r\n", 400 },            /* no Host */
		{ "GET /metrics HTTP/1.1\r\nHost : t\r\n\r\n", 400 },
		{ "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n", 400 }, /* TLS */
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.0\r\n\r\n", 200 },
		{ "GET /debug/pprof/ HTTP/1.0\r\n\r\n", 200 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		AP_CHECK_EQ_INT(ask(f.port, cases[i].req, strlen(cases[i].req), &R), 0);
		AP_CHECK_MSG(R.status == cases[i].status, "case %zu: %d", i, R.status);
		if (R.status == 405)
			AP_CHECK(strstr(R.head, "\r\nAllow: GET, HEAD"));
	}
	http_server_stop(f.s);
}

AP_TEST(head_gets_the_headers_without_the_body)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	const char *req = "HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
	AP_CHECK_EQ_INT(ask(f.port, req, strlen(req), &R), 0);
	http_server_stop(f.s);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK_EQ_U64(R.body_len, 0);
	AP_CHECK(strstr(R.head, "Content-Length: 0") == NULL);
}

AP_TEST(an_oversized_head_gets_431)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	static char big[3 * HTTP_MAX_HEAD];
	size_t n = (size_t)snprintf(big, sizeof big, "GET /metrics HTTP/1.1\r\nHost: t\r\nX: ");
	memset(big + n, 'a', sizeof big - n);
	AP_CHECK_EQ_INT(ask(f.port, big, sizeof big, &R), 0);
	http_server_stop(f.s);
	AP_CHECK_EQ_INT(R.status, 431);
}

/* What a Histogram message (io.prometheus.client) holds, decoded here
 * independently of the encoder. */
typedef struct native_info {
	int schema;             /* -98: no schema field (not native) */
	uint64_t count, zero;   /* sample_count, zero_count */
	uint64_t buckets;       /* sum of the bucket counts the deltas give */
	uint64_t ndeltas, span_len;
} native_info;

static uint64_t unzig(uint64_t v)
{
	return (v >> 1) ^ (uint64_t)-(int64_t)(v & 1);
}

static int read_histogram(pb_reader *h, native_info *ni)
{
	uint32_t f;
	enum pb_wire w;
	uint64_t v, cur = 0;
	while (apx_pb_more(h) && apx_pb_get_tag(h, &f, &w) == 0) {
		pb_reader sub;
		if (w == PB_VARINT && (f == 1 || f == 5 || f == 7)) {
			if (apx_pb_get_varint(h, &v) != 0)
				return -1;
			if (f == 1)
				ni->count = v;
			else if (f == 5)
				ni->schema = (int)(int64_t)unzig(v);
			else
				ni->zero = v;
		} else if (f == 12 && w == PB_LEN && apx_pb_get_len(h, &sub) == 0) {
			uint32_t sf;
			enum pb_wire sw;
			while (apx_pb_more(&sub) && apx_pb_get_tag(&sub, &sf, &sw) == 0)
				if (apx_pb_get_varint(&sub, &v) != 0)
					return -1;
				else if (sf == 2)
					ni->span_len += v;
		} else if (f == 13 && w == PB_LEN && apx_pb_get_len(h, &sub) == 0) {
			while (apx_pb_more(&sub)) {
				if (apx_pb_get_varint(&sub, &v) != 0)
					return -1;
				cur += unzig(v); /* deltas wrap like int64 */
				ni->buckets += cur;
				ni->ndeltas++;
			}
		} else if (apx_pb_skip(h, f, w) != 0) {
			return -1;
		}
	}
	return 0;
}

/* Length-delimited MetricFamily messages: find the one named name and
 * decode the Histogram of its first metric into *ni. 0, or -1. */
static int find_histogram(const unsigned char *p, size_t n, const char *name,
			  native_info *ni)
{
	pb_reader r = { .p = p, .len = n };
	while (apx_pb_more(&r)) {
		uint64_t len;
		if (apx_pb_get_varint(&r, &len) != 0 || len > r.len - r.pos)
			return -1;
		pb_reader fam = { .p = r.p + r.pos, .len = (size_t)len };
		r.pos += (size_t)len;
		bool match = false;
		native_info got = { .schema = -98 };
		uint32_t field;
		enum pb_wire wt;
		while (apx_pb_more(&fam) && apx_pb_get_tag(&fam, &field, &wt) == 0) {
			pb_reader sub, h;
			if (field == 1 && wt == PB_LEN && apx_pb_get_len(&fam, &sub) == 0) {
				match = sub.len == strlen(name) && memcmp(sub.p, name, sub.len) == 0;
			} else if (field == 4 && wt == PB_LEN && apx_pb_get_len(&fam, &sub) == 0) {
				uint32_t f2;
				enum pb_wire w2;
				while (apx_pb_more(&sub) && apx_pb_get_tag(&sub, &f2, &w2) == 0) {
					if (f2 == 7 && w2 == PB_LEN && apx_pb_get_len(&sub, &h) == 0) {
						if (read_histogram(&h, &got) != 0)
							return -1;
					} else if (apx_pb_skip(&sub, f2, w2) != 0) {
						return -1;
					}
				}
			} else if (apx_pb_skip(&fam, field, wt) != 0) {
				return -1;
			}
		}
		if (match) {
			*ni = got;
			return 0;
		}
	}
	return -1;
}

static int family_schema(const unsigned char *p, size_t n, const char *name)
{
	native_info ni;
	return find_histogram(p, n, name, &ni) == 0 ? ni.schema : -99;
}

AP_TEST(metrics_protobuf_when_asked_with_a_native_histogram)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	AP_CHECK_EQ_INT(get(f.port, "/metrics",
			    "Accept: application/vnd.google.protobuf;"
			    "proto=io.prometheus.client.MetricFamily;encoding=delimited;"
			    "q=0.7,text/plain;version=0.0.4;q=0.3\r\n",
			    &R),
			0);
	http_server_stop(f.s);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK(strstr(R.head, "Content-Type: application/vnd.google.protobuf; "
				"proto=io.prometheus.client.MetricFamily; encoding=delimited"));
	AP_CHECK_EQ_INT(family_schema((const unsigned char *)R.body, R.body_len,
				      "allocprof_allocation_size_bytes"),
			METRICS_NATIVE_SCHEMA);
	AP_CHECK(family_schema((const unsigned char *)R.body, R.body_len,
			       "allocprof_inuse_bytes") == -98); /* a gauge */
	/* The native buckets hold every observation: Prometheus checks that
	 * zero_count + the bucket counts equal sample_count. */
	native_info ni;
	AP_CHECK_EQ_INT(find_histogram((const unsigned char *)R.body, R.body_len,
				       "allocprof_allocation_size_bytes", &ni), 0);
	AP_CHECK_EQ_U64(ni.count, 4);
	AP_CHECK_EQ_U64(ni.zero + ni.buckets, ni.count);
	AP_CHECK_EQ_U64(ni.ndeltas, ni.span_len);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

AP_TEST(a_slow_client_does_not_hold_up_others_and_times_out)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	int slow = dial(f.port);
	AP_CHECK(slow >= 0);
	AP_CHECK(send(slow, "GET /metr", 9, MSG_NOSIGNAL) == 9);
	double t0 = now_s();
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK(now_s() - t0 < 1.0); /* not behind the slow one's 5 s */
	char buf[512];
	read_all(slow, buf, sizeof buf);
	double waited = now_s() - t0;
	close(slow);
	http_server_stop(f.s);
	AP_CHECK_MSG(strncmp(buf, "HTTP/1.1 408 ", 13) == 0, "got '%s' after %.2f s", buf,
		     waited);
	/* The deadline is 5 s from accept; allow scheduling slack. */
	AP_CHECK(waited > 4.0 && waited < 7.0);
}

AP_TEST(connections_past_the_limit_get_503_then_service_resumes)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	int idle[HTTP_MAX_CONNS];
	for (int i = 0; i < HTTP_MAX_CONNS; i++) {
		idle[i] = dial(f.port);
		AP_CHECK(idle[i] >= 0);
	}
	usleep(100000); /* let the server accept them all */
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	AP_CHECK_EQ_INT(R.status, 503);
	for (int i = 0; i < HTTP_MAX_CONNS; i++)
		close(idle[i]);
	usleep(100000);
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	AP_CHECK_EQ_INT(R.status, 200);
	double t0 = now_s();
	http_server_stop(f.s);
	AP_CHECK(now_s() - t0 < 1.0);
}

AP_TEST(stop_is_prompt_with_a_connection_open)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	int fd = dial(f.port);
	AP_CHECK(fd >= 0);
	double t0 = now_s();
	http_server_stop(f.s);
	AP_CHECK(now_s() - t0 < 1.0);
	char buf[64];
	AP_CHECK_EQ_U64(read_all(fd, buf, sizeof buf), 0); /* closed by the stop */
	close(fd);
	http_server_stop(NULL);
}

AP_TEST(listen_option_forms)
{
	http_listen l;
	char err[200];
	char text[64];
	AP_CHECK_EQ_INT(http_parse_listen("8080", 4, &l, err, sizeof err), 0);
	http_listen_format(&l, l.port, text, sizeof text);
	AP_CHECK(l.enabled && strcmp(text, "127.0.0.1:8080") == 0);
	AP_CHECK_EQ_INT(http_parse_listen("0.0.0.0:9", 9, &l, err, sizeof err), 0);
	http_listen_format(&l, l.port, text, sizeof text);
	AP_CHECK(strcmp(text, "0.0.0.0:9") == 0);
	AP_CHECK_EQ_INT(http_parse_listen("localhost:0", 11, &l, err, sizeof err), 0);
	AP_CHECK(l.port == 0 && l.addr[0] == 127);
	AP_CHECK_EQ_INT(http_parse_listen("[::1]:65535", 11, &l, err, sizeof err), 0);
	http_listen_format(&l, l.port, text, sizeof text);
	AP_CHECK(l.v6 && strcmp(text, "[::1]:65535") == 0);
	AP_CHECK_EQ_INT(http_parse_listen("off", 3, &l, err, sizeof err), 0);
	AP_CHECK(!l.enabled);
	static const char *const bad[] = { "", "65536", "example.com:80", ":80",
					   "1.2.3:80", "[::1]80", "[::1]:", "80x",
					   "127.0.0.1:", "-1", "[nothex]:1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		AP_CHECK_MSG(http_parse_listen(bad[i], strlen(bad[i]), &l, err, sizeof err) ==
				     AP_EINVAL && strstr(err, "PORT"),
			     "accepted '%s'", bad[i]);
}

AP_TEST(symbol_service_names_dynamic_symbols_and_bounds_bodies)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	AP_CHECK_EQ_INT(get(f.port, "/debug/pprof/symbol", NULL, &R), 0);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK(strcmp(R.body, "num_symbols: 1\n") == 0);
	/* A libc function's address (resolved through the GOT) has a
	 * dynamic symbol; 0x10 and garbage tokens get no line. */
	char body[128], req[512];
	unsigned long long fn = (unsigned long long)(uintptr_t)&fwrite;
	int bn = snprintf(body, sizeof body, "0x10+%#llx+zz+0x", fn);
	int k = snprintf(req, sizeof req,
			 "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\n"
			 "Content-Length: %d\r\n\r\n%s", bn, body);
	AP_CHECK_EQ_INT(ask(f.port, req, (size_t)k, &R), 0);
	AP_CHECK_EQ_INT(R.status, 200);
	char want[40];
	snprintf(want, sizeof want, "%#llx ", fn);
	AP_CHECK_MSG(strncmp(R.body, want, strlen(want)) == 0 && strchr(R.body, '\n') ==
			     R.body + R.body_len - 1,
		     "body '%s'", R.body);
	k = snprintf(req, sizeof req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\n"
				      "Content-Length: 99999999\r\n\r\n");
	AP_CHECK_EQ_INT(ask(f.port, req, (size_t)k, &R), 0);
	AP_CHECK_EQ_INT(R.status, 413);
	k = snprintf(req, sizeof req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\n"
				      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
	AP_CHECK_EQ_INT(ask(f.port, req, (size_t)k, &R), 0);
	AP_CHECK_EQ_INT(R.status, 411);
	k = snprintf(req, sizeof req, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: t\r\n"
				      "Content-Length: 1x\r\n\r\n");
	AP_CHECK_EQ_INT(ask(f.port, req, (size_t)k, &R), 0);
	AP_CHECK_EQ_INT(R.status, 400);
	k = snprintf(req, sizeof req, "PUT /debug/pprof/symbol HTTP/1.0\r\n\r\n");
	AP_CHECK_EQ_INT(ask(f.port, req, (size_t)k, &R), 0);
	AP_CHECK_EQ_INT(R.status, 405);
	AP_CHECK(strstr(R.head, "Allow: GET, HEAD, POST"));
	http_server_stop(f.s);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

AP_TEST(out_of_descriptors_pauses_accepting_instead_of_spinning)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	struct rlimit old, low;
	AP_CHECK_EQ_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
	/* Room for exactly one more descriptor: the client's socket. */
	int probe = dup(0);
	AP_CHECK(probe >= 0);
	close(probe);
	low = old;
	low.rlim_cur = (rlim_t)probe + 1;
	AP_CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
	int fd = dial(f.port);
	double c0 = cpu_s();
	usleep(500000);
	double used = cpu_s() - c0;
	setrlimit(RLIMIT_NOFILE, &old);
	AP_CHECK(fd >= 0);
	/* A spinning accept loop would burn ~0.5 s of CPU here; paused
	 * retries every 100 ms cost next to nothing. */
	AP_CHECK_MSG(used < 0.1, "%.3f s of CPU while out of descriptors", used);
	/* Once descriptors are back the waiting connection is served. */
	const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
	AP_CHECK(send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
	char buf[64];
	read_all(fd, buf, sizeof buf);
	close(fd);
	http_server_stop(f.s);
	AP_CHECK(strncmp(buf, "HTTP/1.1 200 ", 13) == 0);
}

/* The value of the sample line starting with key (name and labels) in the
 * text exposition, or NaN. */
static double text_metric(const char *text, const char *key)
{
	size_t k = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, key, k) == 0 && p[k] == ' ')
			return strtod(p + k + 1, NULL);
	return (double)NAN;
}

AP_TEST(metrics_intervals_follow_the_report_rules_on_summed_inputs)
{
	/* Sampled (not exact) allocations at rate 1000 over two sites: the
	 * endpoint must sum samples, u and variances over sites and apply
	 * ap_bytes_interval / ap_objects_interval, the reports' rules. */
	fixture f;
	memset(&f, 0, sizeof f);
	arena_init(&f.a);
	AP_CHECK_EQ_INT(table_init(&f.t, &f.a), 0);
	const double rate = 1000;
	static const uint64_t sizes[] = { 100, 100, 700, 4000, 30 };
	static const uint64_t offsets[] = { 10, 99, 0, 2500, 29 };
	double bytes = 0, objects = 0, var_b = 0, var_o = 0, u = 0, var2_b = 0,
	       var2_o = 0;
	for (size_t i = 0; i < 5; i++) {
		ap_sample_info in;
		memset(&in, 0, sizeof in);
		in.size = sizes[i];
		in.offset = offsets[i];
		in.count = 1;
		in.prob = -expm1((double)sizes[i] * log1p(-1.0 / rate));
		in.weight = 1.0 / in.prob;
		sample_rec rec;
		AP_CHECK_EQ_INT(table_record_alloc(&f.t, i % 2 ? stack_a : stack_b, i % 2 ? 2 : 1,
						   (uint64_t)rate, &in, sizes[i], &rec, NULL), 0);
		double w = in.weight, z = (double)sizes[i];
		bytes += w * z;
		objects += w;
		var_b += (w * w - w) * z * z;
		var_o += w * w - w;
		var2_b += pow((w * w - w) * z * z, 2);
		var2_o += pow(w * w - w, 2);
		u += (double)(sizes[i] - offsets[i]);
	}
	AP_CHECK_EQ_INT(start_on(&f, "0", (uint64_t)rate), 0);
	/* Weighted counts split over native buckets still add up. */
	AP_CHECK_EQ_INT(get(f.port, "/metrics",
			    "Accept: application/vnd.google.protobuf;"
			    "proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n",
			    &R),
			0);
	native_info ni;
	AP_CHECK_EQ_INT(find_histogram((const unsigned char *)R.body, R.body_len,
				       "allocprof_allocation_size_bytes", &ni), 0);
	AP_CHECK(ni.count > 5);
	AP_CHECK_EQ_U64(ni.zero + ni.buckets, ni.count);
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	http_server_stop(f.s);
	/* the row rule every view uses (estimate.h), on the summed inputs */
	ap_interval ib, io;
	ap_row row = {.samples = 5, .u = u, .bytes = bytes, .var_bytes = var_b,
		      .var2_bytes = var2_b, .objects = objects,
		      .var_objects = var_o, .var2_objects = var2_o,
		      .rate = rate};
	AP_CHECK_EQ_INT(ap_row_bytes_interval(&row, 0.95, &ib, NULL), 0);
	AP_CHECK_EQ_INT(ap_row_objects_interval(&row, 0.95, &io, NULL), 0);
	const char *t = R.body;
	AP_CHECK_NEAR(text_metric(t, "allocprof_allocated_bytes_total"), bytes, 1e-12, 0);
	AP_CHECK_NEAR(text_metric(t, "allocprof_allocated_bytes_lower{level=\"0.95\"}"), ib.lo,
		      1e-12, 0);
	AP_CHECK_NEAR(text_metric(t, "allocprof_allocated_bytes_upper{level=\"0.95\"}"), ib.hi,
		      1e-12, 0);
	AP_CHECK_NEAR(text_metric(t, "allocprof_inuse_objects_lower{level=\"0.95\"}"), io.lo,
		      1e-12, 0);
	AP_CHECK_NEAR(text_metric(t, "allocprof_inuse_objects_upper{level=\"0.95\"}"), io.hi,
		      1e-12, 0);
	/* Few samples, so the intervals are wide and not symmetric (NB). */
	AP_CHECK(ib.lo < bytes && bytes < ib.hi && ib.hi - bytes != bytes - ib.lo);
}

/* http_public=1 is needed for anything but these (http_runtime.c). */
AP_TEST(loopback_addresses_are_told_apart_from_the_rest)
{
	static const struct {
		const char *listen;
		bool loopback;
	} cases[] = { { "8080", true },	       { "127.0.0.1:1", true },
		      { "127.9.8.7:1", true },     { "localhost:0", true },
		      { "[::1]:1", true },	       { "[::ffff:127.0.0.1]:1", true },
		      { "0.0.0.0:1", false },      { "[::]:1", false },
		      { "192.0.2.1:1", false },    { "[2001:db8::1]:1", false },
		      { "[::ffff:10.0.0.1]:1", false }, { "[::2]:1", false } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		http_listen l;
		char err[96];
		AP_CHECK_EQ_INT(http_parse_listen(cases[i].listen, strlen(cases[i].listen),
						  &l, err, sizeof err), 0);
		AP_CHECK_MSG(http_listen_is_loopback(&l) == cases[i].loopback, "%s",
			     cases[i].listen);
	}
}

AP_TEST(serves_on_ipv6_loopback)
{
	fixture f;
	memset(&f, 0, sizeof f);
	arena_init(&f.a);
	AP_CHECK_EQ_INT(table_init(&f.t, &f.a), 0);
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	if (probe < 0)
		return; /* no IPv6 on this machine: nothing to check */
	close(probe);
	AP_CHECK_EQ_INT(start_on(&f, "[::1]:0", 1), 0);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(f.port);
	a.sin6_addr = in6addr_loopback;
	int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
	const char *req = "GET /metrics HTTP/1.1\r\nHost: [::1]\r\n\r\n";
	char buf[64] = "";
	if (rc == 0 && send(fd, req, strlen(req), MSG_NOSIGNAL) > 0)
		read_all(fd, buf, sizeof buf);
	close(fd);
	http_server_stop(f.s);
	AP_CHECK_EQ_INT(rc, 0);
	AP_CHECK(strncmp(buf, "HTTP/1.1 200 ", 13) == 0);
}

AP_TEST(an_empty_profile_still_gives_complete_metrics_and_profiles)
{
	fixture f;
	memset(&f, 0, sizeof f);
	arena_init(&f.a);
	AP_CHECK_EQ_INT(table_init(&f.t, &f.a), 0);
	AP_CHECK_EQ_INT(start_on(&f, "0", 524288), 0);
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK(text_metric(R.body, "allocprof_allocated_bytes_total") == 0);
	AP_CHECK(text_metric(R.body, "allocprof_inuse_objects") == 0);
	/* No sample yet: the one zero-sample rule (STATISTICS.md section 5),
	 * bytes up to ln(0.05) / ln(1 - 1/R) ~ 3.0 R, objects unbounded
	 * (+Inf: no size floor). */
	AP_CHECK(text_metric(R.body, "allocprof_allocated_bytes_lower{level=\"0.95\"}") == 0);
	double hi = text_metric(R.body, "allocprof_allocated_bytes_upper{level=\"0.95\"}");
	AP_CHECK_NEAR(hi, log(0.05) / log1p(-1.0 / 524288), 1e-12, 0);
	AP_CHECK(strstr(R.body, "allocprof_allocated_objects_upper{level=\"0.95\"} +Inf\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_bucket{le=\"+Inf\"} 0\n"));
	AP_CHECK(strstr(R.body, "allocprof_allocation_size_bytes_count 0\n"));
	AP_CHECK_EQ_INT(get(f.port, "/metrics",
			    "Accept: application/vnd.google.protobuf;"
			    "proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n",
			    &R),
			0);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK_EQ_INT(family_schema((const unsigned char *)R.body, R.body_len,
				      "allocprof_allocation_size_bytes"),
			METRICS_NATIVE_SCHEMA);
	AP_CHECK_EQ_INT(get(f.port, "/debug/pprof/heap", NULL, &R), 0);
	http_server_stop(f.s);
	AP_CHECK_EQ_INT(R.status, 200);
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(ap_pprof_decode((const unsigned char *)R.body, R.body_len, NULL, &p,
					NULL, 0),
			0);
	AP_CHECK_EQ_U64(p->nsamples, 0);
	ap_profile_destroy(p);
}

/* Descriptors 3..63 open now, as a bit mask. */
static uint64_t open_fds(void)
{
	uint64_t m = 0;
	for (int fd = 3; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			m |= 1ULL << fd;
	return m;
}

AP_TEST(a_program_closing_our_descriptors_turns_the_endpoint_off_safely)
{
	/* Daemons close every descriptor at start-up. The server must notice,
	 * stop, and never touch those numbers again: by then they may be the
	 * program's own files. */
	uint64_t before = open_fds();
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	uint64_t ours = open_fds() & ~before;
	AP_CHECK(ours != 0);
	for (int fd = 3; fd < 64; fd++)
		if (ours >> fd & 1)
			close(fd);
	usleep(200000);
	/* The program reuses the numbers. */
	for (int fd = 3; fd < 64; fd++)
		if (ours >> fd & 1)
			AP_CHECK(dup2(0, fd) == fd);
	double t0 = now_s();
	http_server_stop(f.s);
	AP_CHECK(now_s() - t0 < 1.0);
	for (int fd = 3; fd < 64; fd++)
		if (ours >> fd & 1) {
			AP_CHECK_MSG(fcntl(fd, F_GETFD) != -1, "fd %d was closed by the stop", fd);
			close(fd);
		}
}

/* Value of sample type `type` summed over the samples whose leaf is addr
 * (a recorded return address; locations hold it minus 1). */
static int64_t site_value(const ap_profile *p, uint64_t addr, const char *type)
{
	int k = ap_profile_find_sample_type(p, type);
	int64_t v = 0;
	for (size_t i = 0; k >= 0 && i < p->nsamples; i++)
		if (ap_profile_location(p, p->samples[i].location_ids[0])->address + 1 == addr)
			v += p->samples[i].values[k];
	return v;
}

AP_TEST(a_delta_profile_holds_only_the_window_and_blocks_no_one)
{
	fixture f;
	AP_CHECK_EQ_INT(setup(&f), 0);
	int fd = dial(f.port);
	AP_CHECK(fd >= 0);
	static const char req[] = "GET /debug/pprof/allocs?seconds=1 HTTP/1.1\r\nHost: t\r\n\r\n";
	AP_CHECK(send(fd, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)sizeof req - 1);
	usleep(200000);
	/* In the window: two more 700-byte allocations at stack b. */
	ap_sample_info info;
	memset(&info, 0, sizeof info);
	info.count = 1;
	info.prob = info.weight = 1;
	info.exact = true;
	info.size = 700;
	sample_rec rec;
	for (int i = 0; i < 2; i++)
		AP_CHECK_EQ_INT(table_record_alloc(&f.t, stack_b, 1, 1, &info, 704, &rec, NULL), 0);
	/* The waiting delta holds its connection, not the thread. */
	double t0 = now_s();
	AP_CHECK_EQ_INT(get(f.port, "/metrics", NULL, &R), 0);
	AP_CHECK_EQ_INT(R.status, 200);
	AP_CHECK_MSG(now_s() - t0 < 0.5, "/metrics took %.3f s", now_s() - t0);
	size_t n = read_all(fd, R.raw, sizeof R.raw);
	close(fd);
	double waited = now_s() - t0 + 0.2;
	AP_CHECK_MSG(waited > 0.9 && waited < 3, "answered after %.3f s", waited);
	char *end = memmem(R.raw, n, "\r\n\r\n", 4);
	AP_CHECK(end && strncmp(R.raw, "HTTP/1.1 200", 12) == 0);
	ap_profile *p = NULL;
	size_t off = (size_t)(end + 4 - R.raw);
	AP_CHECK_EQ_INT(ap_pprof_decode((unsigned char *)R.raw + off, n - off, NULL, &p, NULL, 0),
			0);
	/* Exact at period 1: only the window's 1400 bytes; stack a, unchanged,
	 * cancels to zero. */
	AP_CHECK_EQ_INT((int)site_value(p, 0x5000, AP_ST_ALLOC_SPACE), 1400);
	AP_CHECK_EQ_INT((int)site_value(p, 0x5000, AP_ST_INUSE_SPACE), 1400);
	AP_CHECK_EQ_INT((int)site_value(p, 0x5000, AP_ST_ALLOC_SAMPLES), 2);
	AP_CHECK_EQ_INT((int)site_value(p, 0x1000, AP_ST_ALLOC_SPACE), 0);
	AP_CHECK(p->ncomments == 0 && p->duration_nanos > 900000000LL);
	ap_profile_destroy(p);
	/* Stopping with a delta still waiting is prompt. */
	fd = dial(f.port);
	AP_CHECK(send(fd, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)sizeof req - 1);
	usleep(100000);
	t0 = now_s();
	http_server_stop(f.s);
	AP_CHECK(now_s() - t0 < 1.0);
	close(fd);
}
