/*
 * timeline.c: the "timeline", "peak" and "lifetimes" extension layouts
 * (allocprof/timeline.h, docs/FORMATS.md "Time extensions").
 *
 * Integers are LEB128 varints, reals 8-byte little-endian IEEE 754
 * doubles. Decoding runs twice over the bytes: a first pass validates and
 * counts, a second fills one block sized by the first, so a decoded value
 * is freed with one call and no count in the input can make the decoder
 * allocate more than the input could describe.
 */
#include "allocprof/timeline.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- writer ------------------------------------------------------------- */

typedef struct wbuf {
	const ap_allocator *a;
	unsigned char *p;
	size_t n, cap;
	int err;
} wbuf;

static void w_put(wbuf *w, const void *src, size_t k)
{
	if (w->err)
		return;
	if (w->n + k > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->n + k)
			cap *= 2;
		unsigned char *np = w->p ? w->a->realloc(w->a->ctx, w->p, w->cap, cap)
					 : w->a->alloc(w->a->ctx, cap);
		if (!np) {
			w->err = AP_ENOMEM;
			return;
		}
		w->p = np;
		w->cap = cap;
	}
	memcpy(w->p + w->n, src, k);
	w->n += k;
}

static void w_var(wbuf *w, uint64_t v)
{
	unsigned char b[10];
	size_t k = 0;
	do {
		b[k] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			b[k] |= 0x80;
		k++;
	} while (v);
	w_put(w, b, k);
}

static void w_dbl(wbuf *w, double d)
{
	uint64_t u;
	unsigned char b[8];
	memcpy(&u, &d, sizeof u);
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(u >> (8 * i));
	w_put(w, b, 8);
}

static void w_sums(wbuf *w, const ap_heap_sums *s)
{
	w_var(w, s->samples);
	w_var(w, s->exact);
	const double v[8] = { s->objects,     s->space,  s->u,
			      s->space_var,   s->objects_var, s->usable,
			      s->space_var2,  s->objects_var2 };
	for (int i = 0; i < 8; i++)
		w_dbl(w, v[i]);
}

static void w_stacks(wbuf *w, const ap_tl_stack *st, size_t n)
{
	w_var(w, n);
	for (size_t i = 0; i < n; i++) {
		w_var(w, st[i].depth);
		for (size_t j = 0; j < st[i].depth; j++)
			w_var(w, st[i].addrs[j]);
	}
}

static int w_finish(wbuf *w, unsigned char **out, size_t *len, size_t *cap)
{
	if (w->err) {
		if (w->p)
			w->a->free(w->a->ctx, w->p, w->cap);
		return w->err;
	}
	*out = w->p;
	*len = w->n;
	*cap = w->cap;
	return 0;
}

int ap_timeline_encode(const ap_timeline *tl, const ap_allocator *alloc,
		       unsigned char **out, size_t *len, size_t *cap)
{
	if (!tl || !out || !len || !cap || (tl->nstacks && !tl->stacks) ||
	    (tl->npoints && !tl->points))
		return AP_EINVAL;
	wbuf w = { alloc ? alloc : ap_allocator_libc(), NULL, 0, 0, 0 };
	w_var(&w, AP_TIMELINE_VERSION);
	w_var(&w, tl->period);
	w_var(&w, tl->cadence_ns);
	w_var(&w, tl->candidates);
	w_dbl(&w, tl->max_space);
	w_stacks(&w, tl->stacks, tl->nstacks);
	w_var(&w, tl->npoints);
	for (size_t i = 0; i < tl->npoints; i++) {
		const ap_tl_point *pt = &tl->points[i];
		w_var(&w, pt->t_ns);
		w_sums(&w, &pt->total);
		w_sums(&w, &pt->other);
		w_var(&w, pt->nsites);
		for (size_t j = 0; j < pt->nsites; j++) {
			if (pt->sites[j].stack >= tl->nstacks)
				w.err = w.err ? w.err : AP_EINVAL;
			w_var(&w, pt->sites[j].stack);
			w_var(&w, pt->sites[j].rate);
			w_sums(&w, &pt->sites[j].inuse);
		}
	}
	return w_finish(&w, out, len, cap);
}

static void w_bins(wbuf *w, const ap_lt_bin *b, size_t n)
{
	w_var(w, n);
	for (size_t i = 0; i < n; i++) {
		w_var(w, b[i].t_lo);
		w_var(w, b[i].t_hi - b[i].t_lo);
		w_var(w, b[i].n);
		w_dbl(w, b[i].w);
		w_dbl(w, b[i].w2);
		w_dbl(w, b[i].bytes);
		w_dbl(w, b[i].bytes_var);
	}
}

int ap_lifetimes_encode(const ap_lifetimes *lt, const ap_allocator *alloc,
			unsigned char **out, size_t *len, size_t *cap)
{
	if (!lt || !out || !len || !cap || (lt->nstacks && !lt->stacks) ||
	    (lt->nsites && !lt->sites))
		return AP_EINVAL;
	wbuf w = { alloc ? alloc : ap_allocator_libc(), NULL, 0, 0, 0 };
	w_var(&w, AP_TIMELINE_VERSION);
	w_var(&w, lt->t_ns);
	w_stacks(&w, lt->stacks, lt->nstacks);
	w_var(&w, lt->nsites);
	for (size_t i = 0; i < lt->nsites; i++) {
		const ap_lt_site *s = &lt->sites[i];
		if (s->stack >= lt->nstacks)
			w.err = w.err ? w.err : AP_EINVAL;
		w_var(&w, s->stack);
		w_var(&w, s->rate);
		w_bins(&w, s->freed, s->nfreed);
		w_bins(&w, s->live, s->nlive);
	}
	return w_finish(&w, out, len, cap);
}

/* ---- reader ------------------------------------------------------------- */

typedef struct rbuf {
	const unsigned char *p;
	size_t n, pos;
	char *err;
	size_t errlen;
	int rc;
} rbuf;

static int r_fail(rbuf *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int r_fail(rbuf *r, const char *fmt, ...)
{
	if (r->rc)
		return r->rc;
	r->rc = AP_ECORRUPT;
	if (r->err && r->errlen) {
		char msg[160];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		snprintf(r->err, r->errlen, "%s at byte %zu", msg, r->pos);
	}
	return r->rc;
}

static uint64_t r_var(rbuf *r, const char *what)
{
	uint64_t v = 0;
	for (unsigned shift = 0; !r->rc; shift += 7) {
		if (r->pos >= r->n || shift > 63) {
			r_fail(r, "%s: %s varint", what,
			       shift > 63 ? "overlong" : "truncated");
			break;
		}
		unsigned char b = r->p[r->pos++];
		if (shift == 63 && (b & 0x7e)) {
			r_fail(r, "%s: varint beyond 64 bits", what);
			break;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (b == 0 && shift > 0) /* canonical: shortest form only */
				r_fail(r, "%s: varint not in its shortest form", what);
			return r->rc ? 0 : v;
		}
	}
	return 0;
}

static double r_dbl(rbuf *r, const char *what)
{
	if (r->rc)
		return 0;
	if (r->n - r->pos < 8) {
		r_fail(r, "%s: truncated double", what);
		return 0;
	}
	uint64_t u = 0;
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
	r->pos += 8;
	double d;
	memcpy(&d, &u, sizeof d);
	if (!isfinite(d)) {
		r_fail(r, "%s: not a finite number", what);
		return 0;
	}
	return d;
}

/* A count of items each at least min_bytes long: never more than the
 * bytes left could hold. */
static size_t r_count(rbuf *r, size_t min_bytes, const char *what)
{
	uint64_t v = r_var(r, what);
	if (!r->rc && v > (r->n - r->pos) / min_bytes)
		r_fail(r, "%s: %llu is more than the data holds", what,
		       (unsigned long long)v);
	return r->rc ? 0 : (size_t)v;
}

static void r_sums(rbuf *r, ap_heap_sums *s)
{
	s->samples = r_var(r, "samples");
	s->exact = r_var(r, "exact samples");
	double *v[8] = { &s->objects,    &s->space,  &s->u,
			 &s->space_var,  &s->objects_var, &s->usable,
			 &s->space_var2, &s->objects_var2 };
	for (int i = 0; i < 8; i++)
		*v[i] = r_dbl(r, "sums");
}

/* Sizes gathered by the first pass; fill pointers for the second. */
typedef struct layout {
	size_t nstacks, naddrs, nitems, nsub; /* items: points or sites;
						 sub: sites or bins */
	ap_tl_stack *stacks;
	uint64_t *addrs;
	void *items, *sub;
} layout;

static void r_stacks(rbuf *r, layout *l, bool fill)
{
	size_t n = r_count(r, 1, "stack count");
	size_t at = 0;
	for (size_t i = 0; i < n && !r->rc; i++) {
		size_t d = r_count(r, 1, "stack depth");
		if (!r->rc && d > AP_TIMELINE_DEPTH_MAX)
			r_fail(r, "stack depth %zu above %d", d, AP_TIMELINE_DEPTH_MAX);
		if (fill) {
			l->stacks[i].addrs = l->addrs + at;
			l->stacks[i].depth = d;
		}
		for (size_t j = 0; j < d && !r->rc; j++) {
			uint64_t a = r_var(r, "address");
			if (fill)
				l->addrs[at + j] = a;
		}
		at += d;
	}
	l->nstacks = n;
	l->naddrs = at;
}

static uint32_t r_stack_ref(rbuf *r, const layout *l)
{
	uint64_t k = r_var(r, "stack index");
	if (!r->rc && k >= l->nstacks)
		r_fail(r, "stack index %llu of %zu stacks", (unsigned long long)k,
		       l->nstacks);
	return (uint32_t)k;
}

static void r_version(rbuf *r, uint32_t *version)
{
	uint64_t v = r_var(r, "version");
	if (!r->rc && v != AP_TIMELINE_VERSION) {
		r->rc = AP_EVERSION;
		if (r->err && r->errlen)
			snprintf(r->err, r->errlen, "layout version %llu, this build "
				 "reads %d", (unsigned long long)v, AP_TIMELINE_VERSION);
	}
	*version = (uint32_t)v;
}

/* One pass over a timeline; fill: write into l's arrays and *tl. */
static int tl_pass(rbuf *r, layout *l, bool fill, void *head)
{
	ap_timeline *tl = head;
	ap_timeline h;
	memset(&h, 0, sizeof h);
	r_version(r, &h.version);
	h.period = r_var(r, "period");
	h.cadence_ns = r_var(r, "cadence");
	h.candidates = r_var(r, "candidates");
	h.max_space = r_dbl(r, "maximum");
	r_stacks(r, l, fill);
	size_t np = r_count(r, 1 + 2 * 66 + 1, "point count");
	size_t at = 0;
	uint64_t prev_t = 0;
	ap_tl_point *pts = l->items;
	ap_tl_site *sites = l->sub;
	for (size_t i = 0; i < np && !r->rc; i++) {
		ap_tl_point pt;
		memset(&pt, 0, sizeof pt);
		pt.t_ns = r_var(r, "time");
		if (!r->rc && pt.t_ns < prev_t)
			r_fail(r, "point %zu goes back in time", i);
		prev_t = pt.t_ns;
		r_sums(r, &pt.total);
		r_sums(r, &pt.other);
		pt.nsites = r_count(r, 2 + 66, "site count");
		if (fill)
			pt.sites = sites + at;
		for (size_t j = 0; j < pt.nsites && !r->rc; j++) {
			ap_tl_site s;
			memset(&s, 0, sizeof s);
			s.stack = r_stack_ref(r, l);
			s.rate = r_var(r, "rate");
			r_sums(r, &s.inuse);
			if (fill)
				sites[at + j] = s;
		}
		at += pt.nsites;
		if (fill)
			pts[i] = pt;
	}
	if (!r->rc && r->pos != r->n)
		r_fail(r, "%zu bytes after the last point", r->n - r->pos);
	l->nitems = np;
	l->nsub = at;
	if (fill && !r->rc) {
		h.stacks = l->stacks;
		h.nstacks = l->nstacks;
		h.points = pts;
		h.npoints = np;
		*tl = h;
	}
	return r->rc;
}

/* Bytes of a block holding head, then each array (8-byte aligned). */
static size_t block_size(size_t head, const size_t *parts, size_t n)
{
	size_t total = (head + 7) & ~(size_t)7;
	for (size_t i = 0; i < n; i++)
		total += (parts[i] + 7) & ~(size_t)7;
	return total;
}

static void *carve(unsigned char **at, size_t bytes)
{
	void *p = *at;
	*at += (bytes + 7) & ~(size_t)7;
	return p;
}

/*
 * Both passes of a layout: pass validates and counts (fill false), then
 * fills one block holding the header (head bytes), the stacks, their
 * addresses, the items and the sub-items. *out is the block, the header at
 * its start; the header's owner fields (the allocator at alloc_off, the
 * block's bytes at size_off) are filled, so each public decoder is one
 * call.
 */
typedef int (*pass_fn)(rbuf *r, layout *l, bool fill, void *head);

static int decode_block(const void *data, size_t len, const ap_allocator *alloc,
			pass_fn pass, size_t head, size_t item, size_t sub, size_t alloc_off,
			size_t size_off, void **out, char *err, size_t errlen)
{
	if (!out || (!data && len))
		return AP_EINVAL;
	*out = NULL;
	const ap_allocator *a = alloc ? alloc : ap_allocator_libc();
	rbuf r = { data, len, 0, err, errlen, 0 };
	layout l;
	memset(&l, 0, sizeof l);
	int rc = pass(&r, &l, false, NULL);
	if (rc)
		return rc;
	size_t parts[4] = { l.nstacks * sizeof(ap_tl_stack), l.naddrs * sizeof(uint64_t),
			    l.nitems * item, l.nsub * sub };
	size_t size = block_size(head, parts, 4);
	unsigned char *block = a->alloc(a->ctx, size);
	if (!block)
		return AP_ENOMEM;
	memset(block, 0, size);
	unsigned char *at = block;
	void *h = carve(&at, head);
	l.stacks = carve(&at, parts[0]);
	l.addrs = carve(&at, parts[1]);
	l.items = carve(&at, parts[2]);
	l.sub = carve(&at, parts[3]);
	r.pos = 0;
	rc = pass(&r, &l, true, h);
	if (rc) {
		a->free(a->ctx, block, size);
		return rc;
	}
	memcpy(block + alloc_off, &a, sizeof a);
	memcpy(block + size_off, &size, sizeof size);
	*out = block;
	return 0;
}

int ap_timeline_decode(const void *data, size_t len, const ap_allocator *alloc,
		       ap_timeline **out, char *err, size_t errlen)
{
	void *p = NULL;
	int rc = decode_block(data, len, alloc, tl_pass, sizeof(ap_timeline),
			       sizeof(ap_tl_point), sizeof(ap_tl_site),
			       offsetof(ap_timeline, alloc_), offsetof(ap_timeline, size_),
			       out ? &p : NULL, err, errlen);
	if (out)
		*out = p;
	return rc;
}

void ap_timeline_free(ap_timeline *tl)
{
	if (tl)
		tl->alloc_->free(tl->alloc_->ctx, tl, tl->size_);
}

static size_t r_bins(rbuf *r, ap_lt_bin *dst)
{
	size_t n = r_count(r, 3 + 32, "bin count");
	uint64_t prev = 0;
	for (size_t i = 0; i < n && !r->rc; i++) {
		ap_lt_bin b;
		b.t_lo = r_var(r, "bin time");
		uint64_t width = r_var(r, "bin width");
		if (!r->rc && width > UINT64_MAX - b.t_lo)
			r_fail(r, "bin %zu ends beyond 2^64 ns", i);
		b.t_hi = b.t_lo + width;
		b.n = r_var(r, "bin count");
		b.w = r_dbl(r, "bin weight");
		b.w2 = r_dbl(r, "bin weight squares");
		b.bytes = r_dbl(r, "bin bytes");
		b.bytes_var = r_dbl(r, "bin variance");
		if (!r->rc && ((i > 0 && b.t_lo <= prev) || b.w < 0 || b.w2 < 0 ||
			       b.bytes < 0 || b.bytes_var < 0))
			r_fail(r, "bin %zu overlaps the one before or is negative", i);
		prev = b.t_hi;
		if (dst)
			dst[i] = b;
	}
	return n;
}

static int lt_pass(rbuf *r, layout *l, bool fill, void *head)
{
	ap_lifetimes *lt = head;
	ap_lifetimes h;
	memset(&h, 0, sizeof h);
	r_version(r, &h.version);
	h.t_ns = r_var(r, "time");
	r_stacks(r, l, fill);
	size_t ns = r_count(r, 4, "site count");
	ap_lt_site *sites = l->items;
	ap_lt_bin *bins = l->sub;
	size_t at = 0;
	for (size_t i = 0; i < ns && !r->rc; i++) {
		ap_lt_site s;
		memset(&s, 0, sizeof s);
		s.stack = r_stack_ref(r, l);
		s.rate = r_var(r, "rate");
		s.freed = fill ? bins + at : NULL;
		s.nfreed = r_bins(r, fill ? bins + at : NULL);
		at += s.nfreed;
		s.live = fill ? bins + at : NULL;
		s.nlive = r_bins(r, fill ? bins + at : NULL);
		at += s.nlive;
		if (fill)
			sites[i] = s;
	}
	if (!r->rc && r->pos != r->n)
		r_fail(r, "%zu bytes after the last site", r->n - r->pos);
	l->nitems = ns;
	l->nsub = at;
	if (fill && !r->rc) {
		h.stacks = l->stacks;
		h.nstacks = l->nstacks;
		h.sites = sites;
		h.nsites = ns;
		*lt = h;
	}
	return r->rc;
}

int ap_lifetimes_decode(const void *data, size_t len, const ap_allocator *alloc,
			ap_lifetimes **out, char *err, size_t errlen)
{
	void *p = NULL;
	int rc = decode_block(data, len, alloc, lt_pass, sizeof(ap_lifetimes),
			       sizeof(ap_lt_site), sizeof(ap_lt_bin),
			       offsetof(ap_lifetimes, alloc_), offsetof(ap_lifetimes, size_),
			       out ? &p : NULL, err, errlen);
	if (out)
		*out = p;
	return rc;
}

void ap_lifetimes_free(ap_lifetimes *lt)
{
	if (lt)
		lt->alloc_->free(lt->alloc_->ctx, lt, lt->size_);
}
