/*
 * push.h: push=URL, sending profiles to a collector that does not scrape
 * (docs/HTTP.md, "Push").
 *
 * Each profile the runtime writes (and, with push_interval=, one more every
 * interval that is not written to disk) is sent as the body of an HTTP/1.1
 * POST in the form Pyroscope's ingest endpoint takes [R25]:
 * PATH?name=NAME&from=START&until=NOW&format=pprof&spyName=allocprof,
 * Content-Type application/octet-stream, the gzip'd pprof as is.
 *
 * Sending happens in a thread of its own (started by the dumper thread,
 * every signal blocked), never in the program's threads: the dumping
 * thread copies the body into a pending slot (a newer profile replaces one
 * not sent yet: they are cumulative) and returns. Each attempt has
 * PUSH_CONNECT_MS to connect and PUSH_IO_MS to send and read the status
 * line; failures (refused, timed out, 5xx) are retried PUSH_ATTEMPTS times
 * in all, after PUSH_BACKOFF_MS and twice that, then the profile is
 * dropped; a 4xx answer is not retried. One line on stderr at the first
 * failure, one when pushing works again. At exit the program waits at most
 * PUSH_EXIT_WAIT_MS for the last profile to go out, and not at all when
 * the last delivery failed.
 *
 * Plain http only; loopback destinations unless push_public=1 (profiles
 * show heap addresses and symbol names, and plain http shows them to the
 * network: a local agent that forwards over TLS is the intended setup).
 */
#ifndef AP_PRELOAD_PUSH_H
#define AP_PRELOAD_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_extra.h"

#define PUSH_CONNECT_MS 1000
#define PUSH_IO_MS 2000
#define PUSH_ATTEMPTS 3
#define PUSH_BACKOFF_MS 500
#define PUSH_EXIT_WAIT_MS 1000
/* Longest application name (push_name=), NUL included. */
#define PUSH_NAME_CAP 256

/* At initialisation: check the destination (loopback, format=pprof). */
void push_configure(void);
bool push_enabled(void);
/* From the dumper thread: start the sending thread (once per process). */
void push_start(void);
/* Stop the sending thread of this process and join it (after a delivery
 * under way; a pending profile waits for the next push_start, which the
 * dumper thread makes when it starts). The thread's id, or 0 when none
 * ran. */
long push_stop(void);
/* Monotonic time of the next push_interval profile, 0 = none. */
uint64_t push_next(void);
/* Is that profile due at now? (then the next one is scheduled) */
bool push_due(uint64_t now_ns);
/* A dump_input.on_written hook: copy the body for the sending thread. */
void push_enqueue(const void *body, size_t len, uint64_t start_ns, uint64_t end_ns);
/* At exit, after the last dump: wait for it to be sent, bounded. */
void push_at_exit(void);
void push_atfork_child(void);

/* ---- pure parts (unit tests, fuzzing) ----------------------------------- */

/* The request head into buf: 0, or AP_ERANGE when it does not fit. */
int push_format_head(char *buf, size_t cap, size_t *len, const rt_push_url *u,
		     const char *name, uint64_t from_s, uint64_t until_s,
		     size_t body_len);
/* The status code of an "HTTP/1.x NNN ..." line at the start of (buf, n),
 * or -1. */
int push_parse_status(const char *buf, size_t n);

#endif
