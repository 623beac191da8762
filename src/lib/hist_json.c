/*
 * hist_json.c: the JSON text form of a histogram snapshot, for people and for
 * tools that do not want the binary form:
 *
 *   {"format":"allocprof-hist","version":1,"sigbits":7,"count":3,
 *    "min":1,"max":1000,"sum":1011,"sumsq":1000101,"dropped":0,
 *    "buckets":[[1,1,1],[10,10,1],[1000,1007,1]]}
 *
 * Each bucket is [lo, hi, count] with inclusive bounds, so the file reads
 * without knowing the key function; the decoder checks that each [lo, hi] is
 * a real bucket at that sigbits. Integers are written in full (sum and sumsq
 * up to 2^128 - 1): exact for our decoder, though JavaScript readers lose
 * digits past 2^53. "sumsq" is null when it saturated; "min"/"max" are null
 * for an empty histogram. The decoder is a strict, bounded recursive-descent
 * JSON reader: keys in any order, unknown keys skipped (nesting depth capped),
 * duplicates, missing keys and anything malformed rejected with AP_ECORRUPT.
 */
#include <string.h>

#include "hist_internal.h"

#define FORMAT_NAME "allocprof-hist"
#define VERSION 1
#define MAX_DEPTH 64

int ap_hist_encode_json(const ap_hist_snap *s, const ap_allocator *alloc,
			char **out, size_t *len)
{
	if (!s || !out || !len)
		return AP_EINVAL;
	struct hist_buf b;
	apx_hist_buf_init(&b, alloc);
	apx_hist_buf_printf(&b,
			"{\"format\":\"" FORMAT_NAME "\",\"version\":%d,"
			"\"sigbits\":%u,\"count\":%llu,",
			VERSION, s->sigbits, (unsigned long long)s->count);
	if (s->n)
		apx_hist_buf_printf(&b, "\"min\":%llu,\"max\":%llu,",
				(unsigned long long)s->min,
				(unsigned long long)s->max);
	else
		apx_hist_buf_puts(&b, "\"min\":null,\"max\":null,");
	apx_hist_buf_puts(&b, "\"sum\":");
	apx_hist_buf_u128(&b, s->sum);
	apx_hist_buf_puts(&b, ",\"sumsq\":");
	if (s->sq_sat)
		apx_hist_buf_puts(&b, "null");
	else
		apx_hist_buf_u128(&b, s->sumsq);
	apx_hist_buf_printf(&b, ",\"dropped\":%llu,\"buckets\":[",
			(unsigned long long)s->dropped);
	for (size_t i = 0; i < s->n; i++) {
		uint64_t lo, hi;
		hist_bounds(s->sigbits, s->keys[i], &lo, &hi);
		apx_hist_buf_printf(&b, "%s[%llu,%llu,%llu]", i ? "," : "",
				(unsigned long long)lo, (unsigned long long)hi,
				(unsigned long long)s->counts[i]);
	}
	apx_hist_buf_puts(&b, "]}\n");
	return apx_hist_buf_finish(&b, (unsigned char **)out, len);
}

/* ---- A strict, small JSON reader ---------------------------------------- */

struct jr {
	const unsigned char *p, *end;
};

static void ws(struct jr *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool eat(struct jr *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static bool eat_word(struct jr *j, const char *w)
{
	size_t n = strlen(w);
	ws(j);
	if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, w, n)) {
		j->p += n;
		return true;
	}
	return false;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A string: validated in full; its ASCII content copied to key (NUL-ended)
 * when it fits in keysz - 1 bytes, else key is set to "" (an unknown key).
 */
static int string(struct jr *j, char *key, size_t keysz)
{
	size_t n = 0;
	bool fits = true;
	if (!eat(j, '"'))
		return AP_ECORRUPT;
	for (;;) {
		if (j->p >= j->end)
			return AP_ECORRUPT;
		unsigned c = *j->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return AP_ECORRUPT;
		if (c == '\\') {
			if (j->p >= j->end)
				return AP_ECORRUPT;
			unsigned char e = *j->p++;
			const char *simple = strchr("\"\\/bfnrt", e);
			if (e && simple) {
				c = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
			} else if (e == 'u') {
				if (j->end - j->p < 4)
					return AP_ECORRUPT;
				c = 0;
				for (int i = 0; i < 4; i++) {
					int h = hexval(*j->p++);
					if (h < 0)
						return AP_ECORRUPT;
					c = c * 16 + (unsigned)h;
				}
			} else {
				return AP_ECORRUPT;
			}
		}
		if (c >= 0x80 || c == 0 || n + 1 >= keysz)
			fits = false;
		else if (fits)
			key[n++] = (char)c;
	}
	key[fits ? n : 0] = 0;
	return 0;
}

/* An unsigned integer without sign, fraction or exponent, below 2^bits. */
static int uint(struct jr *j, unsigned bits, hist_u128 *out)
{
	ws(j);
	const unsigned char *start = j->p;
	hist_u128 v = 0, limit = bits >= 128 ? HIST_U128_MAX
					     : ((hist_u128)1 << bits) - 1;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned d = *j->p++ - '0';
		if (v > (limit - d) / 10)
			return AP_ECORRUPT;
		v = v * 10 + d;
	}
	size_t n = (size_t)(j->p - start);
	if (!n || (n > 1 && *start == '0'))
		return AP_ECORRUPT;
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		return AP_ECORRUPT;
	*out = v;
	return 0;
}

static int u64(struct jr *j, uint64_t *out)
{
	hist_u128 v;
	int rc = uint(j, 64, &v);
	*out = (uint64_t)v;
	return rc;
}

/* Skip any JSON value (for unknown keys). */
static int skip_value(struct jr *j, int depth)
{
	char scratch[2];
	if (depth > MAX_DEPTH)
		return AP_ECORRUPT;
	ws(j);
	if (j->p >= j->end)
		return AP_ECORRUPT;
	unsigned char c = *j->p;
	if (c == '"')
		return string(j, scratch, sizeof scratch);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		if (eat(j, close))
			return 0;
		do {
			int rc;
			if (c == '{' && ((rc = string(j, scratch, sizeof scratch)) ||
					 !eat(j, ':')))
				return rc ? rc : AP_ECORRUPT;
			if ((rc = skip_value(j, depth + 1)))
				return rc;
		} while (eat(j, ','));
		return eat(j, close) ? 0 : AP_ECORRUPT;
	}
	if (eat_word(j, "true") || eat_word(j, "false") || eat_word(j, "null"))
		return 0;
	/* A number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
	if (c == '-')
		j->p++;
	const unsigned char *d = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	if (j->p == d || (j->p - d > 1 && *d == '0'))
		return AP_ECORRUPT;
	if (j->p < j->end && *j->p == '.') {
		d = ++j->p;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p == d)
			return AP_ECORRUPT;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		d = j->p;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p == d)
			return AP_ECORRUPT;
	}
	return 0;
}

/* ---- The histogram object ------------------------------------------------ */

enum {
	F_FORMAT = 1 << 0, F_VERSION = 1 << 1, F_SIGBITS = 1 << 2,
	F_COUNT = 1 << 3, F_MIN = 1 << 4, F_MAX = 1 << 5, F_SUM = 1 << 6,
	F_SUMSQ = 1 << 7, F_DROPPED = 1 << 8, F_BUCKETS = 1 << 9,
	F_REQUIRED = (1 << 10) - 1 - F_DROPPED
};

struct fields {
	unsigned seen;
	uint64_t version, sigbits, count, min, max, dropped;
	bool min_null, max_null, sq_null;
	hist_u128 sum, sumsq;
	struct hist_buf triples; /* buckets as uint64 [lo, hi, count] */
};

static int nullable_u64(struct jr *j, uint64_t *v, bool *is_null)
{
	*is_null = eat_word(j, "null");
	return *is_null ? 0 : u64(j, v);
}

static int buckets(struct jr *j, struct hist_buf *out)
{
	if (!eat(j, '['))
		return AP_ECORRUPT;
	if (eat(j, ']'))
		return 0;
	do {
		uint64_t t[3];
		int rc;
		if (!eat(j, '[') || (rc = u64(j, &t[0])) || !eat(j, ',') ||
		    (rc = u64(j, &t[1])) || !eat(j, ',') ||
		    (rc = u64(j, &t[2])) || !eat(j, ']'))
			return AP_ECORRUPT;
		apx_hist_buf_put(out, t, sizeof t);
		if (out->err)
			return out->err;
	} while (eat(j, ','));
	return eat(j, ']') ? 0 : AP_ECORRUPT;
}

static int field(struct jr *j, const char *key, struct fields *f)
{
	static const char *const names[] = {"format", "version", "sigbits",
					    "count", "min", "max", "sum",
					    "sumsq", "dropped", "buckets"};
	unsigned bit = 0;
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(key, names[i]))
			bit = 1u << i;
	if (!bit)
		return skip_value(j, 1);
	if (f->seen & bit)
		return AP_ECORRUPT; /* duplicate key */
	f->seen |= bit;
	char name[sizeof FORMAT_NAME + 1];
	int rc;
	switch (bit) {
	case F_FORMAT:
		rc = string(j, name, sizeof name);
		return rc ? rc : strcmp(name, FORMAT_NAME) ? AP_ECORRUPT : 0;
	case F_VERSION: return u64(j, &f->version);
	case F_SIGBITS: return u64(j, &f->sigbits);
	case F_COUNT: return u64(j, &f->count);
	case F_MIN: return nullable_u64(j, &f->min, &f->min_null);
	case F_MAX: return nullable_u64(j, &f->max, &f->max_null);
	case F_SUM: return uint(j, 128, &f->sum);
	case F_SUMSQ:
		f->sq_null = eat_word(j, "null");
		return f->sq_null ? 0 : uint(j, 128, &f->sumsq);
	case F_DROPPED: return u64(j, &f->dropped);
	default: return buckets(j, &f->triples);
	}
}

static int parse_object(struct jr *j, struct fields *f)
{
	char key[16];
	int rc;
	if (!eat(j, '{'))
		return AP_ECORRUPT;
	if (!eat(j, '}')) {
		do {
			if ((rc = string(j, key, sizeof key)) || !eat(j, ':'))
				return rc ? rc : AP_ECORRUPT;
			if ((rc = field(j, key, f)))
				return rc;
		} while (eat(j, ','));
		if (!eat(j, '}'))
			return AP_ECORRUPT;
	}
	ws(j);
	return j->p == j->end ? 0 : AP_ECORRUPT;
}

/* Turn the parsed fields into a snapshot, checking each bucket is real. */
static int build(const struct fields *f, ap_hist_snap *s)
{
	const unsigned char *t = f->triples.p;
	size_t nt = f->triples.len / (3 * sizeof(uint64_t));
	int64_t prev = -1;
	for (size_t i = 0; i < nt; i++) {
		uint64_t b[3], lo, hi;
		memcpy(b, t + i * sizeof b, sizeof b);
		uint32_t key = hist_key(s->sigbits, b[0]);
		hist_bounds(s->sigbits, key, &lo, &hi);
		if (lo != b[0] || hi != b[1] || !b[2] || (int64_t)key <= prev)
			return AP_ECORRUPT;
		prev = key;
		int rc = apx_hist_snap_push(s, key, b[2]);
		if (rc)
			return rc == AP_ERANGE ? AP_ECORRUPT : rc;
	}
	if (f->count != s->count || f->min_null != !nt || f->max_null != !nt)
		return AP_ECORRUPT;
	s->min = nt ? f->min : 0;
	s->max = nt ? f->max : 0;
	s->sum = f->sum;
	s->sq_sat = f->sq_null;
	s->sumsq = f->sq_null ? 0 : f->sumsq;
	s->dropped = f->dropped;
	return apx_hist_snap_validate(s);
}

int ap_hist_decode_json(const void *buf, size_t len, const ap_allocator *alloc,
			ap_hist_snap **out)
{
	if (!out || (!buf && len))
		return AP_EINVAL;
	struct jr j = {buf, (const unsigned char *)buf + len};
	struct fields f;
	memset(&f, 0, sizeof f);
	apx_hist_buf_init(&f.triples, alloc);
	int rc = parse_object(&j, &f);
	if (!rc && (f.seen & F_VERSION) && f.version != VERSION)
		rc = f.version > VERSION ? AP_EVERSION : AP_ECORRUPT;
	if (!rc && ((f.seen & F_REQUIRED) != F_REQUIRED ||
		    !hist_sigbits_ok((unsigned)(f.sigbits > 99 ? 0 : f.sigbits))))
		rc = AP_ECORRUPT;
	ap_hist_snap *s = NULL;
	if (!rc)
		rc = apx_hist_snap_new(alloc, (unsigned)f.sigbits, 0, &s);
	if (!rc)
		rc = build(&f, s);
	if (f.triples.p)
		f.triples.a->free(f.triples.a->ctx, f.triples.p, f.triples.cap);
	if (rc) {
		ap_hist_snap_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}
