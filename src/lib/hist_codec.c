/*
 * hist_codec.c: the compact binary form of a histogram snapshot, and the
 * consistency checks every decoder (this one and hist_json.c) applies.
 *
 * Layout, version 1 (docs/HISTOGRAMS.md has the full description):
 *
 *   "APHG"  version(1 byte) = 1  sigbits(1 byte)  flags(1 byte)
 *   varint dropped   varint nbuckets
 *   if nbuckets > 0:
 *     varint min   varint (max - min)   varint128 sum
 *     varint128 sumsq            (absent when flags bit 0: saturated)
 *     nbuckets x { varint key delta, varint count }
 *
 * Varints are LEB128 (7 bits a byte, least significant first), canonical:
 * no trailing zero groups. The first bucket stores its key, every later one
 * key - previous key - 1, so dense runs cost one byte each plus the count.
 * Decoding never trusts a length: every read is bounds-checked, bucket counts
 * are capped by the bytes left, and the result is checked for consistency.
 */
#include <string.h>

#include "hist_internal.h"

#define MAGIC "APHG"
#define VERSION 1
#define FLAG_SQ_SAT 1u

static void put_varint(struct hist_buf *b, hist_u128 v)
{
	unsigned char tmp[19];
	size_t n = 0;
	do {
		unsigned char byte = (unsigned char)(v & 0x7f);
		v >>= 7;
		tmp[n++] = v ? (unsigned char)(byte | 0x80) : byte;
	} while (v);
	apx_hist_buf_put(b, tmp, n);
}

int ap_hist_encode(const ap_hist_snap *s, const ap_allocator *alloc,
		   unsigned char **out, size_t *len)
{
	if (!s || !out || !len)
		return AP_EINVAL;
	struct hist_buf b;
	apx_hist_buf_init(&b, alloc);
	unsigned char head[7] = {'A', 'P', 'H', 'G', VERSION,
				 (unsigned char)s->sigbits,
				 s->sq_sat ? FLAG_SQ_SAT : 0};
	apx_hist_buf_put(&b, head, sizeof head);
	put_varint(&b, s->dropped);
	put_varint(&b, s->n);
	if (s->n) {
		put_varint(&b, s->min);
		put_varint(&b, s->max - s->min);
		put_varint(&b, s->sum);
		if (!s->sq_sat)
			put_varint(&b, s->sumsq);
	}
	for (size_t i = 0; i < s->n; i++) {
		put_varint(&b, i ? s->keys[i] - s->keys[i - 1] - 1 : s->keys[0]);
		put_varint(&b, s->counts[i]);
	}
	return apx_hist_buf_finish(&b, out, len);
}

struct reader {
	const unsigned char *p, *end;
};

/* A canonical LEB128 of at most `bits` bits. */
static int get_varint(struct reader *r, unsigned bits, hist_u128 *out)
{
	hist_u128 v = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (r->p == r->end || shift >= bits)
			return AP_ECORRUPT;
		unsigned char byte = *r->p++;
		hist_u128 part = (hist_u128)(byte & 0x7f);
		if (shift && (part >> (bits - shift < 7 ? bits - shift : 7)))
			return AP_ECORRUPT; /* bits beyond the type */
		v |= part << shift;
		if (!(byte & 0x80)) {
			if (shift && !byte)
				return AP_ECORRUPT; /* overlong */
			*out = v;
			return 0;
		}
	}
}

static int get_u64(struct reader *r, uint64_t *out)
{
	hist_u128 v = 0;
	int rc = get_varint(r, 64, &v);
	*out = (uint64_t)v;
	return rc;
}

int apx_hist_snap_validate(const ap_hist_snap *s)
{
	if (!s->n)
		return s->min == 0 && s->max == 0 && s->sum == 0 &&
				       s->sumsq == 0 && !s->sq_sat
			       ? 0
			       : AP_ECORRUPT;
	uint64_t lo, hi;
	if (s->min > s->max)
		return AP_ECORRUPT;
	/* Every non-empty bucket must meet [min, max]; buckets are sorted, so
	 * checking the first and the last is enough. */
	hist_bounds(s->sigbits, s->keys[0], &lo, &hi);
	if (hi < s->min || lo > s->max)
		return AP_ECORRUPT;
	hist_bounds(s->sigbits, s->keys[s->n - 1], &lo, &hi);
	if (hi < s->min || lo > s->max)
		return AP_ECORRUPT;
	/* n min <= sum <= n max, and if n > 1 the extremes are two values. */
	hist_u128 n = s->count;
	if (s->sum < n * s->min || s->sum > n * s->max)
		return AP_ECORRUPT;
	if (n == 1 && (s->min != s->max || s->sum != s->min))
		return AP_ECORRUPT;
	if (!s->sq_sat) {
		/* min * sum <= sumsq <= max * sum (x^2 lies between min x and
		 * max x); a product past 2^128 makes its bound trivially true
		 * (upper) or violated (lower). */
		hist_u128 p;
		if (__builtin_mul_overflow(s->sum, (hist_u128)s->min, &p) ||
		    s->sumsq < p)
			return AP_ECORRUPT;
		if (!__builtin_mul_overflow(s->sum, (hist_u128)s->max, &p) &&
		    s->sumsq > p)
			return AP_ECORRUPT;
		/* Cauchy-Schwarz, n sumsq >= sum^2, weakened to what fits in
		 * 128 bits: sumsq >= floor(sum / n) * sum. */
		if (__builtin_mul_overflow(s->sum / n, s->sum, &p) ||
		    s->sumsq < p)
			return AP_ECORRUPT;
	}
	return 0;
}

static int decode_body(struct reader *r, ap_hist_snap *s, unsigned flags)
{
	uint64_t nb, span, key = 0;
	hist_u128 v;
	int rc;
	if ((rc = get_u64(r, &s->dropped)) || (rc = get_u64(r, &nb)))
		return rc;
	/* Each bucket takes at least two bytes: a cheap cap on nb before any
	 * allocation, so a forged count cannot make us allocate gigabytes. */
	if (nb > hist_nkeys(s->sigbits) || nb > (uint64_t)(r->end - r->p) / 2)
		return AP_ECORRUPT;
	if (nb) {
		if ((rc = get_u64(r, &s->min)) || (rc = get_u64(r, &span)) ||
		    span > UINT64_MAX - s->min || (rc = get_varint(r, 128, &v)))
			return rc ? rc : AP_ECORRUPT;
		s->max = s->min + span;
		s->sum = v;
		if (!(flags & FLAG_SQ_SAT) && (rc = get_varint(r, 128, &s->sumsq)))
			return rc;
	} else {
		s->min = 0;
	}
	s->sq_sat = flags & FLAG_SQ_SAT;
	for (uint64_t i = 0; i < nb; i++) {
		uint64_t delta, count;
		if ((rc = get_u64(r, &delta)) || (rc = get_u64(r, &count)))
			return rc;
		if (i && delta >= UINT64_MAX - key)
			return AP_ECORRUPT;
		key = i ? key + delta + 1 : delta;
		if (key >= hist_nkeys(s->sigbits) || !count)
			return AP_ECORRUPT;
		rc = apx_hist_snap_push(s, (uint32_t)key, count);
		if (rc)
			return rc == AP_ERANGE ? AP_ECORRUPT : rc;
	}
	if (r->p != r->end)
		return AP_ECORRUPT; /* trailing bytes */
	return apx_hist_snap_validate(s);
}

int ap_hist_decode(const void *buf, size_t len, const ap_allocator *alloc,
		   ap_hist_snap **out)
{
	if (!out || (!buf && len))
		return AP_EINVAL;
	const unsigned char *p = buf;
	if (len < 7 || memcmp(p, MAGIC, 4))
		return AP_ECORRUPT;
	if (p[4] != VERSION)
		return p[4] > VERSION ? AP_EVERSION : AP_ECORRUPT;
	if (!hist_sigbits_ok(p[5]) || (p[6] & ~FLAG_SQ_SAT))
		return AP_ECORRUPT;
	ap_hist_snap *s;
	int rc = apx_hist_snap_new(alloc, p[5], 0, &s);
	if (rc)
		return rc;
	struct reader r = {p + 7, p + len};
	rc = decode_body(&r, s, p[6]);
	if (rc) {
		ap_hist_snap_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}
