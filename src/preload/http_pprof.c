/*
 * http_pprof.c: Go net/http/pprof parity for the heap endpoints
 * (http_pprof.h): query parameters, delta profiles and the legacy text
 * form. Everything here works on ap_profile values built by
 * dump_build_profile; nothing touches the runtime's tables.
 */
#include "http_pprof.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/heapv2.h"

/* ---- index ---------------------------------------------------------------- */

/* As Go's /debug/pprof/ page: each profile with a link and one line. */
const char http_pprof_index_html[] =
	"<!DOCTYPE html>\n<html><head><title>/debug/pprof/</title></head><body>\n"
	"<h1>/debug/pprof/</h1>\n<p>Sampled heap profiles of this process "
	"(gzip'd pprof; <code>go tool pprof http://HOST:PORT/debug/pprof/heap</code>). "
	"Parameters: <code>seconds=N</code> (1 to 300) for what happened in the next "
	"N seconds, <code>debug=1</code> for the legacy text form.</p>\n"
	"<table>\n<tr><th>Profile</th><th>Description</th></tr>\n"
	"<tr><td><a href=\"allocs?debug=1\">allocs</a></td><td>A sampling of all past "
	"memory allocations (default sample type alloc_space)</td></tr>\n"
	"<tr><td><a href=\"heap?debug=1\">heap</a></td><td>A sampling of memory "
	"allocations of live objects (default sample type inuse_space)</td></tr>\n"
	"<tr><td><a href=\"symbol\">symbol</a></td><td>Names of program counters, "
	"for <code>go tool pprof</code></td></tr>\n"
	"<tr><td><a href=\"/metrics\">/metrics</a></td><td>Prometheus metrics</td></tr>\n"
	"</table>\n</body></html>\n";

/* ---- query ---------------------------------------------------------------- */

/* A decimal integer of at most 9 digits (no sign), or -1. */
static long small_uint(const char *s, size_t n)
{
	if (n == 0 || n > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int http_pprof_parse_query(const char *q, size_t n, http_pprof_query *out,
			   const char **why)
{
	memset(out, 0, sizeof *out);
	bool have_seconds = false, have_debug = false;
	size_t i = 0;
	while (i < n) {
		size_t e = i;
		while (e < n && q[e] != '&')
			e++;
		size_t eq = i;
		while (eq < e && q[eq] != '=')
			eq++;
		const char *k = q + i, *v = eq < e ? q + eq + 1 : q + e;
		size_t kn = eq - i, vn = eq < e ? e - eq - 1 : 0;
		if (kn == 7 && memcmp(k, "seconds", 7) == 0) {
			long s = small_uint(v, vn);
			if (s < 1 || s > HTTP_PPROF_MAX_SECONDS) {
				*why = "bad seconds: an integer from 1 to 300\n";
				return -1;
			}
			out->seconds = (unsigned)s;
			have_seconds = true;
		} else if (kn == 5 && memcmp(k, "debug", 5) == 0) {
			long d = small_uint(v, vn);
			if (d < 0) {
				*why = "bad debug: 0 (pprof) or 1 (text)\n";
				return -1;
			}
			out->text = d > 0;
			have_debug = true;
		}
		/* gc= (Go runs a collection first; there is nothing to collect
		 * here) and anything else: ignored. */
		i = e + 1;
	}
	if (have_seconds && have_debug) {
		*why = "seconds and debug cannot be combined\n";
		return -1;
	}
	return 0;
}

/* ---- delta ---------------------------------------------------------------- */

/* Order of two samples of possibly different profiles by stack addresses
 * and labels (by name, so string indices of either profile compare). */
static int sample_cmp(const ap_profile *pa, const ap_sample *a, const ap_profile *pb,
		      const ap_sample *b)
{
	if (a->nlocations != b->nlocations)
		return a->nlocations < b->nlocations ? -1 : 1;
	for (size_t i = 0; i < a->nlocations; i++) {
		uint64_t x = ap_profile_location(pa, a->location_ids[i])->address;
		uint64_t y = ap_profile_location(pb, b->location_ids[i])->address;
		if (x != y)
			return x < y ? -1 : 1;
	}
	if (a->nlabels != b->nlabels)
		return a->nlabels < b->nlabels ? -1 : 1;
	for (size_t i = 0; i < a->nlabels; i++) {
		const ap_label *x = &a->labels[i], *y = &b->labels[i];
		int c = strcmp(ap_profile_string(pa, x->key), ap_profile_string(pb, y->key));
		if (!c)
			c = strcmp(ap_profile_string(pa, x->str), ap_profile_string(pb, y->str));
		if (!c && x->num != y->num)
			c = x->num < y->num ? -1 : 1;
		if (c)
			return c;
	}
	return 0;
}

/* qsort has no context argument: the profile being sorted. */
static _Thread_local const ap_profile *sort_p;

static int idx_cmp(const void *a, const void *b)
{
	const ap_sample *s = sort_p->samples;
	return sample_cmp(sort_p, &s[*(const size_t *)a], sort_p, &s[*(const size_t *)b]);
}

static size_t *sorted_index(const ap_profile *p, const ap_allocator *al)
{
	size_t *ix = al->alloc(al->ctx, (p->nsamples + 1) * sizeof *ix);
	if (!ix)
		return NULL;
	for (size_t i = 0; i < p->nsamples; i++)
		ix[i] = i;
	sort_p = p;
	qsort(ix, p->nsamples, sizeof *ix, idx_cmp);
	return ix;
}

/* Append base's sample s to now with negated values. */
static int add_negated(ap_profile *now, const ap_profile *base, const ap_sample *s)
{
	uint64_t locs[256];
	ap_label labels[16];
	int64_t vals[AP_HEAP_NVALUES];
	if (s->nlocations > 256 || s->nlabels > 16 || base->nsample_types > AP_HEAP_NVALUES)
		return AP_EINVAL;
	for (size_t i = 0; i < s->nlocations; i++) {
		const ap_location *bl = ap_profile_location(base, s->location_ids[i]);
		/* Same address in now: reuse its location; else add one, with
		 * the mapping that covers the address in now (mappings are
		 * those of the same process). */
		uint64_t id = 0;
		for (size_t k = 0; k < now->nlocations && !id; k++)
			if (now->locations[k].address == bl->address)
				id = now->locations[k].id;
		if (!id) {
			ap_location l = { .address = bl->address };
			for (size_t k = 0; k < now->nmappings; k++)
				if (bl->address >= now->mappings[k].memory_start &&
				    bl->address < now->mappings[k].memory_limit)
					l.mapping_id = now->mappings[k].id;
			int rc = ap_profile_add_location(now, &l, &id);
			if (rc)
				return rc;
		}
		locs[i] = id;
	}
	for (size_t i = 0; i < s->nlabels; i++) {
		const ap_label *x = &s->labels[i];
		labels[i] = *x;
		labels[i].key = ap_profile_intern(now, ap_profile_string(base, x->key));
		labels[i].str = ap_profile_intern(now, ap_profile_string(base, x->str));
		labels[i].num_unit = ap_profile_intern(now, ap_profile_string(base, x->num_unit));
		if (labels[i].key < 0 || labels[i].str < 0 || labels[i].num_unit < 0)
			return AP_ENOMEM;
	}
	for (size_t v = 0; v < base->nsample_types; v++)
		vals[v] = -s->values[v];
	return ap_profile_add_sample(now, locs, s->nlocations, vals, labels, s->nlabels);
}

int http_pprof_delta(ap_profile *now, const ap_profile *base)
{
	if (now->nsample_types != base->nsample_types)
		return AP_EINVAL;
	const ap_allocator *al = ap_profile_allocator(now);
	size_t nnow = now->nsamples;
	size_t *in = sorted_index(now, al);
	size_t *ib = in ? sorted_index(base, al) : NULL;
	bool *matched = ib ? al->alloc(al->ctx, base->nsamples + 1) : NULL;
	int rc = matched ? 0 : AP_ENOMEM;
	if (matched)
		memset(matched, 0, base->nsamples + 1);
	/* Merge the two sorted lists: equal keys subtract. */
	size_t i = 0, j = 0;
	while (rc == 0 && i < nnow && j < base->nsamples) {
		ap_sample *a = &now->samples[in[i]];
		const ap_sample *b = &base->samples[ib[j]];
		int c = sample_cmp(now, a, base, b);
		if (c < 0) {
			i++;
		} else if (c > 0) {
			j++;
		} else {
			for (size_t v = 0; v < now->nsample_types; v++)
				a->values[v] -= b->values[v];
			matched[ib[j]] = true;
			i++;
			j++;
		}
	}
	/* Samples gone from now (a site the table no longer lists). */
	for (size_t k = 0; rc == 0 && k < base->nsamples; k++)
		if (!matched[k])
			rc = add_negated(now, base, &base->samples[k]);
	if (rc == 0) {
		/* Samples that cancelled stay with all values 0 (the builder
		 * has no removal); pprof and jeprof show nothing for them. */
		now->ncomments = 0;
		/* The histograms count since the start, not the window: left
		 * out, as the comments that once carried them were. */
		size_t keep = 0, hp = strlen(AP_PROFILE_HIST_EXT_PREFIX);
		for (size_t k = 0; k < now->nexts; k++)
			if (strncmp(now->exts[k].name, AP_PROFILE_HIST_EXT_PREFIX, hp))
				now->exts[keep++] = now->exts[k];
		now->nexts = keep;
		int64_t start = base->time_nanos;
		now->duration_nanos = now->time_nanos - start;
		now->time_nanos = start;
	}
	if (matched)
		al->free(al->ctx, matched, base->nsamples + 1);
	if (ib)
		al->free(al->ctx, ib, (base->nsamples + 1) * sizeof *ib);
	if (in)
		al->free(al->ctx, in, (nnow + 1) * sizeof *in);
	return rc;
}

/* ---- text ----------------------------------------------------------------- */

/* The next line of [*s, end) without its newline; false at the end. */
static bool next_line(const char **s, const char *end, const char **l, size_t *n)
{
	if (*s >= end)
		return false;
	const char *nl = memchr(*s, '\n', (size_t)(end - *s));
	*l = *s;
	*n = (size_t)((nl ? nl : end) - *s);
	*s = nl ? nl + 1 : end;
	return true;
}

int http_pprof_text(const ap_profile *p, const char *maps, http_buf *out)
{
	const ap_allocator *al = ap_profile_allocator(p);
	char *t = NULL;
	size_t n = 0;
	int rc = ap_heapv2_encode(p, maps, al, &t, &n);
	if (rc)
		return rc;
	/* heap_v2 (jemalloc) puts each stack before its counts and has a
	 * per-thread line per stack; gperftools' form, which `go tool pprof`
	 * also reads, has one "counts @ stack" line. */
	const char *s = t, *end = t + n, *l, *stack = NULL;
	size_t ln, stack_n = 0;
	char hdr[64] = "";
	while (next_line(&s, end, &l, &ln)) {
		if (!hdr[0] && ln > 8 && memcmp(l, "heap_v2/", 8) == 0 && ln < sizeof hdr) {
			memcpy(hdr, l, ln);
			hdr[ln] = '\0';
		} else if (ln >= 5 && memcmp(l, "  t*:", 5) == 0) {
			if (!stack)
				hb_printf(out, "heap profile: %.*s @ %s\n", (int)(ln - 5), l + 5, hdr);
			else
				hb_printf(out, "%.*s @%.*s\n", (int)(ln - 5), l + 5,
					  (int)(stack_n - 1), stack + 1);
			stack = NULL;
		} else if (ln >= 1 && l[0] == '@') {
			stack = l;
			stack_n = ln;
		} else if (ln >= 3 && l[0] == ' ' && l[1] == ' ' && l[2] == 't') {
			continue; /* per-thread counts: none in the legacy form */
		} else {
			/* The blank line, MAPPED_LIBRARIES and the maps. */
			hb_put(out, l, ln);
			hb_put(out, "\n", 1);
			if (ln == 17 && memcmp(l, "MAPPED_LIBRARIES:", 17) == 0) {
				hb_put(out, s, (size_t)(end - s));
				break;
			}
		}
	}
	al->free(al->ctx, t, n + 1);
	return hb_failed(out) ? AP_ENOMEM : 0;
}
