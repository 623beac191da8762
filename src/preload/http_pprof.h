/*
 * http_pprof.h: what makes /debug/pprof/heap and /debug/pprof/allocs behave
 * like Go's net/http/pprof: the query parameters (seconds=, debug=, gc=),
 * delta profiles (the profile at the end of a window minus the profile at
 * its start) and the legacy text form. The server (http.c) owns the
 * connections and the waiting; these are pure functions of profiles.
 */
#ifndef AP_PRELOAD_HTTP_PPROF_H
#define AP_PRELOAD_HTTP_PPROF_H

#include <stdbool.h>
#include <stddef.h>

#include "allocprof/profile.h"
#include "http_buf.h"

/* Longest delta window: the connection waits that long (holding one of the
 * HTTP_MAX_CONNS slots, never the thread). */
#define HTTP_PPROF_MAX_SECONDS 300

/* The /debug/pprof/ page (HTML). */
extern const char http_pprof_index_html[];

/* Go's symbol service (symserv.c): body is '+'-separated hex addresses;
 * appends "0xADDR name" lines, names from the objects' full symbol tables
 * (addresses without one left out); out->failed when out of memory. */
void http_pprof_symbolize(const char *body, size_t n, http_buf *out);

typedef struct http_pprof_query {
	unsigned seconds; /* 0 = no delta */
	bool text;        /* debug=N with N > 0 */
} http_pprof_query;

/*
 * Parse a query string ("seconds=2&debug=1"). gc= and unknown parameters
 * are ignored, as Go does. 0, or -1 with a one-line reason (ending in a
 * newline) in *why for a bad value: seconds not an integer in
 * 1..HTTP_PPROF_MAX_SECONDS, debug not a non-negative integer, or seconds
 * and debug together (Go refuses that pair too).
 */
int http_pprof_parse_query(const char *q, size_t n, http_pprof_query *out,
			   const char **why);

/*
 * now -= base, sample by sample: samples are matched by their stack (the
 * addresses of their locations, leaf first) and their labels, and every
 * value is subtracted (all of an allocprof heap profile's values are
 * additive sums, ap_heap_sums). Samples equal at both ends cancel and are
 * removed; samples only in base are added to now negated (their locations
 * added by address). In-use values may be negative: memory allocated
 * before the window and freed in it. Comments (cumulative histograms) are
 * dropped, time_nanos becomes the start and duration_nanos the window.
 * 0 or AP_ENOMEM / AP_EINVAL.
 */
int http_pprof_delta(ap_profile *now, const ap_profile *base);

/*
 * The legacy text form of a heap profile, as gperftools writes it and both
 * `go tool pprof` and jeprof read: "heap profile: IN_OBJ: IN_BYTES
 * [ALLOC_OBJ: ALLOC_BYTES] @ heap_v2/R", one such counts line per stack
 * followed by "@ ADDR...", then MAPPED_LIBRARIES (/proc/self/maps).
 * Written from ap_heapv2_encode (which makes the values unbiased again for
 * the readers' own correction). 0 or an AP_* error.
 */
int http_pprof_text(const ap_profile *p, const char *maps, http_buf *out);

#endif
