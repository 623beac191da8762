/*
 * hist_buf.c: the growable output buffer the histogram encoders and exporters
 * write into (binary, JSON, Prometheus and OpenTelemetry text), through the
 * caller's allocator, with the first error kept so writers check once at the
 * end; and 128-bit decimal formatting, which printf lacks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hist_internal.h"

void apx_hist_buf_init(struct hist_buf *b, const ap_allocator *a)
{
	memset(b, 0, sizeof *b);
	b->a = apx_hist_alloc_or_libc(a);
}

static bool reserve(struct hist_buf *b, size_t n)
{
	if (b->err)
		return false;
	if (n <= b->cap - b->len)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->err = AP_ENOMEM;
			return false;
		}
		cap *= 2;
	}
	unsigned char *p = b->p ? b->a->realloc(b->a->ctx, b->p, b->cap, cap)
				: b->a->alloc(b->a->ctx, cap);
	if (!p) {
		b->err = AP_ENOMEM;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void apx_hist_buf_put(struct hist_buf *b, const void *data, size_t n)
{
	if (n && reserve(b, n)) {
		memcpy(b->p + b->len, data, n);
		b->len += n;
	}
}

void apx_hist_buf_puts(struct hist_buf *b, const char *str)
{
	apx_hist_buf_put(b, str, strlen(str));
}

void apx_hist_buf_printf(struct hist_buf *b, const char *fmt, ...)
{
	char small[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = b->err ? b->err : AP_EINVAL;
		return;
	}
	if ((size_t)n < sizeof small) {
		apx_hist_buf_put(b, small, (size_t)n);
		return;
	}
	if (!reserve(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

size_t apx_hist_u128_format(hist_u128 v, char *d)
{
	char tmp[40];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		d[i] = tmp[n - 1 - i];
	d[n] = 0;
	return n;
}

void apx_hist_buf_u128(struct hist_buf *b, hist_u128 v)
{
	char d[41];
	apx_hist_buf_put(b, d, apx_hist_u128_format(v, d));
}

int apx_hist_buf_finish(struct hist_buf *b, unsigned char **out, size_t *len)
{
	apx_hist_buf_put(b, "", 1); /* NUL terminator, not counted */
	if (b->err) {
		if (b->p)
			b->a->free(b->a->ctx, b->p, b->cap);
		return b->err;
	}
	/* Shrink to the exact size so ap_hist_buffer_free can pass it back. */
	unsigned char *p = b->a->realloc(b->a->ctx, b->p, b->cap, b->len);
	*out = p ? p : b->p;
	if (!p) { /* could not shrink: free with the size we still know */
		unsigned char *q = b->a->alloc(b->a->ctx, b->len);
		if (!q) {
			b->a->free(b->a->ctx, b->p, b->cap);
			return AP_ENOMEM;
		}
		memcpy(q, b->p, b->len);
		b->a->free(b->a->ctx, b->p, b->cap);
		*out = q;
	}
	*len = b->len - 1;
	return 0;
}

void ap_hist_buffer_free(const ap_allocator *alloc, void *p, size_t len)
{
	const ap_allocator *a = apx_hist_alloc_or_libc(alloc);
	if (p)
		a->free(a->ctx, p, len + 1);
}
