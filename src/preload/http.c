/*
 * http.c: the HTTP endpoint's server thread, request handling and routes
 * (http.h).
 *
 * The thread polls a self-pipe (stop requests), the listening socket and up
 * to HTTP_MAX_CONNS non-blocking connections. A connection goes READ (the
 * head arrives, parsed by httpreq_parse after every read) -> WRITE (the
 * whole response, built at once in the arena) -> DRAIN (our side shut down;
 * whatever the client still sends is read and dropped until it closes, so
 * closing never resets the connection under a response it has not read).
 * Every connection has one deadline from accept; a client past it gets 408
 * (if it had not finished its request) and is closed. When every slot is
 * taken, new connections get 503 at once rather than waiting.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "httpreq.h"
#include "allocprof/options.h"
#include "allocprof/profile.h"
#include "dump.h"
#include "fd_id.h"
#include "http_pprof.h"
#include "log.h"

/* C_WAIT: a delta profile (?seconds=N) holds its start until deadline_ns. */
enum { C_FREE = 0, C_READ, C_WRITE, C_DRAIN, C_WAIT };

#define DRAIN_MS 1000
#define ACCEPT_PAUSE_MS 100

typedef struct conn {
	int fd;
	fd_id id;
	int state;
	uint64_t deadline_ns;
	char *in;
	size_t in_len, in_cap;
	size_t want; /* head + body bytes awaited; 0 = head not complete yet */
	http_buf out;
	size_t out_off;
	/* C_WAIT: the profile at the window's start, in its own arena. */
	arena scratch;
	ap_profile *base;
	bool allocs, head;
} conn;

struct http_server {
	http_source src;
	int lfd, wake_r, wake_w;
	fd_id lid, wid; /* the listener's and the pipe's (both ends share it) */
	uint16_t port;
	pthread_t thread;
	_Atomic long tid; /* the thread's id, once it runs */
	atomic_bool stop;
	conn conns[HTTP_MAX_CONNS];
	uint64_t requests, busy_ns; /* touched only by the server thread */
	uint64_t accept_pause_until; /* out of descriptors: stop accepting */
	atomic_bool fds_lost; /* the program closed or replaced our descriptors */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- responses ------------------------------------------------------------ */

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

/* Compose the whole response in c->out. */
static void respond(conn *c, int status, const char *ctype, const char *extra,
		    const void *body, size_t n, bool head_only)
{
	http_buf *o = &c->out;
	o->n = 0;
	hb_printf(o, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\nCache-Control: no-store\r\n"
		     "X-Content-Type-Options: nosniff\r\n%s\r\n",
		  status, reason(status), ctype, n, extra ? extra : "");
	if (!head_only)
		hb_put(o, body, n);
	if (hb_failed(o)) {
		/* Out of memory: a static answer, without the arena. */
		hb_free(o);
		o->failed = false;
		c->state = C_FREE; /* the caller closes */
		return;
	}
	c->out_off = 0;
	c->state = C_WRITE;
}

static void respond_text(conn *c, int status, const char *extra, const char *msg,
			 bool head_only)
{
	respond(c, status, "text/plain; charset=utf-8", extra, msg, strlen(msg),
		head_only);
}

/* ---- routes --------------------------------------------------------------- */

static void conn_close(http_server *s, conn *c);
static void conn_write(http_server *s, conn *c);
static void blurt(int fd, int status);

enum route { R_INDEX, R_PPROF_INDEX, R_HEAP, R_ALLOCS, R_METRICS, R_SYMBOL,
	     R_START, R_STOP, R_TIMELINE, R_NONE };

static enum route route_of(httpreq_str path)
{
	if (httpreq_str_eq(path, "/"))
		return R_INDEX;
	if (httpreq_str_eq(path, "/debug/pprof/") || httpreq_str_eq(path, "/debug/pprof"))
		return R_PPROF_INDEX;
	if (httpreq_str_eq(path, "/debug/pprof/heap"))
		return R_HEAP;
	if (httpreq_str_eq(path, "/debug/pprof/allocs"))
		return R_ALLOCS;
	if (httpreq_str_eq(path, "/metrics"))
		return R_METRICS;
	if (httpreq_str_eq(path, "/debug/pprof/symbol"))
		return R_SYMBOL;
	if (httpreq_str_eq(path, "/debug/allocprof/start"))
		return R_START;
	if (httpreq_str_eq(path, "/debug/allocprof/stop"))
		return R_STOP;
	if (httpreq_str_eq(path, "/debug/allocprof/timeline"))
		return R_TIMELINE;
	return R_NONE;
}

static const char index_html[] =
	"<!DOCTYPE html>\n<html><head><title>allocprof</title></head><body>\n"
	"<h1>allocprof</h1>\n<p>Heap profile of this process, sampled.</p>\n<ul>\n"
	"<li><a href=\"debug/pprof/\">debug/pprof/</a>: pprof profiles</li>\n"
	"<li><a href=\"metrics\">metrics</a>: Prometheus metrics</li>\n"
	"<li><a href=\"debug/allocprof/timeline\">debug/allocprof/timeline</a>: "
	"live bytes per site over time (timeline=; docs/FORMATS.md)</li>\n"
	"</ul>\n</body></html>\n";

/* Build the profile of the moment in scratch (allocs: default sample type
 * alloc_space). */
static int build_raw(http_server *s, arena *scratch, bool allocs, ap_profile **out)
{
	const http_source *src = &s->src;
	if (src->dump_lock)
		pthread_mutex_lock(src->dump_lock);
	dump_input in = { .table = src->table,
			  .a = scratch,
			  .period = src->period,
			  .format = 0,
			  .start_realtime_ns = src->start_realtime_ns,
			  .with_mappings = src->with_mappings };
	ap_profile *p = NULL;
	int rc = dump_build_profile(&in, &p);
	if (src->dump_lock)
		pthread_mutex_unlock(src->dump_lock);
	if (rc == 0 && allocs) {
		int64_t k = ap_profile_intern(p, AP_ST_ALLOC_SPACE);
		if (k < 0)
			rc = (int)k;
		else
			p->default_sample_type = k;
	}
	if (rc != 0) {
		ap_profile_destroy(p);
		p = NULL;
	}
	*out = p;
	return rc;
}

/* Encode p (gzip'd pprof, or the legacy text) into body; destroys p. */
static int encode_profile(ap_profile *p, arena *scratch, bool text, http_buf *body)
{
	if (text) {
		int rc = http_pprof_text(p, NULL, body);
		ap_profile_destroy(p);
		return rc;
	}
	unsigned char *buf = NULL;
	size_t len = 0;
	const ap_allocator *al = arena_allocator(scratch);
	int rc = dump_encode_gzip(p, al, &buf, &len); /* destroys p */
	if (rc == 0) {
		hb_put(body, buf, len);
		if (hb_failed(body))
			rc = AP_ENOMEM;
	}
	if (buf)
		al->free(al->ctx, buf, len + 1);
	return rc;
}

/* Build and encode the profile of the moment into body. The profile and
 * its encoding live in an arena of their own, unmapped afterwards: the
 * shared arena keeps freed blocks for reuse, so a profile built there
 * would keep its peak resident for good. */
static int build_profile(http_server *s, bool allocs, bool text, http_buf *body)
{
	arena scratch;
	arena_init(&scratch);
	ap_profile *p = NULL;
	int rc = build_raw(s, &scratch, allocs, &p);
	if (rc == 0)
		rc = encode_profile(p, &scratch, text, body);
	arena_destroy(&scratch);
	return rc;
}

/* The timeline's bytes (docs/FORMATS.md, "Time extensions"); 1 when the
 * timeline is off. */
static int build_timeline(http_server *s, http_buf *body)
{
	if (!s->src.timeline)
		return 1;
	arena scratch;
	arena_init(&scratch);
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = s->src.timeline(&scratch, &data, &len);
	if (rc == 0 && !data)
		rc = 1;
	if (rc == 0) {
		hb_put(body, data, len);
		if (hb_failed(body))
			rc = AP_ENOMEM;
	}
	arena_free(&scratch, data); /* a large block is a mapping of its own */
	arena_destroy(&scratch);
	return rc;
}

static bool wants_protobuf(const httpreq *r)
{
	static const char *const params[] = {
		"proto=io.prometheus.client.MetricFamily", "encoding=delimited"
	};
	const httpreq_str *acc = httpreq_header_value(r, "accept");
	return acc && httpreq_accepts(acc->p, acc->n, "application/vnd.google.protobuf",
				      params, 2);
}

static int build_metrics(http_server *s, bool proto, http_buf *body)
{
	metrics_input in;
	memset(&in, 0, sizeof in);
	in.table = s->src.table;
	in.a = s->src.a;
	in.period = s->src.period;
	if (s->src.cost)
		s->src.cost(s->src.cost_ctx, &in.cost);
	in.cost.http_requests = s->requests;
	in.cost.http_busy_ns = s->busy_ns;
	return proto ? metrics_render_proto(&in, body) : metrics_render_text(&in, body);
}

static void serve_symbol(conn *c, const httpreq *r)
{
	bool head = r->method == HTTPREQ_HEAD;
	if (r->method != HTTPREQ_POST) {
		static const char one[] = "num_symbols: 1\n";
		respond(c, 200, "text/plain; charset=utf-8", NULL, one, sizeof one - 1, head);
		return;
	}
	http_buf body;
	hb_init(&body, c->out.a);
	http_pprof_symbolize(c->in + r->head_len, c->want - r->head_len, &body);
	if (hb_failed(&body))
		respond_text(c, 500, NULL, "out of memory\n", false);
	else
		respond(c, 200, "text/plain; charset=utf-8", NULL, body.p, body.n, false);
	hb_free(&body);
}

static const char *attachment(bool allocs)
{
	return allocs ? "Content-Disposition: attachment; filename=\"allocs\"\r\n"
		      : "Content-Disposition: attachment; filename=\"heap\"\r\n";
}

static void profile_failed(conn *c, int rc, bool head)
{
	char msg[160];
	snprintf(msg, sizeof msg, "could not build the profile: %s\n", ap_strerror(rc));
	respond_text(c, 500, NULL, msg, head);
}

/*
 * ?seconds=N: build the profile now and keep it with the connection, which
 * waits (C_WAIT, polled for nothing, its deadline the window's end) while
 * the thread serves everyone else; finish_delta answers at the deadline.
 */
static void start_delta(http_server *s, conn *c, bool allocs, unsigned seconds, bool head)
{
	arena_init(&c->scratch);
	int rc = build_raw(s, &c->scratch, allocs, &c->base);
	if (rc != 0) {
		arena_destroy(&c->scratch);
		profile_failed(c, rc, head);
		return;
	}
	c->allocs = allocs;
	c->head = head;
	c->state = C_WAIT;
	c->deadline_ns = mono_ns() + (uint64_t)seconds * 1000000000ULL;
}

static void finish_delta(http_server *s, conn *c)
{
	ap_profile *now = NULL;
	int rc = build_raw(s, &c->scratch, c->allocs, &now);
	if (rc == 0) {
		rc = http_pprof_delta(now, c->base);
		if (rc != 0)
			ap_profile_destroy(now);
	}
	ap_profile_destroy(c->base);
	c->base = NULL;
	http_buf body;
	hb_init(&body, s->src.a);
	if (rc == 0)
		rc = encode_profile(now, &c->scratch, false, &body);
	arena_destroy(&c->scratch);
	/* The request's own deadline has passed: give the answer time to go. */
	c->deadline_ns = mono_ns() + (uint64_t)HTTP_REQUEST_TIMEOUT_MS * 1000000ULL;
	if (rc != 0)
		profile_failed(c, rc, c->head);
	else
		respond(c, 200, "application/octet-stream", attachment(c->allocs), body.p,
			body.n, c->head);
	hb_free(&body);
	if (c->state == C_FREE) {
		blurt(c->fd, 500);
		conn_close(s, c);
		return;
	}
	conn_write(s, c);
}

static void serve(http_server *s, conn *c, const httpreq *r)
{
	bool head = r->method == HTTPREQ_HEAD;
	enum route rt = route_of(r->path);
	if ((rt == R_START || rt == R_STOP) && !s->src.control)
		rt = R_NONE;
	if (rt == R_NONE) {
		respond_text(c, 404, NULL, "not found: try / for the list of endpoints\n",
			     head);
		return;
	}
	if (rt == R_SYMBOL && (r->method == HTTPREQ_POST || r->method == HTTPREQ_GET || head)) {
		serve_symbol(c, r);
		return;
	}
	if (rt == R_START || rt == R_STOP) {
		/* Sampling on/off (control.h): POST only, it changes state. */
		char msg[160];
		if (r->method != HTTPREQ_POST) {
			respond_text(c, 405, "Allow: POST\r\n",
				     "method not allowed: only POST\n", head);
			return;
		}
		int status = s->src.control(rt == R_START, r->query.p, r->query.n,
					    msg, sizeof msg);
		respond_text(c, status, NULL, msg, false);
		return;
	}
	if (r->method != HTTPREQ_GET && !head) {
		respond_text(c, 405,
			     rt == R_SYMBOL ? "Allow: GET, HEAD, POST\r\n" : "Allow: GET, HEAD\r\n",
			     "method not allowed: only GET and HEAD\n", false);
		return;
	}
	if (rt == R_INDEX || rt == R_PPROF_INDEX) {
		const char *html = rt == R_INDEX ? index_html : http_pprof_index_html;
		respond(c, 200, "text/html; charset=utf-8", NULL, html, strlen(html), head);
		return;
	}
	http_pprof_query q = { 0 };
	if (rt == R_HEAP || rt == R_ALLOCS) {
		const char *why = NULL;
		if (http_pprof_parse_query(r->query.p, r->query.n, &q, &why) != 0) {
			respond_text(c, 400, NULL, why, head);
			return;
		}
		if (q.seconds) {
			start_delta(s, c, rt == R_ALLOCS, q.seconds, head);
			return;
		}
	}
	http_buf body;
	hb_init(&body, s->src.a);
	int rc;
	const char *ctype, *extra = NULL;
	if (rt == R_METRICS) {
		bool proto = wants_protobuf(r);
		rc = build_metrics(s, proto, &body);
		ctype = proto ? "application/vnd.google.protobuf; "
				"proto=io.prometheus.client.MetricFamily; encoding=delimited"
			      : "text/plain; version=0.0.4; charset=utf-8";
	} else if (rt == R_TIMELINE) {
		rc = build_timeline(s, &body);
		ctype = "application/octet-stream";
		if (rc == 1) {
			hb_free(&body);
			respond_text(c, 404, NULL, "the timeline is off: start the program "
				     "with timeline=1s in ALLOCPROF_OPTIONS\n", head);
			return;
		}
	} else {
		rc = build_profile(s, rt == R_ALLOCS, q.text, &body);
		ctype = q.text ? "text/plain; charset=utf-8" : "application/octet-stream";
		if (!q.text)
			extra = attachment(rt == R_ALLOCS);
	}
	if (rc != 0) {
		char msg[160];
		snprintf(msg, sizeof msg, "could not build the %s: %s\n",
			 rt == R_METRICS ? "metrics" : rt == R_TIMELINE ? "timeline" : "profile",
			 ap_strerror(rc));
		respond_text(c, 500, NULL, msg, head);
	} else {
		respond(c, 200, ctype, extra, body.p, body.n, head);
	}
	hb_free(&body);
}

/* ---- connections ---------------------------------------------------------- */

static void conn_close(http_server *s, conn *c)
{
	if (fd_still(c->fd, &c->id))
		close(c->fd);
	arena_free(s->src.a, c->in);
	hb_free(&c->out);
	if (c->state == C_WAIT) {
		ap_profile_destroy(c->base);
		arena_destroy(&c->scratch);
	}
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

/* A short fixed answer sent without waiting (the socket may not take it). */
static void blurt(int fd, int status)
{
	char buf[192];
	int k = snprintf(buf, sizeof buf,
			 "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			 status, reason(status));
	ssize_t w = send(fd, buf, (size_t)k, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)w;
}

static void conn_write(http_server *s, conn *c)
{
	while (c->out_off < c->out.n) {
		ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.n - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			conn_close(s, c);
			return;
		}
		c->out_off += (size_t)w;
	}
	shutdown(c->fd, SHUT_WR);
	hb_free(&c->out);
	c->state = C_DRAIN;
	uint64_t d = mono_ns() + (uint64_t)DRAIN_MS * 1000000ULL;
	if (d < c->deadline_ns)
		c->deadline_ns = d;
}

/*
 * How much body follows the head, from Content-Length: sets c->want and
 * grows the input buffer. Only POST to the symbol service reads its body;
 * other requests are answered and their bodies drained. 0, or the HTTP
 * status to answer (400, 411, 413).
 */
static int body_length(http_server *s, conn *c, const httpreq *r)
{
	c->want = r->head_len;
	if (r->method != HTTPREQ_POST || route_of(r->path) != R_SYMBOL)
		return 0;
	if (httpreq_header_value(r, "transfer-encoding"))
		return 411;
	const httpreq_str *cl = httpreq_header_value(r, "content-length");
	uint64_t n = 0;
	if (cl && ap_options_parse_u64(cl->p, cl->n, &n) != 0)
		return 400;
	if (n > HTTP_MAX_BODY)
		return 413;
	size_t total = r->head_len + (size_t)n;
	if (total > c->in_cap) {
		char *in = arena_realloc(s->src.a, c->in, total);
		if (!in)
			return 413;
		c->in = in;
		c->in_cap = total;
	}
	c->want = total;
	return 0;
}

static void conn_read(http_server *s, conn *c)
{
	if (c->state == C_DRAIN) {
		char sink[1024];
		ssize_t r = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			conn_close(s, c);
		return;
	}
	ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		conn_close(s, c); /* the client left before finishing its request */
		return;
	}
	c->in_len += (size_t)r;
	httpreq req;
	if (c->want && c->in_len < c->want)
		return;
	int rc = httpreq_parse(c->in, c->in_len, HTTP_MAX_HEAD, &req);
	if (rc == HTTPREQ_INCOMPLETE)
		return;
	int body_status = 0;
	if (rc == 0 && !c->want) {
		body_status = body_length(s, c, &req);
		if (body_status == 0 && c->in_len < c->want)
			return; /* the body is still coming */
	}
	uint64_t t0 = mono_ns();
	if (body_status == 411)
		respond_text(c, 411, NULL, "a request body needs Content-Length\n", false);
	else if (body_status == 413)
		respond_text(c, 413, NULL, "request body too large (limit 64 KiB)\n", false);
	else if (body_status != 0)
		respond_text(c, 400, NULL, "bad Content-Length\n", false);
	else if (rc == 0)
		serve(s, c, &req);
	else if (rc == AP_ERANGE)
		respond_text(c, 431, NULL, "request head too large (limit 8 KiB, 32 fields)\n",
			     false);
	else if (rc == AP_EVERSION)
		respond_text(c, 505, NULL, "only HTTP/1.0 and HTTP/1.1 are supported\n", false);
	else
		respond_text(c, 400, NULL, "malformed HTTP request\n", false);
	s->requests++;
	s->busy_ns += mono_ns() - t0;
	if (c->state == C_WAIT)
		return; /* a delta profile: answered at the window's end */
	if (c->state == C_FREE) {
		blurt(c->fd, 500);
		conn_close(s, c);
		return;
	}
	conn_write(s, c);
}

static void accept_all(http_server *s)
{
	for (int k = 0; k < HTTP_MAX_CONNS; k++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* Out of descriptors or memory, the pending connection stays
			 * and the socket stays readable: pause accepting rather than
			 * spin. EAGAIN and clients gone before accept just return. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				s->accept_pause_until = mono_ns() + ACCEPT_PAUSE_MS * 1000000ULL;
			return;
		}
		fd_id id;
		if (!fd_id_of(fd, &id)) {
			close(fd);
			continue;
		}
		conn *c = NULL;
		for (int i = 0; i < HTTP_MAX_CONNS && !c; i++)
			if (s->conns[i].state == C_FREE)
				c = &s->conns[i];
		char *in = c ? arena_alloc(s->src.a, HTTP_MAX_HEAD) : NULL;
		if (!in) {
			blurt(fd, 503);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->id = id;
		c->in = in;
		c->in_len = 0;
		c->in_cap = HTTP_MAX_HEAD;
		c->want = 0;
		c->state = C_READ;
		c->deadline_ns = mono_ns() + (uint64_t)HTTP_REQUEST_TIMEOUT_MS * 1000000ULL;
		hb_init(&c->out, s->src.a);
	}
}

static void expire(http_server *s, uint64_t now)
{
	for (int i = 0; i < HTTP_MAX_CONNS; i++) {
		conn *c = &s->conns[i];
		if (c->state == C_FREE || now < c->deadline_ns)
			continue;
		if (c->state == C_WAIT) {
			finish_delta(s, c);
			continue;
		}
		if (c->state == C_READ)
			blurt(c->fd, 408);
		conn_close(s, c);
	}
}

static int poll_timeout(const http_server *s, uint64_t now)
{
	uint64_t first = s->accept_pause_until > now ? s->accept_pause_until : UINT64_MAX;
	for (int i = 0; i < HTTP_MAX_CONNS; i++)
		if (s->conns[i].state != C_FREE && s->conns[i].deadline_ns < first)
			first = s->conns[i].deadline_ns;
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)((first - now) / 1000000ULL) + 1;
}

/* The listener and both ends of the pipe are still the objects we made. */
static bool server_fds_ours(const http_server *s)
{
	return fd_still(s->lfd, &s->lid) && fd_still(s->wake_r, &s->wid) &&
	       fd_still(s->wake_w, &s->wid);
}

static void *server_main(void *arg)
{
	http_server *s = arg;
	atomic_store(&s->tid, (long)syscall(SYS_gettid));
	if (s->src.thread_init)
		s->src.thread_init();
	struct pollfd pf[2 + HTTP_MAX_CONNS];
	int who[2 + HTTP_MAX_CONNS];
	while (!atomic_load(&s->stop)) {
		int n = 0;
		pf[n++] = (struct pollfd){ .fd = s->wake_r, .events = POLLIN };
		bool paused = s->accept_pause_until > mono_ns();
		pf[n++] = (struct pollfd){ .fd = s->lfd, .events = paused ? 0 : POLLIN };
		for (int i = 0; i < HTTP_MAX_CONNS; i++) {
			conn *c = &s->conns[i];
			if (c->state == C_FREE)
				continue;
			who[n] = i;
			pf[n++] = (struct pollfd){ .fd = c->fd,
						   .events = c->state == C_WRITE ? POLLOUT
								 : c->state == C_WAIT ? 0
										      : POLLIN };
		}
		int k = poll(pf, (nfds_t)n, poll_timeout(s, mono_ns()));
		if (k < 0 && errno != EINTR)
			break;
		if (atomic_load(&s->stop))
			break;
		if (!server_fds_ours(s)) {
			/* The program closed our descriptors (daemons close
			 * everything at start-up) or put its own in their place:
			 * stop serving, and never use those numbers again, they
			 * may be the program's now. Poll wakes for it as the
			 * pipe's last writer goes (POLLHUP), or at the next
			 * connection to the old socket, which poll kept open. */
			atomic_store(&s->fds_lost, true);
			rt_log("the HTTP endpoint's sockets were closed by the program; "
			       "the endpoint is off");
			break;
		}
		for (int i = 0; i < HTTP_MAX_CONNS; i++) {
			conn *c = &s->conns[i];
			if (c->state != C_FREE && !fd_still(c->fd, &c->id))
				conn_close(s, c); /* the number is not ours: no I/O */
		}
		if (k > 0) {
			for (int i = 2; i < n; i++) {
				conn *c = &s->conns[who[i]];
				if (!pf[i].revents || c->state == C_FREE)
					continue;
				if (c->state == C_WRITE)
					conn_write(s, c);
				else if (c->state == C_WAIT) {
					/* Polled for nothing: only HUP or an error, the
					 * client gave up on its delta. */
					if (pf[i].revents & (POLLHUP | POLLERR))
						conn_close(s, c);
				} else
					conn_read(s, c);
			}
			if (pf[1].revents & POLLIN)
				accept_all(s);
		}
		expire(s, mono_ns());
	}
	for (int i = 0; i < HTTP_MAX_CONNS; i++)
		if (s->conns[i].state != C_FREE)
			conn_close(s, &s->conns[i]);
	if (s->src.thread_exit)
		s->src.thread_exit();
	return NULL;
}

/* ---- lifetime -------------------------------------------------------------- */

static int open_listener(const http_listen *l, uint16_t *port, char *err, size_t errlen)
{
	char where[80];
	http_listen_format(l, l->port, where, sizeof where);
	int fd = socket(l->v6 ? AF_INET6 : AF_INET,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a socket for %s: %s", where,
			 strerror(errno));
		return -1;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof ss);
	if (l->v6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(l->port);
		memcpy(&a6->sin6_addr, l->addr, 16);
		sl = sizeof *a6;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		a4->sin_family = AF_INET;
		a4->sin_port = htons(l->port);
		memcpy(&a4->sin_addr, l->addr, 4);
		sl = sizeof *a4;
	}
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 64) != 0) {
		int e = errno;
		snprintf(err, errlen, "cannot listen on %s: %s", where, strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*port = ntohs(l->v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
			    : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* http_server_start gives up after making the listener and the pipe. */
static int start_failed(http_server *s, arena *a)
{
	close(s->lfd);
	close(s->wake_r);
	close(s->wake_w);
	arena_free(a, s);
	return AP_EIO;
}

int http_server_start(const http_listen *l, const http_source *src,
		      http_server **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!l || !src || !l->enabled) {
		snprintf(err, errlen, "no address to listen on");
		return AP_EINVAL;
	}
	http_server *s = arena_alloc(src->a, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return AP_ENOMEM;
	}
	s->src = *src;
	for (int i = 0; i < HTTP_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	s->lfd = open_listener(l, &s->port, err, errlen);
	int p[2];
	if (s->lfd >= 0 && pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		close(s->lfd);
		s->lfd = -1;
	}
	if (s->lfd < 0) {
		arena_free(src->a, s);
		return AP_EIO;
	}
	s->wake_r = p[0];
	s->wake_w = p[1];
	if (!fd_id_of(s->lfd, &s->lid) || !fd_id_of(s->wake_r, &s->wid)) {
		snprintf(err, errlen, "cannot stat the server's descriptors: %s",
			 strerror(errno));
		return start_failed(s, src->a);
	}
	/* The thread must not take the program's signals. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, server_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the server thread: %s", strerror(rc));
		return start_failed(s, src->a);
	}
	*out = s;
	return 0;
}

uint16_t http_server_port(const http_server *s)
{
	return s ? s->port : 0;
}

/* Close what is still ours, whatever the thread has seen. */
static void close_fds(http_server *s)
{
	if (fd_still(s->lfd, &s->lid))
		close(s->lfd);
	if (fd_still(s->wake_r, &s->wid))
		close(s->wake_r);
	if (fd_still(s->wake_w, &s->wid))
		close(s->wake_w);
}

long http_server_stop(http_server *s)
{
	if (!s)
		return 0;
	atomic_store(&s->stop, true);
	if (!atomic_load(&s->fds_lost)) {
		if (!fd_still(s->wake_w, &s->wid)) {
			/* The program took the pipe's number while a copy of
			 * its write end elsewhere (a fork child's) kept poll
			 * from waking: there is no way to wake the thread, and
			 * waiting for it would only delay the exit. */
			pthread_detach(s->thread);
			return 0;
		}
		ssize_t w = write(s->wake_w, "x", 1);
		(void)w;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += HTTP_STOP_TIMEOUT_MS / 1000;
	ts.tv_nsec += (long)(HTTP_STOP_TIMEOUT_MS % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(s->thread, NULL, &ts) != 0) {
		/* Stuck building a response: leave it (and its memory) alone;
		 * the process is exiting. */
		pthread_detach(s->thread);
		return 0;
	}
	long tid = atomic_load(&s->tid);
	close_fds(s);
	arena_free(s->src.a, s);
	return tid;
}

void http_server_forget(http_server *s)
{
	if (!s)
		return;
	close_fds(s);
	for (int i = 0; i < HTTP_MAX_CONNS; i++)
		if (s->conns[i].fd >= 0 && fd_still(s->conns[i].fd, &s->conns[i].id))
			close(s->conns[i].fd);
	/* The memory stays: the child's arena still accounts for it, and a
	 * copy of a parent's half-built response is not worth reclaiming. */
}
