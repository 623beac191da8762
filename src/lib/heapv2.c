/*
 * heapv2.c: jemalloc's heap_v2 text format (and gperftools' "heap profile:"
 * flavour) to and from an allocprof heap profile; see allocprof/heapv2.h.
 *
 * Format facts (docs/FORMATS.md, jeprof's reader): the first line is
 * "heap_v2/R"; "t*: n1: s1 [n2: s2]" lines carry in-use then cumulative
 * (objects, bytes); "@ a1 a2 ..." lists raw return addresses leaf first, and
 * readers subtract 1 from all but the first; the text after
 * "MAPPED_LIBRARIES:" is /proc/PID/maps. jeprof scales each counts pair by
 * 1 / (1 - exp(-(s/n)/R)) ([R1]): the encoder writes values transformed
 * with ap_jeprof_transform() so that scaling lands on the unbiased values,
 * and the decoder applies jeprof's scaling itself.
 */
#include "allocprof/heapv2.h"

#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "hash.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT_BYTES ((size_t)1 << 30)

/* ---- text output ----------------------------------------------------- */

struct tout {
	const ap_allocator *a;
	char *data;
	size_t len, cap;
	int err;
};

static void tput(struct tout *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tput(struct tout *t, const char *fmt, ...)
{
	for (int attempt = 0; attempt < 2 && !t->err; attempt++) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = t->cap - t->len;
		int n = vsnprintf(t->data ? t->data + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = AP_EINVAL;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t ncap = t->cap ? t->cap : 4096;
		while (ncap - t->len <= (size_t)n) {
			if (ncap > SIZE_MAX / 2) {
				t->err = AP_ERANGE;
				return;
			}
			ncap *= 2;
		}
		char *nd = t->data
			? t->a->realloc(t->a->ctx, t->data, t->cap, ncap)
			: t->a->alloc(t->a->ctx, ncap);
		if (!nd) {
			t->err = AP_ENOMEM;
			return;
		}
		t->data = nd;
		t->cap = ncap;
	}
}

/* " 0x" + lowercase hex of v: the hot loop of a dump, so no printf. */
static void tput_addr(struct tout *t, uint64_t v)
{
	char tmp[20];
	size_t n = sizeof tmp;
	do {
		tmp[--n] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	tmp[--n] = 'x';
	tmp[--n] = '0';
	tmp[--n] = ' ';
	if (t->err)
		return;
	if (t->cap - t->len <= sizeof tmp - n) {
		tput(t, "%.*s", (int)(sizeof tmp - n), tmp + n);
		return;
	}
	memcpy(t->data + t->len, tmp + n, sizeof tmp - n);
	t->len += sizeof tmp - n;
	t->data[t->len] = '\0';
}

/* ---- encode ---------------------------------------------------------- */

/* Indices of the four columns heap_v2 carries (-1 = absent). */
struct cols {
	int io, is, ao, as;
};

static int64_t col(const ap_sample *s, int i)
{
	return i < 0 ? 0 : s->values[i];
}

/* The sample's numeric "bytes" label (its allocation size), or 0. */
static double size_label(const ap_profile *p, const ap_sample *s)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (s->labels[i].num > 0 && !s->labels[i].str &&
		    !strcmp(ap_profile_string(p, s->labels[i].key), "bytes"))
			return (double)s->labels[i].num;
	return 0;
}

/*
 * jeprof scales a line by its average size bytes/objects. The object column
 * is an HT estimate rounded to an integer, so for a large object sampled with
 * probability below 1 (1.16 objects stored as 1) that ratio is off by up to
 * the rounding; when the sample says its size and holds few objects, derive
 * the fractional object count from the (much larger, so relatively exact)
 * byte column instead. The label is the average size of the allocations of
 * the sample's site, which may mix sizes a little (allocprof's runtime keys
 * sites by size class, within 1/16), and in the in-use pair the average of
 * what is still live may differ from it by as much; from LABEL_MAX_OBJECTS
 * objects on the column's own rounding (under 1/32) is the smaller error and
 * the column is used as it is. At rate 1 every weight is 1 and the column is
 * an exact count: it is always used.
 */
#define LABEL_MAX_OBJECTS 16
static int transform_pair(int64_t objects, int64_t bytes, double size,
			  double rate, uint64_t *c_out, uint64_t *s_out)
{
	double c = (double)objects;
	if (size > 0 && bytes > 0 && objects < LABEL_MAX_OBJECTS && rate > 1)
		c = (double)bytes / size;
	return ap_jeprof_transform(c, (double)bytes, rate, c_out, s_out);
}

/* The four numbers to write for s: in-use pair, then cumulative pair. */
static int line_values(const ap_profile *p, const ap_sample *s,
		       const struct cols *c, uint64_t out[4])
{
	int64_t v[4] = { col(s, c->io), col(s, c->is), col(s, c->ao),
			 col(s, c->as) };
	for (int i = 0; i < 4; i++)
		if (v[i] < 0)
			return AP_EINVAL;
	double size = size_label(p, s);
	int rc = transform_pair(v[0], v[1], size, (double)p->period, &out[0],
				&out[1]);
	if (!rc)
		rc = transform_pair(v[2], v[3], size, (double)p->period,
				    &out[2], &out[3]);
	return rc;
}

static void put_maps(struct tout *t, const ap_profile *p, const char *maps)
{
	if (maps) {
		size_t n = strlen(maps);
		tput(t, "%s%s", maps, n && maps[n - 1] != '\n' ? "\n" : "");
		return;
	}
	/* /proc/PID/maps layout, which jeprof's library parser expects. */
	for (size_t i = 0; i < p->nmappings; i++) {
		const ap_mapping *m = &p->mappings[i];
		const char *name = ap_profile_string(p, m->filename);
		if (!*name)
			continue;
		tput(t, "%llx-%llx r-xp %08llx 00:00 0 %s\n",
		     (unsigned long long)m->memory_start,
		     (unsigned long long)m->memory_limit,
		     (unsigned long long)m->file_offset, name);
	}
}

int ap_heapv2_encode(const ap_profile *p, const char *maps_text,
		     const ap_allocator *alloc, char **out, size_t *len)
{
	if (!out || !len)
		return AP_EINVAL;
	*out = NULL;
	*len = 0;
	if (!p || p->period <= 0 || ap_profile_validate(p, NULL, 0))
		return AP_EINVAL;
	struct cols c = { ap_profile_find_sample_type(p, AP_ST_INUSE_OBJECTS),
			  ap_profile_find_sample_type(p, AP_ST_INUSE_SPACE),
			  ap_profile_find_sample_type(p, AP_ST_ALLOC_OBJECTS),
			  ap_profile_find_sample_type(p, AP_ST_ALLOC_SPACE) };
	if (c.is < 0 && c.as < 0)
		return AP_EINVAL;
	uint64_t total[4] = { 0, 0, 0, 0 }, v[4];
	for (size_t i = 0; i < p->nsamples; i++) {
		int rc = line_values(p, &p->samples[i], &c, v);
		if (rc)
			return rc;
		for (int k = 0; k < 4; k++) {
			if (total[k] > UINT64_MAX - v[k])
				return AP_ERANGE;
			total[k] += v[k];
		}
	}
	struct tout t = { alloc ? alloc : ap_profile_allocator(p), NULL, 0, 0, 0 };
	tput(&t, "heap_v2/%lld\n  t*: %llu: %llu [%llu: %llu]\n",
	     (long long)p->period, (unsigned long long)total[0],
	     (unsigned long long)total[1], (unsigned long long)total[2],
	     (unsigned long long)total[3]);
	for (size_t i = 0; i < p->nsamples && !t.err; i++) {
		const ap_sample *s = &p->samples[i];
		line_values(p, s, &c, v);
		if (!(v[0] | v[1] | v[2] | v[3]))
			continue;
		/* jeprof needs at least one address after "@"; an empty
		 * stack is shown as the null address rather than dropped. */
		tput(&t, "@");
		if (!s->nlocations)
			tput_addr(&t, 0);
		for (size_t j = 0; j < s->nlocations; j++) {
			uint64_t a = ap_profile_location(p, s->location_ids[j])->address;
			/* Callers are stored as return address - 1. */
			tput_addr(&t, a + (j > 0));
		}
		tput(&t, "\n  t*: %llu: %llu [%llu: %llu]\n",
		     (unsigned long long)v[0], (unsigned long long)v[1],
		     (unsigned long long)v[2], (unsigned long long)v[3]);
	}
	tput(&t, "\nMAPPED_LIBRARIES:\n");
	put_maps(&t, p, maps_text);
	int rc = t.err;
	if (!rc && t.cap != t.len + 1) {
		char *n = t.a->realloc(t.a->ctx, t.data, t.cap, t.len + 1);
		if (n) {
			t.data = n;
			t.cap = t.len + 1;
		} else {
			rc = AP_ENOMEM;
		}
	}
	if (rc) {
		if (t.data)
			t.a->free(t.a->ctx, t.data, t.cap);
		return rc;
	}
	*out = t.data;
	*len = t.len;
	return 0;
}

/* ---- decode: lexing -------------------------------------------------- */

struct line {
	const char *s;
	size_t n, i; /* text, length, cursor */
	size_t no;   /* 1-based line number */
};

struct hdec {
	ap_profile *p;
	const ap_allocator *a;
	char *err;
	size_t errlen;
	double rate; /* jeprof's sample_adjustment; 0 = no scaling */
	const char *buf;
	size_t len, pos, lineno;
	size_t body_end; /* where the maps section starts */
	struct addr_slot {
		uint64_t addr, id;
	} *slots;
	size_t cap, nslots;
	struct range {
		uint64_t start, limit, id;
	} *ranges;
	size_t nranges, capranges;
	uint64_t *stack;
	size_t nstack, capstack;
};

static int fail(struct hdec *d, const struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct hdec *d, const struct line *l, const char *fmt, ...)
{
	if (d->err && d->errlen) {
		int n = snprintf(d->err, d->errlen, "line %zu: ", l ? l->no : 0);
		if (n >= 0 && (size_t)n < d->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return AP_ECORRUPT;
}

/* Next line of [pos, end) without its "\n" or "\r\n". */
static bool next_line(struct hdec *d, size_t end, struct line *l)
{
	if (d->pos >= end)
		return false;
	const char *s = d->buf + d->pos;
	const char *nl = memchr(s, '\n', end - d->pos);
	size_t n = nl ? (size_t)(nl - s) : end - d->pos;
	d->pos += n + (nl != NULL);
	if (n && s[n - 1] == '\r')
		n--;
	l->s = s;
	l->n = n;
	l->i = 0;
	l->no = ++d->lineno;
	return true;
}

static void skip_ws(struct line *l)
{
	while (l->i < l->n && (l->s[l->i] == ' ' || l->s[l->i] == '\t'))
		l->i++;
}

static bool at_end(struct line *l)
{
	skip_ws(l);
	return l->i == l->n;
}

static bool eat(struct line *l, const char *lit)
{
	size_t n = strlen(lit);
	if (l->n - l->i < n || memcmp(l->s + l->i, lit, n))
		return false;
	l->i += n;
	return true;
}

static bool get_dec(struct line *l, uint64_t *v)
{
	size_t start = l->i;
	uint64_t x = 0;
	while (l->i < l->n && l->s[l->i] >= '0' && l->s[l->i] <= '9') {
		unsigned dgt = (unsigned)(l->s[l->i++] - '0');
		if (x > (UINT64_MAX - dgt) / 10)
			return false;
		x = x * 10 + dgt;
	}
	*v = x;
	return l->i > start;
}

static bool get_hex(struct line *l, uint64_t *v)
{
	if (!eat(l, "0x"))
		eat(l, "0X");
	size_t start = l->i;
	uint64_t x = 0;
	for (; l->i < l->n; l->i++) {
		char c = l->s[l->i];
		unsigned h;
		if (c >= '0' && c <= '9')
			h = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			h = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			h = (unsigned)(c - 'A' + 10);
		else
			break;
		if (l->i - start == 16)
			return false;
		x = x << 4 | h;
	}
	*v = x;
	return l->i > start;
}

/* "n1: s1 [n2: s2]" with jeprof's optional whitespace. */
static bool get_counts(struct line *l, uint64_t c[4])
{
	skip_ws(l);
	if (!get_dec(l, &c[0]) || !eat(l, ":"))
		return false;
	skip_ws(l);
	if (!get_dec(l, &c[1]))
		return false;
	skip_ws(l);
	if (!eat(l, "["))
		return false;
	skip_ws(l);
	if (!get_dec(l, &c[2]) || !eat(l, ":"))
		return false;
	skip_ws(l);
	return get_dec(l, &c[3]) && (skip_ws(l), eat(l, "]"));
}

/* ---- decode: building ------------------------------------------------ */

static void *grow(struct hdec *d, void *arr, size_t *cap, size_t need,
		  size_t elem)
{
	if (need <= *cap)
		return arr;
	size_t ncap = *cap ? *cap * 2 : 64;
	if (ncap < need)
		ncap = need;
	if (ncap > SIZE_MAX / elem)
		return NULL;
	void *n = arr ? d->a->realloc(d->a->ctx, arr, *cap * elem, ncap * elem)
		      : d->a->alloc(d->a->ctx, ncap * elem);
	if (n)
		*cap = ncap;
	return n;
}

static int cmp_range(const void *x, const void *y)
{
	const struct range *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* The mapping containing addr (ranges sorted by start), or 0. */
static uint64_t mapping_for(const struct hdec *d, uint64_t addr)
{
	size_t lo = 0, hi = d->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < d->ranges[lo - 1].limit)
		return d->ranges[lo - 1].id;
	return 0;
}

/* One /proc/PID/maps line; silently ignored unless executable with a path. */
static int add_maps_line(struct hdec *d, struct line *l)
{
	uint64_t start = 0, limit = 0, off = 0, inode = 0;
	if (!get_hex(l, &start) || !eat(l, "-") || !get_hex(l, &limit))
		return 0;
	skip_ws(l);
	if (l->n - l->i < 4 || l->s[l->i + 2] != 'x')
		return 0;
	l->i += 4;
	skip_ws(l);
	if (!get_hex(l, &off))
		return 0;
	skip_ws(l);
	while (l->i < l->n && l->s[l->i] != ' ' && l->s[l->i] != '\t')
		l->i++; /* device */
	skip_ws(l);
	if (!get_dec(l, &inode) || at_end(l) || limit <= start)
		return 0;
	ap_mapping m = { .memory_start = start, .memory_limit = limit,
			 .file_offset = off };
	m.filename = ap_profile_intern_n(d->p, l->s + l->i, l->n - l->i);
	if (m.filename < 0)
		return m.filename == AP_EINVAL ? 0 : (int)m.filename;
	struct range *r = grow(d, d->ranges, &d->capranges, d->nranges + 1,
			       sizeof *r);
	if (!r)
		return AP_ENOMEM;
	d->ranges = r;
	int rc = ap_profile_add_mapping(d->p, &m, &r[d->nranges].id);
	if (rc)
		return rc;
	r[d->nranges].start = start;
	r[d->nranges++].limit = limit;
	return 0;
}

static int parse_maps(struct hdec *d)
{
	struct line l;
	while (next_line(d, d->len, &l)) {
		int rc = add_maps_line(d, &l);
		if (rc)
			return rc;
	}
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof *d->ranges, cmp_range);
	return 0;
}

/* Location id for an adjusted address, created on first use. */
static int location_for(struct hdec *d, uint64_t addr, uint64_t *id)
{
	if ((d->nslots + 1) * 2 > d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 256;
		struct addr_slot *ns = d->a->alloc(d->a->ctx, ncap * sizeof *ns);
		if (!ns)
			return AP_ENOMEM;
		memset(ns, 0, ncap * sizeof *ns);
		for (size_t i = 0; i < d->cap; i++) {
			if (!d->slots[i].id)
				continue;
			size_t j = (size_t)hash_mix64(d->slots[i].addr) & (ncap - 1);
			while (ns[j].id)
				j = (j + 1) & (ncap - 1);
			ns[j] = d->slots[i];
		}
		if (d->slots)
			d->a->free(d->a->ctx, d->slots, d->cap * sizeof *ns);
		d->slots = ns;
		d->cap = ncap;
	}
	size_t j = (size_t)hash_mix64(addr) & (d->cap - 1);
	for (; d->slots[j].id; j = (j + 1) & (d->cap - 1)) {
		if (d->slots[j].addr == addr) {
			*id = d->slots[j].id;
			return 0;
		}
	}
	ap_location loc = { .address = addr, .mapping_id = mapping_for(d, addr) };
	int rc = ap_profile_add_location(d->p, &loc, id);
	if (rc)
		return rc;
	d->slots[j].addr = addr;
	d->slots[j].id = *id;
	d->nslots++;
	return 0;
}

/* jeprof's AdjustSamples for v2 sampling on one (count, bytes) pair. */
static int unbias(struct hdec *d, const struct line *l, uint64_t n,
		  uint64_t s, int64_t *n_out, int64_t *s_out)
{
	double fn = (double)n, fs = (double)s;
	if (d->rate > 0 && n) {
		if (!s)
			return fail(d, l, "%llu objects of 0 bytes cannot be "
				    "unbiased", (unsigned long long)n);
		double scale = 1.0 / -expm1(-(fs / fn) / d->rate);
		fn *= scale;
		fs *= scale;
	}
	if (!(fn < 0x1p63) || !(fs < 0x1p63))
		return fail(d, l, "unbiased value out of range");
	*n_out = llround(fn);
	*s_out = llround(fs);
	return 0;
}

static int add_sample(struct hdec *d, const struct line *l, const uint64_t c[4])
{
	int64_t v[4] = { 0, 0, 0, 0 }, in_o = 0, in_s = 0;
	int rc = unbias(d, l, c[2], c[3], &v[0], &v[1]);
	if (!rc)
		rc = unbias(d, l, c[0], c[1], &in_o, &in_s);
	if (rc)
		return rc;
	v[2] = in_o;
	v[3] = in_s;
	uint64_t *ids = d->stack; /* addresses become ids in place */
	for (size_t j = 0; j < d->nstack; j++) {
		uint64_t addr = d->stack[j] - (j > 0);
		if ((rc = location_for(d, addr, &ids[j])))
			return rc;
	}
	ap_label lab = { 0, 0, 0, 0 };
	lab.key = ap_profile_intern(d->p, "bytes");
	lab.num_unit = lab.key < 0 ? lab.key : ap_profile_intern(d->p, "bytes");
	if (lab.num_unit < 0)
		return (int)lab.num_unit;
	if (c[2] || c[0])
		lab.num = c[2] ? llround((double)c[3] / (double)c[2])
			       : llround((double)c[1] / (double)c[0]);
	return ap_profile_add_sample(d->p, ids, d->nstack, v, &lab, 1);
}

static int parse_stack(struct hdec *d, struct line *l)
{
	d->nstack = 0;
	while (!at_end(l)) {
		uint64_t a;
		size_t at = l->i;
		if (!get_hex(l, &a) ||
		    (l->i < l->n && l->s[l->i] != ' ' && l->s[l->i] != '\t'))
			return fail(d, l, "bad address at column %zu", at + 1);
		uint64_t *s = grow(d, d->stack, &d->capstack, d->nstack + 1,
				   sizeof *s);
		if (!s)
			return AP_ENOMEM;
		d->stack = s;
		s[d->nstack++] = a;
	}
	return 0;
}

/* jemalloc flavour: "@ stack" lines each followed by "t*:" (and "tN:"). */
static int parse_jemalloc(struct hdec *d)
{
	struct line l, stack_line = { 0 };
	bool have_stack = false, counted = false;
	while (next_line(d, d->body_end, &l)) {
		int rc = 0;
		skip_ws(&l);
		if (at_end(&l))
			continue;
		if (eat(&l, "@")) {
			if (have_stack && !counted)
				return fail(d, &stack_line, "stack without a "
					    "t*: counts line");
			stack_line = l;
			have_stack = true;
			counted = false;
			rc = parse_stack(d, &l);
		} else if (eat(&l, "t")) {
			uint64_t tid = 0, c[4] = { 0, 0, 0, 0 };
			bool all = eat(&l, "*");
			if ((!all && !get_dec(&l, &tid)) || !eat(&l, ":") ||
			    !get_counts(&l, c) || !at_end(&l))
				return fail(d, &l, "malformed counts line");
			if (all && have_stack) {
				if (counted)
					return fail(d, &l, "second t*: line for "
						    "one stack");
				counted = true;
				rc = add_sample(d, &l, c);
			}
		} else {
			return fail(d, &l, "expected \"@ addresses\" or a "
				    "\"t*:\" counts line");
		}
		if (rc)
			return rc;
	}
	if (have_stack && !counted)
		return fail(d, &stack_line, "stack without a t*: counts line");
	return 0;
}

/* gperftools flavour: "n1: s1 [n2: s2] @ stack" per line. */
static int parse_gperftools(struct hdec *d)
{
	struct line l;
	while (next_line(d, d->body_end, &l)) {
		uint64_t c[4];
		if (at_end(&l))
			continue;
		if (!get_counts(&l, c) || (skip_ws(&l), !eat(&l, "@")))
			return fail(d, &l, "expected \"n: s [n: s] @ addresses\"");
		int rc = parse_stack(d, &l);
		if (!rc)
			rc = add_sample(d, &l, c);
		if (rc)
			return rc;
	}
	return 0;
}

/* First line; sets the rate and says which flavour follows. */
static int parse_header(struct hdec *d, bool *gperf)
{
	struct line l;
	uint64_t r = 0, c[4] = { 0, 0, 0, 0 };
	if (!next_line(d, d->len, &l))
		return fail(d, NULL, "empty input");
	*gperf = false;
	if (eat(&l, "heap_v2/")) {
		if (!get_dec(&l, &r) || !at_end(&l) || !r)
			return fail(d, &l, "heap_v2 header needs a sampling "
				    "rate > 0");
		d->rate = (double)r;
		return 0;
	}
	if (!eat(&l, "heap profile:") || !get_counts(&l, c))
		return fail(d, &l, "not a heap profile (expected \"heap_v2/R\" "
			    "or \"heap profile:\")");
	*gperf = true;
	skip_ws(&l);
	if (at_end(&l))
		return 0; /* no type: counts taken as they are */
	if (!eat(&l, "@"))
		return fail(d, &l, "expected \"@ type\" in the header");
	skip_ws(&l);
	if (eat(&l, "heapprofile") && at_end(&l))
		return 0; /* heap-profiler output: not sampled */
	if (eat(&l, "heap_v2/") && get_dec(&l, &r) && at_end(&l) && r) {
		d->rate = (double)r;
		return 0;
	}
	if (d->err && d->errlen)
		snprintf(d->err, d->errlen, "line 1: only heap_v2 sampling "
			 "(or unsampled heapprofile) is supported");
	return AP_EUNSUPPORTED;
}

/* Locate the maps section so its mappings exist before any location. */
static void find_maps(struct hdec *d)
{
	static const char *const marks[] = { "MAPPED_LIBRARIES:",
					     "--- Memory map:" };
	d->body_end = d->len;
	for (size_t pos = 0; pos < d->len;) {
		const char *s = d->buf + pos;
		for (size_t k = 0; k < 2; k++) {
			size_t n = strlen(marks[k]);
			if (d->len - pos >= n && !memcmp(s, marks[k], n)) {
				d->body_end = pos;
				return;
			}
		}
		const char *nl = memchr(s, '\n', d->len - pos);
		pos = nl ? (size_t)(nl - d->buf) + 1 : d->len;
	}
}

static int decode_text(struct hdec *d)
{
	int rc = ap_profile_create(d->a, &d->p);
	if (rc)
		return rc;
	static const char *const types[][2] = {
		{ AP_ST_ALLOC_OBJECTS, "count" }, { AP_ST_ALLOC_SPACE, "bytes" },
		{ AP_ST_INUSE_OBJECTS, "count" }, { AP_ST_INUSE_SPACE, "bytes" },
	};
	for (int i = 0; i < 4 && rc >= 0; i++)
		rc = ap_profile_add_sample_type(d->p, types[i][0], types[i][1]);
	if (rc < 0)
		return rc;
	bool gperf = false;
	if ((rc = parse_header(d, &gperf)))
		return rc;
	size_t body = d->pos, body_line = d->lineno;
	find_maps(d);
	if (d->body_end < d->len) {
		/* Skip the marker line itself, then read the maps. */
		d->pos = d->body_end;
		struct line l;
		next_line(d, d->len, &l);
		if ((rc = parse_maps(d)))
			return rc;
	}
	d->pos = body;
	d->lineno = body_line;
	rc = gperf ? parse_gperftools(d) : parse_jemalloc(d);
	if (rc)
		return rc;
	int64_t t = ap_profile_intern(d->p, "space");
	int64_t u = t < 0 ? t : ap_profile_intern(d->p, "bytes");
	if (u < 0)
		return (int)u;
	d->p->period_type.type = t;
	d->p->period_type.unit = u;
	d->p->period = d->rate > 0 ? (int64_t)d->rate : 1;
	return ap_profile_validate(d->p, d->err, d->errlen);
}

int ap_heapv2_decode(const unsigned char *buf, size_t len,
		     const ap_allocator *alloc, ap_profile **out, char *err,
		     size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out || (!buf && len))
		return AP_EINVAL;
	*out = NULL;
	struct hdec d;
	memset(&d, 0, sizeof d);
	d.a = alloc ? alloc : ap_allocator_libc();
	d.err = err;
	d.errlen = errlen;
	unsigned char *plain;
	size_t plain_len;
	int rc = ap_gzip_input(buf, len, MAX_TEXT_BYTES, d.a, &buf, &len,
			       &plain, &plain_len, err, errlen);
	d.buf = (const char *)buf;
	d.len = len;
	if (!rc)
		rc = decode_text(&d);
	if (rc == AP_EINVAL || rc == AP_ERANGE) {
		/* A builder refused: the text named something inconsistent. */
		if (err && errlen && !err[0])
			snprintf(err, errlen, "%s", ap_profile_error(d.p));
		rc = rc == AP_EINVAL ? AP_ECORRUPT : rc;
	} else if (rc == AP_ENOMEM && err && errlen) {
		snprintf(err, errlen, "out of memory");
	}
	if (d.slots)
		d.a->free(d.a->ctx, d.slots, d.cap * sizeof *d.slots);
	if (d.ranges)
		d.a->free(d.a->ctx, d.ranges, d.capranges * sizeof *d.ranges);
	if (d.stack)
		d.a->free(d.a->ctx, d.stack, d.capstack * sizeof *d.stack);
	if (plain)
		d.a->free(d.a->ctx, plain, plain_len + 1);
	if (rc) {
		ap_profile_destroy(d.p);
		return rc;
	}
	*out = d.p;
	return 0;
}
