/*
 * http_buf.c: the arena-backed response buffer (http_buf.h). Growth doubles
 * the capacity; vsnprintf with the conversions used here (%s, %d, %llu, %g)
 * does not allocate.
 */
#include "http_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void hb_init(http_buf *b, arena *a)
{
	memset(b, 0, sizeof *b);
	b->a = a;
}

void hb_free(http_buf *b)
{
	arena_free(b->a, b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

bool hb_failed(const http_buf *b)
{
	return b->failed;
}

bool hb_reserve(http_buf *b, size_t n)
{
	if (b->failed)
		return false;
	if (n <= b->cap - b->n)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->n < n) {
		if (cap > ((size_t)1 << 40)) {
			b->failed = true;
			return false;
		}
		cap *= 2;
	}
	char *np = arena_realloc(b->a, b->p, cap);
	if (!np) {
		b->failed = true;
		return false;
	}
	b->p = np;
	b->cap = cap;
	return true;
}

void hb_put(http_buf *b, const void *s, size_t n)
{
	if (n == 0 || !hb_reserve(b, n))
		return;
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

void hb_puts(http_buf *b, const char *s)
{
	hb_put(b, s, strlen(s));
}

void hb_printf(http_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k < 0) {
		b->failed = true;
		return;
	}
	if ((size_t)k < sizeof tmp) {
		hb_put(b, tmp, (size_t)k);
		return;
	}
	/* Longer than the stack buffer: format straight into the buffer. */
	if (!hb_reserve(b, (size_t)k + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
}
