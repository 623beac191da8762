/*
 * http_buf.h: a growable byte buffer in the runtime's arena, for building
 * HTTP responses (headers, Prometheus text, protobuf) without malloc.
 *
 * Errors are sticky: after a failed growth every append is a no-op and
 * hb_failed() says so, so a response is written whole and checked once.
 */
#ifndef AP_PRELOAD_HTTP_BUF_H
#define AP_PRELOAD_HTTP_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"

typedef struct http_buf {
	arena *a;
	char *p;
	size_t n, cap;
	bool failed;
} http_buf;

void hb_init(http_buf *b, arena *a);
/* Give the memory back (b may be reused after hb_init). */
void hb_free(http_buf *b);
void hb_put(http_buf *b, const void *s, size_t n);
void hb_puts(http_buf *b, const char *s);
void hb_printf(http_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Make room for n more bytes; false when the buffer has failed. */
bool hb_reserve(http_buf *b, size_t n);
bool hb_failed(const http_buf *b);

#endif
