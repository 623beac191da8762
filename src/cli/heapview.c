/*
 * heapview.c: builds the heap view of heapview.h from a (merged,
 * symbolized) profile: picks the sample types of the requested view, turns
 * each sample into additive statistics (reading allocprof's extra types, or
 * deriving them approximately for profiles that lack them, e.g. Go's),
 * expands locations into frames, drops allocator/allocprof/C++ runtime
 * leaf frames, applies the filters, aggregates per stack, then per site;
 * the statistics' sums and confidence intervals are heapview_stat.c's
 * (estimate.h's row rule).
 * Loading files is profload.c's, merging profmerge.c's.
 */
#define _GNU_SOURCE
#include "heapview.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "framename.h"
#include "keymap.h"
#include "profload.h"

void hv_options_default(hv_options *o)
{
	memset(o, 0, sizeof *o);
	o->view = HV_INUSE;
	o->value = HV_REQUESTED;
	o->by = HV_BY_FUNCTION;
	o->level = 0.95;
	o->size_max = UINT64_MAX;
	o->symbolize = true;
}

const char *hv_kind_name(hv_kind k) { return k == HV_ALLOC ? "alloc" : "inuse"; }
const char *hv_value_name(hv_value v) { return v == HV_USABLE ? "usable" : "requested"; }

const char *hv_by_name(hv_by b)
{
	return b == HV_BY_LINE ? "line" : b == HV_BY_STACK ? "stack" : "function";
}

/* ---- frames ---------------------------------------------------------- */

bool hv_is_alloc_frame(const char *f)
{
	return fn_is_alloc_entry(f);
}

/* ---- the view -------------------------------------------------------- */

struct frame_run {
	size_t first, n; /* range in v->lframes */
};

struct hv_view {
	hv_options opt;
	double rate;
	double rate_max; /* coarsest rate seen (ap_coarsest_rate) */
	bool mixed, approx;
	hv_stat total;
	hv_site *stacks, *sites;
	size_t nstacks, nsites;
	bool *site_done, *stack_done; /* intervals finished (lazily) */
	hv_frame *lframes; /* frames of every location, in profile order */
	size_t nlframes;
	signed char *hit_focus, *hit_ignore; /* per lframe: -1 unknown, 0, 1 */
	signed char *drop; /* per lframe: DROP_* */
	hv_strpool strs; /* every string the view hands out */
};

/* What a frame is (hv_view.drop): the user's, allocation machinery
 * (allocator entry points, allocprof, --skip), or the C++ runtime's. The
 * last two are skipped at the leaf end; a run of C++ runtime frames
 * inside a stack shows only its outermost frame, the user's call into
 * the library (share_all;std::make_shared<>;Widget::Widget). */
enum { DROP_NONE = 0, DROP_ALLOC = 1, DROP_CXX = 2 };

/* Sample-type indices of the chosen view (-1 = absent). */
struct vtypes {
	int bytes, objects, req, samples, u, var_b, var_o;
	int exact, var2_b, var2_o; /* the row types; -1 in older profiles */
};

struct build {
	const ap_profile *p;
	hv_view *v;
	struct vtypes t;
	struct frame_run *runs; /* per location index */
	int64_t k_bytes, k_rate; /* string indices of label keys, -1 absent */
	regex_t focus, ignore;
	bool has_focus, has_ignore;
	regex_t skip[HV_MAX_SKIP]; /* --skip, compiled */
	size_t nskip;
	hv_keymap *stackmap, *sitemap;
	size_t capstacks, capsites;
	double *best; /* per site: bytes of its largest contribution */
	hv_frame *fbuf; /* frames of the sample being processed */
	size_t *fidx;   /* their indices in v->lframes */
	size_t cap_fbuf;
	char *kbuf;
	size_t cap_kbuf;
	double first_rate;
	char *err;
	size_t errlen;
};

static const char *pool(hv_view *v, const char *s)
{
	return hv_strpool_get(&v->strs, s);
}

static int fail(struct build *b, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct build *b, int code, const char *fmt, ...)
{
	va_list ap;
	if (b->err && b->errlen) {
		va_start(ap, fmt);
		vsnprintf(b->err, b->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int find_types(struct build *b)
{
	const ap_profile *p = b->p;
	bool alloc = b->v->opt.view == HV_ALLOC;
	bool usable = b->v->opt.value == HV_USABLE;
	const char *req = alloc ? AP_ST_ALLOC_SPACE : AP_ST_INUSE_SPACE;
	struct vtypes *t = &b->t;
	t->req = ap_profile_find_sample_type(p, req);
	t->objects = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_OBJECTS : AP_ST_INUSE_OBJECTS);
	t->bytes = usable ? ap_profile_find_sample_type(
				    p, alloc ? AP_ST_ALLOC_USABLE : AP_ST_INUSE_USABLE)
			  : t->req;
	t->samples = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_SAMPLES : AP_ST_INUSE_SAMPLES);
	t->u = ap_profile_find_sample_type(p, alloc ? AP_ST_ALLOC_U : AP_ST_INUSE_U);
	t->var_b = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_SPACE_VAR : AP_ST_INUSE_SPACE_VAR);
	t->var_o = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_OBJECTS_VAR : AP_ST_INUSE_OBJECTS_VAR);
	t->exact = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_EXACT : AP_ST_INUSE_EXACT);
	t->var2_b = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_SPACE_VAR2 : AP_ST_INUSE_SPACE_VAR2);
	t->var2_o = ap_profile_find_sample_type(
		p, alloc ? AP_ST_ALLOC_OBJECTS_VAR2 : AP_ST_INUSE_OBJECTS_VAR2);
	if (t->req < 0 || t->objects < 0)
		return fail(b, AP_EINVAL,
			    "not a heap profile with %s view (no %s and %s sample types)",
			    hv_kind_name(b->v->opt.view), req,
			    alloc ? AP_ST_ALLOC_OBJECTS : AP_ST_INUSE_OBJECTS);
	if (t->bytes < 0)
		return fail(b, AP_EINVAL,
			    "profile has no usable sizes (no %s sample type)",
			    alloc ? AP_ST_ALLOC_USABLE : AP_ST_INUSE_USABLE);
	b->v->approx = t->samples < 0 || t->u < 0 || t->var_b < 0 || t->var_o < 0;
	return 0;
}

/* Name for an unsymbolized frame: "file+0xOFFSET" or "0xADDRESS". */
static const char *raw_name(hv_view *v, const ap_profile *p,
			    const ap_location *l)
{
	char buf[512];
	const ap_mapping *m = l->mapping_id ? ap_profile_mapping(p, l->mapping_id)
					    : NULL;
	if (m && l->address >= m->memory_start) {
		const char *f = ap_profile_string(p, m->filename);
		const char *base = strrchr(f, '/');
		base = base ? base + 1 : f;
		snprintf(buf, sizeof buf, "%s+0x%llx", *base ? base : "?",
			 (unsigned long long)(l->address - m->memory_start +
					      m->file_offset));
	} else {
		snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)l->address);
	}
	return pool(v, buf);
}

/* A function's name as shown: shortened C++ unless --full-names. */
static const char *display_name(hv_view *v, const char *name)
{
	if (v->opt.full_names)
		return pool(v, name);
	size_t cap = strlen(name) + 3;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	fn_shorten(name, s, cap);
	const char *r = pool(v, s);
	free(s);
	return r;
}

/* Whether a frame at the leaf end of a stack is allocation machinery:
 * an allocator entry point, allocprof, or --skip. */
static bool skipped(const struct build *b, const char *name)
{
	if (hv_is_alloc_frame(name))
		return true;
	for (size_t i = 0; i < b->nskip; i++)
		if (regexec(&b->skip[i], name, 0, NULL, 0) == 0)
			return true;
	return false;
}

static int expand_locations(struct build *b)
{
	const ap_profile *p = b->p;
	hv_view *v = b->v;
	size_t total = 0;
	for (size_t i = 0; i < p->nlocations; i++)
		total += p->locations[i].nlines ? p->locations[i].nlines : 1;
	b->runs = calloc(p->nlocations + 1, sizeof *b->runs);
	v->lframes = calloc(total + 1, sizeof *v->lframes);
	v->hit_focus = malloc(total + 1);
	v->hit_ignore = malloc(total + 1);
	v->drop = calloc(total + 1, sizeof *v->drop);
	if (!b->runs || !v->lframes || !v->hit_focus || !v->hit_ignore || !v->drop)
		return fail(b, AP_ENOMEM, "out of memory");
	memset(v->hit_focus, -1, total + 1);
	memset(v->hit_ignore, -1, total + 1);
	for (size_t i = 0; i < p->nlocations; i++) {
		const ap_location *l = &p->locations[i];
		const ap_mapping *m = l->mapping_id ? ap_profile_mapping(p, l->mapping_id)
						    : NULL;
		/* frames in the runtime's own object are allocprof's, those in
		 * libstdc++ the C++ runtime's, whatever their names */
		const char *obj = m ? ap_profile_string(p, m->filename) : "";
		bool preload = strstr(obj, "liballocprof_preload");
		bool cxxlib = fn_is_runtime_object(obj);
		b->runs[i].first = v->nlframes;
		for (size_t j = 0; j < l->nlines || (j == 0 && !l->nlines); j++) {
			hv_frame *f = &v->lframes[v->nlframes++];
			f->address = l->address;
			f->file = "";
			const ap_function *fn =
				l->nlines ? ap_profile_function(p, l->lines[j].function_id)
					  : NULL;
			if (fn && *ap_profile_string(p, fn->name)) {
				f->function = display_name(v, ap_profile_string(p, fn->name));
				f->file = pool(v, ap_profile_string(p, fn->filename));
				f->line = l->lines[j].line;
			} else {
				f->function = raw_name(v, p, l);
			}
			f->inlined = j + 1 < l->nlines;
			if (!f->function || !f->file)
				return fail(b, AP_ENOMEM, "out of memory");
			v->drop[v->nlframes - 1] =
				preload || skipped(b, f->function) ? DROP_ALLOC
				: cxxlib || fn_is_std_frame(f->function) ||
						fn_is_std_header(f->file) ||
						(f->inlined &&
						 fn_is_rust_library_source(f->file))
					? DROP_CXX
					: DROP_NONE;
		}
		b->runs[i].n = v->nlframes - b->runs[i].first;
	}
	return 0;
}

static bool frame_hits(regex_t *re, signed char *cache, const hv_frame *f,
		       size_t idx)
{
	if (cache[idx] < 0)
		cache[idx] = regexec(re, f->function, 0, NULL, 0) == 0;
	return cache[idx] == 1;
}

static int64_t label_num(const ap_sample *s, int64_t key)
{
	for (size_t i = 0; key > 0 && i < s->nlabels; i++)
		if (s->labels[i].key == key && s->labels[i].str == 0)
			return s->labels[i].num;
	return -1;
}

/*
 * Expected u = size - offset of the sampled byte of a sampled allocation of
 * size z at rate r: offset | sampled is a geometric(p) truncated to [0, z),
 * mean q/p - z q^z / (1 - q^z). Used only for profiles without alloc_u.
 */
static double expected_u(double z, double r)
{
	if (r <= 1.0)
		return z;
	double lq = log1p(-1.0 / r);
	double qz = exp(z * lq);
	double off = (1.0 - 1.0 / r) * r - z * qz / -expm1(z * lq);
	if (!(off >= 0))
		off = 0;
	if (off > z - 1)
		off = z - 1;
	return z - off;
}

/* The sample's contribution; false when it has nothing in this view. */
static bool sample_stat(struct build *b, const ap_sample *s, hv_stat *st,
			uint64_t *size)
{
	const struct vtypes *t = &b->t;
	double bytes = (double)s->values[t->bytes];
	double objs = (double)s->values[t->objects];
	double req = (double)s->values[t->req];
	if (!(bytes > 0 || objs > 0))
		return false;
	int64_t lb = label_num(s, b->k_bytes);
	if (lb >= 0)
		*size = (uint64_t)lb;
	else
		*size = objs > 0 ? (uint64_t)llround(req / objs) : 0;
	int64_t lr = label_num(s, b->k_rate);
	double rate = lr > 0 ? (double)lr : b->p->period > 0 ? (double)b->p->period : 1.0;
	memset(st, 0, sizeof *st);
	st->bytes = bytes;
	st->objects = objs;
	if (b->t.bytes != b->t.req)
		st->req_bytes = req;
	double ratio = req > 0 ? bytes / req : 1.0;
	uint64_t ns;
	double u;
	if (!b->v->approx) {
		ns = (uint64_t)(s->values[t->samples] > 0 ? s->values[t->samples] : 0);
		u = (double)s->values[t->u];
		st->var_bytes = (double)s->values[t->var_b] * ratio * ratio;
		st->var_objects = (double)s->values[t->var_o];
		if (t->var2_b >= 0 && t->var2_o >= 0) {
			double r4 = ratio * ratio * ratio * ratio;
			st->var2_bytes = ap_var2_decode(
				(double)s->values[t->var2_b], rate) * r4;
			st->var2_objects = ap_var2_decode(
				(double)s->values[t->var2_o], rate);
		}
		if (t->exact >= 0 && s->values[t->exact] > 0)
			st->exact_samples = (uint64_t)s->values[t->exact];
		else if (t->exact < 0 && rate <= 1)
			st->exact_samples = ns; /* older profile at rate 1 */
	} else {
		/* Go-style profile: values are count/pi-scaled; undo to recover
		 * the sample count (pi with jemalloc/Go's exp form). */
		double z = (double)*size;
		double pi = z > 0 ? ap_prob_sampled_exp(*size, rate) : 1.0;
		if (!(pi > 0))
			pi = 1.0;
		double sm = objs * pi;
		ns = (uint64_t)llround(sm);
		if (ns == 0 && objs > 0)
			ns = 1;
		u = sm * expected_u(z, rate);
		st->var_bytes = objs * (1 - pi) * z * z / pi * ratio * ratio;
		st->var_objects = objs * (1 - pi) / pi;
		/* sm samples, each with the terms vo = (1 - pi) / pi^2 and
		 * vo z^2: their squares summed */
		double vo = (1 - pi) / (pi * pi), vb = vo * z * z * ratio * ratio;
		st->var2_objects = sm * vo * vo;
		st->var2_bytes = sm * vb * vb;
		if (pi >= 1)
			st->exact_samples = ns;
	}
	st->samples = ns;
	st->rate_max = rate;
	st->z_min = b->v->opt.size_min;
	if (rate > b->v->rate_max)
		b->v->rate_max = rate;
	st->u = u;
	hv_stat_add_group(st, rate, ns, u);
	if (b->first_rate == 0)
		b->first_rate = rate;
	else if (rate != b->first_rate)
		b->v->mixed = true;
	return true;
}

/*
 * Frames of sample s (leaf first, allocator frames dropped) into b->fbuf,
 * with each frame's index in v->lframes in b->fidx (for the regex caches).
 */
static int sample_frames(struct build *b, const ap_sample *s, size_t *nout)
{
	size_t n = 0;
	for (size_t i = 0; i < s->nlocations; i++) {
		const ap_location *l = ap_profile_location(b->p, s->location_ids[i]);
		size_t li = (size_t)(l - b->p->locations);
		const struct frame_run *r = &b->runs[li];
		size_t cap = b->cap_fbuf;
		if (ap_cli_grow((void **)&b->fbuf, &b->cap_fbuf, n + r->n, sizeof *b->fbuf) ||
		    ap_cli_grow((void **)&b->fidx, &cap, n + r->n, sizeof *b->fidx))
			return AP_ENOMEM;
		memcpy(b->fbuf + n, b->v->lframes + r->first, r->n * sizeof *b->fbuf);
		for (size_t j = 0; j < r->n; j++)
			b->fidx[n + j] = r->first + j;
		n += r->n;
	}
	size_t skip = 0;
	if (!b->v->opt.keep_alloc_frames)
		while (skip < n && b->v->drop[b->fidx[skip]])
			skip++;
	if (skip == n)
		skip = 0; /* a stack of allocator frames only: show it as is */
	bool collapse = !b->v->opt.keep_alloc_frames && skip < n;
	size_t k = 0;
	for (size_t i = skip; i < n; i++) {
		if (collapse && i + 1 < n && b->v->drop[b->fidx[i]] == DROP_CXX &&
		    b->v->drop[b->fidx[i + 1]] == DROP_CXX)
			continue; /* not the outermost of a C++ runtime run */
		b->fbuf[k] = b->fbuf[i];
		b->fidx[k++] = b->fidx[i];
	}
	*nout = k;
	return 0;
}

/* --focus: some frame matches; --ignore: no frame matches. */
static bool passes_filters(struct build *b, size_t n)
{
	bool keep = !b->has_focus;
	for (size_t i = 0; i < n; i++) {
		if (b->has_ignore && frame_hits(&b->ignore, b->v->hit_ignore,
						&b->fbuf[i], b->fidx[i]))
			return false;
		if (!keep && frame_hits(&b->focus, b->v->hit_focus, &b->fbuf[i],
					b->fidx[i]))
			keep = true;
	}
	return keep;
}

/* Append s (and a separator) to the key buffer. */
static int key_append(struct build *b, size_t *len, const char *s, char sep)
{
	size_t n = strlen(s);
	if (ap_cli_grow((void **)&b->kbuf, &b->cap_kbuf, *len + n + 2, 1))
		return AP_ENOMEM;
	if (*len && sep)
		b->kbuf[(*len)++] = sep;
	memcpy(b->kbuf + *len, s, n);
	*len += n;
	b->kbuf[*len] = 0;
	return 0;
}

/* The stack of the current frames (root-first names): find or create. */
static int stack_for(struct build *b, size_t n, hv_site **out)
{
	hv_view *v = b->v;
	size_t len = 0;
	if (n == 0 && key_append(b, &len, "(no stack)", 0))
		return AP_ENOMEM;
	for (size_t i = n; i-- > 0;)
		if (key_append(b, &len, b->fbuf[i].function, ';'))
			return AP_ENOMEM;
	size_t idx = hv_keymap_get(b->stackmap, b->kbuf, len);
	if (idx != SIZE_MAX) {
		*out = &v->stacks[idx];
		return 0;
	}
	if (ap_cli_grow((void **)&v->stacks, &b->capstacks, v->nstacks + 1,
		 sizeof *v->stacks))
		return AP_ENOMEM;
	hv_site *st = &v->stacks[v->nstacks];
	memset(st, 0, sizeof *st);
	hv_frame *fr = malloc((n ? n : 1) * sizeof *fr);
	st->name = pool(v, b->kbuf);
	if (!fr || !st->name ||
	    hv_keymap_put(b->stackmap, b->kbuf, len, v->nstacks)) {
		free(fr);
		return AP_ENOMEM;
	}
	if (n)
		memcpy(fr, b->fbuf, n * sizeof *fr);
	st->stack = fr;
	st->nstack = n;
	st->function = n ? fr[0].function : st->name;
	st->file = n ? fr[0].file : "";
	st->line = n ? fr[0].line : 0;
	v->nstacks++;
	*out = st;
	return 0;
}

/* Site key of the current frames for the chosen aggregation. */
static int site_key(struct build *b, const hv_site *st, size_t n, size_t *len)
{
	*len = 0;
	if (b->v->opt.by == HV_BY_STACK || n == 0)
		return key_append(b, len, st->name, 0);
	if (key_append(b, len, b->fbuf[0].function, 0))
		return AP_ENOMEM;
	if (b->v->opt.by == HV_BY_LINE) {
		char ln[32];
		snprintf(ln, sizeof ln, ":%lld", (long long)b->fbuf[0].line);
		if (key_append(b, len, *b->fbuf[0].file ? b->fbuf[0].file : "?", ' ') ||
		    key_append(b, len, ln, 0))
			return AP_ENOMEM;
	}
	return 0;
}

/*
 * Add the sample's statistic to its site. The site's representative stack,
 * file and line are those of its largest single contribution.
 */
static int add_to_site(struct build *b, const hv_site *st, size_t n,
		       const hv_stat *stat)
{
	hv_view *v = b->v;
	size_t len;
	if (site_key(b, st, n, &len))
		return AP_ENOMEM;
	size_t idx = hv_keymap_get(b->sitemap, b->kbuf, len);
	if (idx == SIZE_MAX) {
		size_t cap = b->capsites;
		if (ap_cli_grow((void **)&v->sites, &b->capsites, v->nsites + 1,
			 sizeof *v->sites) ||
		    ap_cli_grow((void **)&b->best, &cap, v->nsites + 1, sizeof *b->best))
			return AP_ENOMEM;
		idx = v->nsites;
		memset(&v->sites[idx], 0, sizeof v->sites[idx]);
		b->best[idx] = -1;
		v->sites[idx].name = pool(v, b->kbuf);
		if (!v->sites[idx].name || hv_keymap_put(b->sitemap, b->kbuf, len, idx))
			return AP_ENOMEM;
		v->nsites++;
	}
	hv_site *site = &v->sites[idx];
	hv_stat_add(&site->stat, stat);
	/* files differ, both known (a frame without line information says
	 * nothing of where its function lies) */
	if (n && b->best[idx] >= 0 && *site->file && *b->fbuf[0].file &&
	    strcmp(site->file, b->fbuf[0].file) != 0)
		site->several_files = true;
	if (stat->bytes > b->best[idx]) {
		b->best[idx] = stat->bytes;
		site->stack = st->stack;
		site->nstack = st->nstack;
		site->function = n ? b->fbuf[0].function : st->name;
		site->file = n ? b->fbuf[0].file : "";
		site->line = n ? b->fbuf[0].line : 0;
	}
	return 0;
}

static int add_samples(struct build *b)
{
	const ap_profile *p = b->p;
	const hv_options *o = &b->v->opt;
	for (size_t i = 0; i < p->nsamples; i++) {
		const ap_sample *s = &p->samples[i];
		hv_stat st;
		uint64_t size;
		size_t n;
		hv_site *stack;
		if (!sample_stat(b, s, &st, &size))
			continue;
		if (size < o->size_min || size > o->size_max)
			continue;
		if (sample_frames(b, s, &n))
			return fail(b, AP_ENOMEM, "out of memory");
		if (!passes_filters(b, n))
			continue;
		if (stack_for(b, n, &stack) || add_to_site(b, stack, n, &st))
			return fail(b, AP_ENOMEM, "out of memory");
		hv_stat_add(&stack->stat, &st);
		hv_stat_add(&b->v->total, &st);
	}
	return 0;
}

static int by_bytes_desc(const void *a, const void *b)
{
	const hv_site *x = a, *y = b;
	if (x->stat.bytes != y->stat.bytes)
		return x->stat.bytes > y->stat.bytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const hv_site *)a)->name, ((const hv_site *)b)->name);
}

static int compile(struct build *b, regex_t *re, const char *pat,
		   const char *what, bool *has)
{
	if (!pat)
		return 0;
	int rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[128];
		regerror(rc, re, msg, sizeof msg);
		return fail(b, AP_EINVAL, "bad %s regex '%s': %s", what, pat, msg);
	}
	*has = true;
	return 0;
}

int hv_build(const ap_profile *p, const hv_options *o, hv_view **out,
	     char *err, size_t errlen)
{
	struct build b = {.p = p, .err = err, .errlen = errlen,
			  .k_bytes = -1, .k_rate = -1};
	int rc;
	*out = NULL;
	hv_view *v = calloc(1, sizeof *v);
	if (!v || hv_strpool_init(&v->strs)) {
		free(v);
		return fail(&b, AP_ENOMEM, "out of memory");
	}
	b.v = v;
	v->opt = *o;
	v->rate = p->period > 0 ? (double)p->period : 1.0;
	if (!(o->level > 0 && o->level < 1)) {
		rc = fail(&b, AP_EINVAL, "level must be between 0 and 1");
		goto done;
	}
	for (size_t i = 1; i < p->nstrings; i++) {
		if (!strcmp(p->strings[i], "bytes"))
			b.k_bytes = (int64_t)i;
		else if (!strcmp(p->strings[i], "rate"))
			b.k_rate = (int64_t)i;
	}
	if ((rc = find_types(&b)) ||
	    (rc = compile(&b, &b.focus, o->focus, "--focus", &b.has_focus)) ||
	    (rc = compile(&b, &b.ignore, o->ignore, "--ignore", &b.has_ignore)))
		goto done;
	for (bool has; b.nskip < o->nskip && b.nskip < HV_MAX_SKIP; b.nskip++)
		if ((rc = compile(&b, &b.skip[b.nskip], o->skip[b.nskip], "--skip",
				  &has)))
			goto done;
	if ((rc = expand_locations(&b)))
		goto done;
	if (!(b.stackmap = hv_keymap_new()) || !(b.sitemap = hv_keymap_new())) {
		rc = fail(&b, AP_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = add_samples(&b)))
		goto done;
	/* sites' and stacks' intervals are finished on first access: exact NB
	 * intervals cost special functions, and reports show few of them */
	v->site_done = calloc(v->nsites + 1, 1);
	v->stack_done = calloc(v->nstacks + 1, 1);
	if (!v->site_done || !v->stack_done) {
		rc = fail(&b, AP_ENOMEM, "out of memory");
		goto done;
	}
	/* a total without samples takes the bound of the coarsest rate */
	v->total.rate_max = hv_coarsest_rate(v);
	v->total.z_min = o->size_min;
	hv_stat_finish(&v->total, o->level);
	if (v->nsites)
		qsort(v->sites, v->nsites, sizeof *v->sites, by_bytes_desc);
	if (v->nstacks)
		qsort(v->stacks, v->nstacks, sizeof *v->stacks, by_name);
	/* sites point at stacks' frame arrays, which qsort does not move */
done:
	if (b.has_focus)
		regfree(&b.focus);
	if (b.has_ignore)
		regfree(&b.ignore);
	for (size_t i = 0; i < b.nskip; i++)
		regfree(&b.skip[i]);
	hv_keymap_free(b.stackmap);
	hv_keymap_free(b.sitemap);
	free(b.best);
	free(b.runs);
	free(b.fbuf);
	free(b.fidx);
	free(b.kbuf);
	v->opt.focus = v->opt.ignore = NULL; /* the caller's strings */
	v->opt.nskip = 0;
	if (rc)
		hv_destroy(v);
	else
		*out = v;
	return rc;
}

void hv_destroy(hv_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nstacks; i++)
		free((void *)v->stacks[i].stack);
	free(v->stacks);
	free(v->sites);
	free(v->site_done);
	free(v->stack_done);
	free(v->lframes);
	free(v->hit_focus);
	free(v->hit_ignore);
	free(v->drop);
	hv_strpool_free(&v->strs);
	free(v);
}

const hv_stat *hv_total(const hv_view *v) { return &v->total; }
size_t hv_nsites(const hv_view *v) { return v->nsites; }
/* Finish an interval on first access (the view is ours to update: it was
 * allocated non-const by hv_build). */
static const hv_site *finished(const hv_view *cv, hv_site *s, bool *done)
{
	if (!*done) {
		hv_stat_finish(&s->stat, cv->opt.level);
		*done = true;
	}
	return s;
}

const hv_site *hv_site_at(const hv_view *v, size_t i)
{
	hv_view *w = (hv_view *)v;
	return i < v->nsites ? finished(v, &w->sites[i], &w->site_done[i]) : NULL;
}

size_t hv_nstacks(const hv_view *v) { return v->nstacks; }

const hv_site *hv_stack_at(const hv_view *v, size_t i)
{
	hv_view *w = (hv_view *)v;
	return i < v->nstacks ? finished(v, &w->stacks[i], &w->stack_done[i]) : NULL;
}
double hv_rate(const hv_view *v) { return v->rate; }
bool hv_mixed_rates(const hv_view *v) { return v->mixed; }
double hv_coarsest_rate(const hv_view *v)
{
	return v->rate_max > v->rate ? v->rate_max : v->rate;
}
bool hv_view_approximate(const hv_view *v) { return v->approx; }
const hv_options *hv_view_options(const hv_view *v) { return &v->opt; }

int hv_open(const char *const *paths, size_t n, const hv_options *o,
	    hv_view **out, char *err, size_t errlen)
{
	ap_profile *p = NULL;
	*out = NULL;
	int rc = hv_load_symbolized(paths, n, o->symbolize, &p, err, errlen);
	if (rc)
		return rc;
	rc = hv_build(p, o, out, err, errlen);
	if (rc && n == 1 && err && errlen) {
		/* name the file in the message */
		char tmp[512];
		snprintf(tmp, sizeof tmp, "%s: %s", paths[0], err);
		snprintf(err, errlen, "%s", tmp);
	}
	ap_profile_destroy(p);
	return rc;
}
