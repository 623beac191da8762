/*
 * http.h: the runtime's optional HTTP endpoint (ALLOCPROF_OPTIONS http=).
 *
 * One server thread answers GET and HEAD on
 *   /                      a small index,
 *   /debug/pprof/          the list of profiles,
 *   /debug/pprof/heap      gzip'd pprof of the moment, default inuse_space,
 *   /debug/pprof/allocs    the same, default alloc_space; both take Go's
 *                          seconds=N (delta), debug=1 (text) and gc=
 *                          (http_pprof.h),
 *   /metrics               Prometheus text 0.0.4, or protobuf (native
 *                          size histogram) when the scraper asks for it,
 *   /debug/pprof/symbol    Go's symbol service (dladdr names), which
 *                          `go tool pprof` asks for what it cannot
 *                          symbolize from local files,
 * the URLs continuous profilers (Parca, Pyroscope, Grafana agents),
 * `go tool pprof http://...` and Prometheus fetch.
 *
 * Concurrency: one thread, non-blocking sockets and poll(): a slow client
 * holds only its own connection slot (HTTP_MAX_CONNS), never the thread,
 * and each connection has HTTP_REQUEST_TIMEOUT_MS from accept to its last
 * byte. Responses are built synchronously in that thread (a profile takes
 * milliseconds), one per connection (Connection: close).
 *
 * Memory: connection buffers, profiles and responses all come from the
 * runtime's arena; the thread's init hook marks it so that anything libc
 * or zlib allocates there is not profiled and never recurses.
 */
#ifndef AP_PRELOAD_HTTP_H
#define AP_PRELOAD_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "metrics.h"
#include "stack_table.h"

#define HTTP_MAX_CONNS 16
#define HTTP_MAX_HEAD 8192
/* Largest body read (POST /debug/pprof/symbol); others are not read. */
#define HTTP_MAX_BODY 65536
#define HTTP_REQUEST_TIMEOUT_MS 5000
/* How long http_server_stop waits for the thread before giving up on it. */
#define HTTP_STOP_TIMEOUT_MS 2000

/* A listening address as given by http=ADDR:PORT. */
typedef struct http_listen {
	bool enabled;
	bool v6;
	unsigned char addr[16]; /* network order; IPv4 uses the first 4 */
	uint16_t port;          /* 0 = let the kernel pick */
} http_listen;

/*
 * ap_option_parse_fn for http=: "PORT" (127.0.0.1), "ADDR:PORT" with a
 * numeric IPv4 address or "localhost", "[IPv6]:PORT". Names other than
 * localhost are refused (no DNS inside the runtime). "off" disables; a
 * bare "0" means 127.0.0.1 with a kernel-chosen port. Non-loopback
 * addresses (0.0.0.0 included) are used only when written out, and the
 * runtime serves them only with http_public=1 (http_runtime.c).
 */
int http_parse_listen(const char *v, size_t n, void *dst, char *err, size_t errlen);

/* Whether l is a loopback address: 127.0.0.0/8, ::1 or ::ffff:127.x.y.z.
 * The wildcards (0.0.0.0, ::) are not: they listen on every interface. */
bool http_listen_is_loopback(const http_listen *l);

/* "127.0.0.1:8080" / "[::1]:8080" into buf. */
void http_listen_format(const http_listen *l, uint16_t port, char *buf, size_t cap);

/* What the endpoints serve. */
typedef struct http_source {
	stack_table *table;
	arena *a;
	uint64_t period;
	uint64_t start_realtime_ns;
	pthread_mutex_t *dump_lock; /* held while a profile is built; may be NULL */
	bool with_mappings;
	/* Optional: fills the cost fields the runtime tracks. */
	void (*cost)(void *ctx, metrics_cost *out);
	void *cost_ctx;
	/* Optional: run first in the server thread (mark it as internal),
	 * and last, before it returns. */
	void (*thread_init)(void);
	void (*thread_exit)(void);
	/* Optional: POST /debug/allocprof/start?QUERY and /stop (control.h);
	 * returns the HTTP status, msg the body. NULL: those paths are 404. */
	int (*control)(bool start, const char *query, size_t qlen, char *msg,
		       size_t cap);
	/* Optional: the "timeline" extension's data for
	 * /debug/allocprof/timeline, in a's memory (*data NULL: off). */
	int (*timeline)(arena *a, unsigned char **data, size_t *len);
} http_source;

typedef struct http_server http_server;

/*
 * Bind and listen on l, then start the server thread. On failure returns
 * AP_EIO (errno kept; err gets a one-line reason such as "cannot bind
 * 127.0.0.1:8080: Address already in use") or AP_ENOMEM. src is copied.
 */
int http_server_start(const http_listen *l, const http_source *src,
		      http_server **out, char *err, size_t errlen);
/* The bound port (the kernel's choice when 0 was asked). */
uint16_t http_server_port(const http_server *s);
/* Wake the thread, join it (bounded by HTTP_STOP_TIMEOUT_MS), close every
 * descriptor that is still the server's (the program may have closed or
 * replaced them: never one of its own) and free the server. NULL is allowed. */
long http_server_stop(http_server *s); /* the joined thread's id, or 0 */
/* In a fork child: the thread does not exist there; close the inherited
 * sockets still the server's, so the child never answers on the parent's
 * port (and never closes a descriptor the program put on the same number). */
void http_server_forget(http_server *s);

#endif
