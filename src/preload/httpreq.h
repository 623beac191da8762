/*
 * httpreq.h: a bounded, allocation-free parser for the head of an HTTP/1.x
 * request (request line and header fields, RFC 9112 sections 2-5), used by
 * the runtime's HTTP endpoint (src/preload/http.c).
 *
 * The parser is pure: it reads (buf, len), writes only *out, never
 * allocates and never reads outside the buffer. Results point into buf.
 * It is deliberately strict where leniency has caused request smuggling
 * (whitespace before ':', obsolete line folding, bare CR, control bytes)
 * and lenient where RFC 9112 allows it (a bare LF ends a line; empty lines
 * before the request line are skipped). Bodies are not parsed: the caller
 * answers GET/HEAD only and closes the connection after each response.
 */
#ifndef ALLOCPROF_HTTPREQ_H
#define ALLOCPROF_HTTPREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

/* Header fields kept per request; more is AP_ERANGE (HTTP 431). */
#define HTTPREQ_MAX_HEADERS 32

/* Returned when the head is valid so far but not complete (not an error). */
#define HTTPREQ_INCOMPLETE 1

typedef enum httpreq_method {
	HTTPREQ_OTHER = 0, /* a valid token we do not implement */
	HTTPREQ_GET,
	HTTPREQ_HEAD,
	HTTPREQ_POST,
	HTTPREQ_PUT,
	HTTPREQ_DELETE,
	HTTPREQ_OPTIONS
} httpreq_method;

typedef struct httpreq_str {
	const char *p; /* into the parsed buffer; not NUL-terminated */
	size_t n;
} httpreq_str;

typedef struct httpreq_header {
	httpreq_str name;  /* token, case as sent */
	httpreq_str value; /* leading and trailing blanks removed */
} httpreq_header;

typedef struct httpreq {
	httpreq_method method;
	httpreq_str method_name;
	httpreq_str target; /* request-target as sent */
	httpreq_str path;   /* absolute path ("/..."), query removed */
	httpreq_str query;  /* after '?', empty when none */
	int version_minor;  /* HTTP/1.0 -> 0, HTTP/1.1 -> 1 */
	httpreq_header headers[HTTPREQ_MAX_HEADERS];
	size_t nheaders;
	size_t head_len; /* bytes of the head, final empty line included */
} httpreq;

/*
 * Parse the request head at the start of (buf, len). max_head bounds the
 * head's size (0 = 8192 bytes). Returns
 *   0                   complete: *out filled, out->head_len consumed;
 *   HTTPREQ_INCOMPLETE  every complete line is valid, more bytes needed;
 *   AP_ECORRUPT         malformed (answer 400);
 *   AP_ERANGE           head longer than max_head, or too many header
 *                       fields, or one line longer than max_head (431);
 *   AP_EVERSION         a well-formed version other than HTTP/1.0 or 1.1
 *                       (505);
 *   AP_EINVAL           buf or out NULL.
 * An HTTP/1.1 request must carry exactly one Host field (RFC 9112 3.2).
 * The request-target must be origin-form ("/path?query") or absolute-form
 * ("http://host/path"); path and query are then taken from it.
 */
int httpreq_parse(const char *buf, size_t len, size_t max_head, httpreq *out);

/* The value of the first header named name (ASCII case-insensitive), or
 * NULL. */
const httpreq_str *httpreq_header_value(const httpreq *r, const char *name);

/*
 * Whether an Accept field value lists media type `type` ("type/subtype",
 * compared case-insensitively) with every "key=value" string of
 * params[0..nparams) among its parameters (keys case-insensitive, values
 * exact; quoted values allowed) and a q-value above 0. Never reads outside
 * (value, n).
 */
bool httpreq_accepts(const char *value, size_t n, const char *type,
		     const char *const *params, size_t nparams);

/* True when (s, n) equals the NUL-terminated lit exactly. */
bool httpreq_str_eq(httpreq_str s, const char *lit);

#endif
