/*
 * codec.c: gzip through zlib and base64, for allocprof/codec.h.
 *
 * zlib's memory hooks are wired to the ap_allocator so the preload runtime
 * never reaches libc malloc through zlib either; zlib's zfree gives no size,
 * so each block carries a 16-byte header holding it (arena allocators want
 * sizes). Decompression grows its output by doubling up to a caller bound,
 * so a few kilobytes of hostile input cannot demand gigabytes.
 */
#include "allocprof/codec.h"
#include "gzstream.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#define ZHDR 16u

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	const ap_allocator *a = opaque;
	size_t n = (size_t)items * size;
	if (size && n / size != items)
		return Z_NULL;
	if (n > SIZE_MAX - ZHDR)
		return Z_NULL;
	unsigned char *p = a->alloc(a->ctx, n + ZHDR);
	if (!p)
		return Z_NULL;
	memcpy(p, &n, sizeof n);
	return p + ZHDR;
}

static void z_free(voidpf opaque, voidpf address)
{
	const ap_allocator *a = opaque;
	if (!address)
		return;
	unsigned char *p = (unsigned char *)address - ZHDR;
	size_t n;
	memcpy(&n, p, sizeof n);
	a->free(a->ctx, p, n + ZHDR);
}

static void z_setup(z_stream *z, const ap_allocator *a)
{
	memset(z, 0, sizeof *z);
	z->zalloc = z_alloc;
	z->zfree = z_free;
	z->opaque = (voidpf)(uintptr_t)a; /* zlib's opaque is not const */
}

static void set_reason(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_reason(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* An output buffer grown by doubling, always with room for a final NUL. */
struct obuf {
	const ap_allocator *a;
	unsigned char *data;
	size_t len, cap;
};

static int obuf_grow(struct obuf *o, size_t want, size_t limit)
{
	if (want <= o->cap)
		return 0;
	size_t ncap = o->cap ? o->cap : 4096;
	while (ncap < want)
		ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
	if (ncap > limit)
		ncap = limit;
	if (ncap < want)
		return AP_ERANGE;
	unsigned char *n = o->data
		? o->a->realloc(o->a->ctx, o->data, o->cap, ncap)
		: o->a->alloc(o->a->ctx, ncap);
	if (!n)
		return AP_ENOMEM;
	o->data = n;
	o->cap = ncap;
	return 0;
}

/* Shrink to len + 1 bytes, NUL-terminate and hand out. */
static int obuf_finish(struct obuf *o, unsigned char **out, size_t *out_len)
{
	int rc = obuf_grow(o, o->len + 1, SIZE_MAX);
	if (rc)
		return rc;
	if (o->cap != o->len + 1) {
		unsigned char *n = o->a->realloc(o->a->ctx, o->data, o->cap,
						 o->len + 1);
		if (!n)
			return AP_ENOMEM;
		o->data = n;
		o->cap = o->len + 1;
	}
	o->data[o->len] = '\0';
	*out = o->data;
	*out_len = o->len;
	o->data = NULL;
	return 0;
}

static void obuf_free(struct obuf *o)
{
	if (o->data)
		o->a->free(o->a->ctx, o->data, o->cap);
	o->data = NULL;
}

bool ap_gzip_detect(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	return len >= 2 && b && b[0] == 0x1f && b[1] == 0x8b;
}

/* ---- gzip, fed in pieces (gzstream.h) --------------------------------- */

struct apx_gz {
	z_stream z;
	struct obuf o;
	int rc; /* the first error; later calls do nothing */
};

/* Run deflate over what next_in holds (flush: Z_NO_FLUSH or Z_FINISH),
 * growing the output as it fills. */
static void gz_run(apx_gz *g, int flush)
{
	for (;;) {
		if (g->o.cap - g->o.len < 64 &&
		    (g->rc = obuf_grow(&g->o, g->o.cap + 1, SIZE_MAX)))
			return;
		size_t room = g->o.cap - g->o.len;
		g->z.next_out = g->o.data + g->o.len;
		g->z.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
		uInt before_out = g->z.avail_out;
		int zrc = deflate(&g->z, flush);
		g->o.len += before_out - g->z.avail_out;
		if (zrc == Z_STREAM_END)
			return;
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			g->rc = zrc == Z_MEM_ERROR ? AP_ENOMEM : AP_EINVAL;
			return;
		}
		/* Z_NO_FLUSH is done once the input is taken and the output
		 * had room left; Z_FINISH only at Z_STREAM_END. */
		if (flush == Z_NO_FLUSH && g->z.avail_in == 0 && g->z.avail_out > 0)
			return;
	}
}

int apx_gz_begin(apx_gz **out, size_t total, int level, const ap_allocator *alloc)
{
	*out = NULL;
	if (level < -1 || level > 9)
		return AP_EINVAL;
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	apx_gz *g = a->alloc(a->ctx, sizeof *g);
	if (!g)
		return AP_ENOMEM;
	memset(g, 0, sizeof *g);
	z_setup(&g->z, a);
	g->o.a = a;
	/* The state is what the runtime's dump adds to a program's peak:
	 * (4 << wbits) bytes of window and hash chains, plus
	 * (1 << (mem_level + 8)) each for the hash heads and the pending
	 * output. A window wider than the input finds nothing more, so it is
	 * sized to the input (at most zlib's 32 KiB); memLevel 6 instead of
	 * 8 gave the same size within 0.3% (smaller, even, on a 1.8 MB
	 * profile) on the runtime's profiles. A 34 KB profile so needs
	 * 160 KiB instead of 256, a 4 KB one 48 KiB. + 16 selects the gzip
	 * wrapper. */
	int wbits = 9;
	while (wbits < 15 && ((size_t)1 << wbits) < total)
		wbits++;
	int zrc = deflateInit2(&g->z, level, Z_DEFLATED, wbits + 16, 6,
			       Z_DEFAULT_STRATEGY);
	if (zrc != Z_OK) {
		a->free(a->ctx, g, sizeof *g);
		return zrc == Z_MEM_ERROR ? AP_ENOMEM : AP_EINVAL;
	}
	/* deflateBound's size exactly, not obuf_grow's next power of two:
	 * the output never needs more when the input is `total` bytes. */
	size_t want = (size_t)deflateBound(&g->z, (uLong)total) + 1;
	g->o.data = a->alloc(a->ctx, want);
	if (g->o.data)
		g->o.cap = want;
	else
		g->rc = AP_ENOMEM;
	*out = g;
	return 0;
}

void apx_gz_feed(apx_gz *g, const void *in, size_t len)
{
	const unsigned char *src = in;
	while (!g->rc && len) {
		uInt chunk = len > UINT_MAX ? UINT_MAX : (uInt)len;
		g->z.next_in = (Bytef *)(uintptr_t)src;
		g->z.avail_in = chunk;
		gz_run(g, Z_NO_FLUSH);
		size_t taken = chunk - g->z.avail_in;
		src += taken;
		len -= taken;
	}
}

int apx_gz_end(apx_gz *g, unsigned char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	const ap_allocator *a = g->o.a;
	if (!g->rc) {
		g->z.next_in = NULL;
		g->z.avail_in = 0;
		gz_run(g, Z_FINISH);
	}
	deflateEnd(&g->z);
	int rc = g->rc;
	if (!rc)
		rc = obuf_finish(&g->o, out, out_len);
	obuf_free(&g->o);
	a->free(a->ctx, g, sizeof *g);
	return rc;
}

int ap_gzip_compress(const void *in, size_t len, int level,
		     const ap_allocator *alloc, unsigned char **out,
		     size_t *out_len)
{
	if (!out || !out_len || (!in && len) || level < -1 || level > 9)
		return AP_EINVAL;
	*out = NULL;
	*out_len = 0;
	apx_gz *g;
	int rc = apx_gz_begin(&g, len, level, alloc);
	if (rc)
		return rc;
	apx_gz_feed(g, in, len);
	return apx_gz_end(g, out, out_len);
}

/* Inflate one gzip member starting at *pos; appends to o. */
static int inflate_member(z_stream *z, const unsigned char *in, size_t len,
			  size_t *pos, struct obuf *o, size_t max_out,
			  char *err, size_t errlen)
{
	size_t start = *pos;
	for (;;) {
		size_t left = len - *pos;
		z->next_in = (Bytef *)(uintptr_t)(in + *pos);
		z->avail_in = left > UINT_MAX ? UINT_MAX : (uInt)left;
		uInt fed = z->avail_in;
		if (o->cap == o->len) {
			int rc = obuf_grow(o, o->len + 1, max_out);
			if (rc == AP_ERANGE)
				set_reason(err, errlen, "gzip data inflates to "
					   "more than %zu bytes", max_out);
			if (rc)
				return rc;
		}
		size_t room = o->cap - o->len;
		z->next_out = o->data + o->len;
		z->avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
		uInt before_out = z->avail_out;
		int zrc = inflate(z, Z_NO_FLUSH);
		o->len += before_out - z->avail_out;
		*pos += fed - z->avail_in;
		if (zrc == Z_STREAM_END)
			return 0;
		if (zrc == Z_MEM_ERROR)
			return AP_ENOMEM;
		if (zrc == Z_BUF_ERROR && *pos == len) {
			set_reason(err, errlen, "truncated gzip member at "
				   "offset %zu", start);
			return AP_ECORRUPT;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			set_reason(err, errlen, "bad gzip data in the member at "
				   "offset %zu: %s", start,
				   z->msg ? z->msg : "inflate failed");
			return AP_ECORRUPT;
		}
	}
}

int ap_gzip_decompress(const void *in, size_t len, size_t max_out,
		       const ap_allocator *alloc, unsigned char **out,
		       size_t *out_len, char *err, size_t errlen)
{
	if (!out || !out_len || (!in && len))
		return AP_EINVAL;
	*out = NULL;
	*out_len = 0;
	if (!max_out)
		max_out = AP_GZIP_MAX_DEFAULT;
	if (!ap_gzip_detect(in, len)) {
		set_reason(err, errlen, "not gzip data (no 1f 8b magic)");
		return AP_ECORRUPT;
	}
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	z_stream z;
	z_setup(&z, a);
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return AP_ENOMEM;
	struct obuf o = { a, NULL, 0, 0 };
	size_t pos = 0;
	int rc = 0;
	while (!rc) {
		rc = inflate_member(&z, in, len, &pos, &o, max_out, err, errlen);
		if (rc || pos == len)
			break;
		if (!ap_gzip_detect((const unsigned char *)in + pos, len - pos)) {
			set_reason(err, errlen, "%zu bytes of trailing garbage "
				   "after gzip data at offset %zu", len - pos,
				   pos);
			rc = AP_ECORRUPT;
			break;
		}
		if (inflateReset(&z) != Z_OK)
			rc = AP_ENOMEM;
	}
	inflateEnd(&z);
	/* The NUL byte obuf_finish adds may exceed max_out by one: fine. */
	if (!rc)
		rc = obuf_finish(&o, out, out_len);
	obuf_free(&o);
	return rc;
}

int ap_gzip_input(const unsigned char *in, size_t len, size_t max_len,
		  const ap_allocator *alloc, const unsigned char **data,
		  size_t *data_len, unsigned char **plain, size_t *plain_len,
		  char *err, size_t errlen)
{
	if (!data || !data_len || !plain || !plain_len || (!in && len))
		return AP_EINVAL;
	*data = in;
	*data_len = len;
	*plain = NULL;
	*plain_len = 0;
	if (ap_gzip_detect(in, len)) {
		int rc = ap_gzip_decompress(in, len, max_len, alloc, plain,
					    plain_len, err, errlen);
		if (!rc) {
			*data = *plain;
			*data_len = *plain_len;
		}
		return rc;
	}
	if (len > max_len) {
		set_reason(err, errlen, "input of %zu bytes exceeds the "
			   "%zu-byte limit", len, max_len);
		return AP_ERANGE;
	}
	return 0;
}

/* ---- base64 ---------------------------------------------------------- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t ap_base64_encoded_len(size_t n)
{
	size_t groups = n / 3 + (n % 3 != 0);
	if (groups > (SIZE_MAX - 1) / 4)
		return 0;
	return groups * 4;
}

int ap_base64_encode(const void *in, size_t len, const ap_allocator *alloc,
		     char **out, size_t *out_len)
{
	if (!out || !out_len || (!in && len))
		return AP_EINVAL;
	*out = NULL;
	*out_len = 0;
	size_t n = ap_base64_encoded_len(len);
	if (!n && len)
		return AP_ERANGE;
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	char *dst = a->alloc(a->ctx, n + 1);
	if (!dst)
		return AP_ENOMEM;
	const unsigned char *s = in;
	size_t j = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		dst[j++] = b64_alphabet[v >> 18 & 63];
		dst[j++] = b64_alphabet[v >> 12 & 63];
		dst[j++] = i + 1 < len ? b64_alphabet[v >> 6 & 63] : '=';
		dst[j++] = i + 2 < len ? b64_alphabet[v & 63] : '=';
	}
	dst[j] = '\0';
	*out = dst;
	*out_len = j;
	return 0;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int ap_base64_decode(const char *in, size_t len, const ap_allocator *alloc,
		     unsigned char **out, size_t *out_len)
{
	if (!out || !out_len || (!in && len))
		return AP_EINVAL;
	*out = NULL;
	*out_len = 0;
	/* Strip padding: only when the text is whole quads, at most two. */
	size_t n = len;
	if (len % 4 == 0 && len) {
		if (in[n - 1] == '=')
			n--;
		if (in[n - 1] == '=')
			n--;
	}
	if (n % 4 == 1)
		return AP_ECORRUPT;
	size_t olen = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	unsigned char *dst = a->alloc(a->ctx, olen + 1);
	if (!dst)
		return AP_ENOMEM;
	size_t j = 0;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		size_t k;
		for (k = 0; k < 4 && i + k < n; k++) {
			int d = b64_value(in[i + k]);
			if (d < 0)
				goto corrupt;
			v |= (uint32_t)d << (18 - 6 * k);
		}
		/* k symbols carry k - 1 bytes; the unused low bits must be 0. */
		if ((k == 2 && (v & 0xffff)) || (k == 3 && (v & 0xff)))
			goto corrupt;
		dst[j++] = (unsigned char)(v >> 16);
		if (k > 2)
			dst[j++] = (unsigned char)(v >> 8);
		if (k > 3)
			dst[j++] = (unsigned char)v;
	}
	dst[j] = '\0';
	*out = dst;
	*out_len = j;
	return 0;
corrupt:
	a->free(a->ctx, dst, olen + 1);
	return AP_ECORRUPT;
}
