/*
 * protobuf.c: the protocol buffers wire format helpers of protobuf.h.
 *
 * Wire facts (protobuf.dev, "Encoding"): a tag is varint(field << 3 | type);
 * varints are little-endian base-128, at most 10 bytes for 64 bits; negative
 * int64 values are written as their 64-bit two's complement (10 bytes);
 * length-delimited payloads are varint(length) then the bytes; packed
 * repeated scalars are one length-delimited run of varints. Groups (types 3
 * and 4) are obsolete but must still be skippable.
 */
#include "protobuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Unknown groups may nest; cap the depth so hostile input stays cheap. */
#define PB_MAX_GROUP_DEPTH 64

void apx_pb_writer_init(pb_writer *w, const ap_allocator *a)
{
	memset(w, 0, sizeof *w);
	w->a = a ? a : ap_allocator_libc();
}

void apx_pb_writer_free(pb_writer *w)
{
	if (w->data)
		w->a->free(w->a->ctx, w->data, w->cap);
	w->data = NULL;
	w->len = w->cap = 0;
}

static bool reserve(pb_writer *w, size_t extra)
{
	if (w->err)
		return false;
	if (extra <= w->cap - w->len)
		return true;
	if (extra > SIZE_MAX / 2 - w->len) {
		w->err = AP_ERANGE;
		return false;
	}
	size_t ncap = w->cap ? w->cap : 256;
	while (ncap - w->len < extra)
		ncap *= 2;
	unsigned char *n = w->data
		? w->a->realloc(w->a->ctx, w->data, w->cap, ncap)
		: w->a->alloc(w->a->ctx, ncap);
	if (!n) {
		w->err = AP_ENOMEM;
		return false;
	}
	w->data = n;
	w->cap = ncap;
	return true;
}

size_t apx_pb_varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t varint_write(unsigned char *dst, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		dst[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (unsigned char)v;
	return n;
}

void apx_pb_put_varint(pb_writer *w, uint64_t v)
{
	if (reserve(w, 10))
		w->len += varint_write(w->data + w->len, v);
}

void apx_pb_put_tag(pb_writer *w, uint32_t field, enum pb_wire wt)
{
	apx_pb_put_varint(w, (uint64_t)field << 3 | (uint64_t)wt);
}

void apx_pb_put_uint_field(pb_writer *w, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	apx_pb_put_tag(w, field, PB_VARINT);
	apx_pb_put_varint(w, v);
}

void apx_pb_put_bytes_field(pb_writer *w, uint32_t field, const void *s, size_t n)
{
	apx_pb_put_tag(w, field, PB_LEN);
	apx_pb_put_varint(w, n);
	if (n && reserve(w, n)) {
		memcpy(w->data + w->len, s, n);
		w->len += n;
	}
}

void apx_pb_put_packed(pb_writer *w, uint32_t field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t mark = apx_pb_begin_msg(w, field);
	for (size_t i = 0; i < n; i++)
		apx_pb_put_varint(w, v[i]);
	apx_pb_end_msg(w, mark);
}

size_t apx_pb_begin_msg(pb_writer *w, uint32_t field)
{
	apx_pb_put_tag(w, field, PB_LEN);
	return w->len;
}

void apx_pb_end_msg(pb_writer *w, size_t mark)
{
	if (w->err)
		return;
	size_t body = w->len - mark;
	size_t n = apx_pb_varint_len(body);
	if (!reserve(w, n))
		return;
	memmove(w->data + mark + n, w->data + mark, body);
	varint_write(w->data + mark, body);
	w->len += n;
}

/* ---- reader ---------------------------------------------------------- */

int apx_pb_fail(pb_reader *r, const char *fmt, ...)
{
	if (r->err && r->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->err, r->errlen, fmt, ap);
		va_end(ap);
	}
	return AP_ECORRUPT;
}

bool apx_pb_more(const pb_reader *r)
{
	return r->pos < r->len;
}

size_t apx_pb_offset(const pb_reader *r)
{
	return r->base + r->pos;
}

int apx_pb_get_varint(pb_reader *r, uint64_t *v)
{
	size_t start = r->pos;
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->pos >= r->len)
			return apx_pb_fail(r, "truncated varint at offset %zu",
				       r->base + start);
		unsigned char b = r->p[r->pos++];
		/* The 10th byte may only carry the top bit of 64. */
		if (shift == 63 && b > 1)
			return apx_pb_fail(r, "varint overflows 64 bits at offset %zu",
				       r->base + start);
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return apx_pb_fail(r, "varint longer than 10 bytes at offset %zu",
		       r->base + start);
}

int apx_pb_get_tag(pb_reader *r, uint32_t *field, enum pb_wire *wt)
{
	size_t at = apx_pb_offset(r);
	uint64_t t = 0;
	int rc = apx_pb_get_varint(r, &t);
	if (rc)
		return rc;
	uint64_t f = t >> 3;
	unsigned w = (unsigned)(t & 7);
	if (f == 0 || f > PB_MAX_FIELD)
		return apx_pb_fail(r, "invalid field number %llu at offset %zu",
			       (unsigned long long)f, at);
	if (w > PB_FIXED32)
		return apx_pb_fail(r, "invalid wire type %u at offset %zu", w, at);
	*field = (uint32_t)f;
	*wt = (enum pb_wire)w;
	return 0;
}

int apx_pb_get_len(pb_reader *r, pb_reader *sub)
{
	size_t at = apx_pb_offset(r);
	uint64_t n = 0;
	int rc = apx_pb_get_varint(r, &n);
	if (rc)
		return rc;
	if (n > r->len - r->pos)
		return apx_pb_fail(r, "length %llu at offset %zu runs past the end "
			       "of its message (%zu bytes left)",
			       (unsigned long long)n, at, r->len - r->pos);
	*sub = *r;
	sub->p = r->p + r->pos;
	sub->len = (size_t)n;
	sub->pos = 0;
	sub->base = r->base + r->pos;
	r->pos += (size_t)n;
	return 0;
}

static int skip_fixed(pb_reader *r, size_t n)
{
	if (n > r->len - r->pos)
		return apx_pb_fail(r, "truncated %zu-byte fixed field at offset %zu",
			       n, apx_pb_offset(r));
	r->pos += n;
	return 0;
}

static int skip_scalar(pb_reader *r, enum pb_wire wt)
{
	uint64_t v;
	pb_reader sub = { NULL, 0, 0, 0, NULL, 0 };
	switch (wt) {
	case PB_VARINT: return apx_pb_get_varint(r, &v);
	case PB_FIXED64: return skip_fixed(r, 8);
	case PB_FIXED32: return skip_fixed(r, 4);
	case PB_LEN: return apx_pb_get_len(r, &sub);
	default: return apx_pb_fail(r, "unexpected wire type %d", (int)wt);
	}
}

int apx_pb_skip(pb_reader *r, uint32_t field, enum pb_wire wt)
{
	if (wt == PB_EGROUP)
		return apx_pb_fail(r, "unmatched end-group for field %u at offset "
			       "%zu", field, apx_pb_offset(r));
	if (wt != PB_SGROUP)
		return skip_scalar(r, wt);
	/* A group runs until the end-group tag of the same field; groups in
	 * it nest. Track the open field numbers on a small stack. */
	uint32_t open[PB_MAX_GROUP_DEPTH];
	size_t depth = 0;
	open[depth++] = field;
	while (depth) {
		uint32_t f = 0;
		enum pb_wire w = PB_VARINT;
		if (!apx_pb_more(r))
			return apx_pb_fail(r, "group of field %u not closed before "
				       "offset %zu", open[depth - 1],
				       apx_pb_offset(r));
		int rc = apx_pb_get_tag(r, &f, &w);
		if (rc)
			return rc;
		if (w == PB_SGROUP) {
			if (depth == PB_MAX_GROUP_DEPTH)
				return apx_pb_fail(r, "groups nested deeper than %d "
					       "at offset %zu",
					       PB_MAX_GROUP_DEPTH, apx_pb_offset(r));
			open[depth++] = f;
		} else if (w == PB_EGROUP) {
			if (f != open[depth - 1])
				return apx_pb_fail(r, "end-group for field %u closes "
					       "group %u at offset %zu", f,
					       open[depth - 1], apx_pb_offset(r));
			depth--;
		} else if ((rc = skip_scalar(r, w))) {
			return rc;
		}
	}
	return 0;
}

static const char *wire_name(enum pb_wire wt)
{
	switch (wt) {
	case PB_VARINT: return "varint";
	case PB_FIXED64: return "fixed64";
	case PB_LEN: return "length-delimited";
	case PB_SGROUP: return "start-group";
	case PB_EGROUP: return "end-group";
	case PB_FIXED32: return "fixed32";
	}
	return "unknown";
}

int apx_pb_expect(pb_reader *r, enum pb_wire got, enum pb_wire want,
	      const char *what)
{
	if (got == want)
		return 0;
	return apx_pb_fail(r, "%s has wire type %s, expected %s (before offset "
		       "%zu)", what, wire_name(got), wire_name(want),
		       apx_pb_offset(r));
}

int apx_pb_get_repeated(pb_reader *r, enum pb_wire wt, const char *what,
		    int (*fn)(void *ctx, uint64_t v), void *ctx)
{
	uint64_t v = 0;
	int rc;
	if (wt == PB_VARINT) {
		rc = apx_pb_get_varint(r, &v);
		return rc ? rc : fn(ctx, v);
	}
	if (wt != PB_LEN)
		return apx_pb_expect(r, wt, PB_VARINT, what);
	pb_reader sub = { NULL, 0, 0, 0, NULL, 0 };
	if ((rc = apx_pb_get_len(r, &sub)))
		return rc;
	while (apx_pb_more(&sub)) {
		if ((rc = apx_pb_get_varint(&sub, &v)) || (rc = fn(ctx, v)))
			return rc;
	}
	return 0;
}

int apx_pb_open(pb_reader *r, enum pb_wire wt, const char *what, pb_reader *sub)
{
	int rc = apx_pb_expect(r, wt, PB_LEN, what);
	return rc ? rc : apx_pb_get_len(r, sub);
}

int apx_pb_fields(pb_reader *m, pb_field_fn fn, void *ctx)
{
	while (apx_pb_more(m)) {
		uint32_t f = 0;
		enum pb_wire wt = PB_VARINT;
		int rc = apx_pb_get_tag(m, &f, &wt);
		if (!rc)
			rc = fn(ctx, m, f, wt);
		if (rc)
			return rc;
	}
	return 0;
}
