/*
 * timeview.c: the "peak" and "lifetimes" extensions as profiles and rows
 * (timeview.h).
 *
 * Each extension site becomes a sample of the loaded profile marked with
 * the label MARK (its index + 1), so that symbolizing treats its frames as
 * any other; afterwards a shallow copy of the symbolized profile whose
 * sample array holds only the marked samples (or one of them) is what the
 * heap view is built from.
 */
#define _GNU_SOURCE
#include "timeview.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/timeline.h"
#include "cli_util.h"
#include "profload.h"
#include "symbolize.h"

#define MARK "allocprof.timeview"

typedef struct addr_id {
	uint64_t addr, id;
} addr_id;

static int cmp_addr(const void *a, const void *b)
{
	const addr_id *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Mapping id holding addr, or 0. */
static uint64_t mapping_for(const ap_profile *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmappings; i++)
		if (addr >= p->mappings[i].memory_start && addr < p->mappings[i].memory_limit)
			return p->mappings[i].id;
	return 0;
}

/*
 * Location ids for every stack of the extension: found by address among
 * p's Locations, or added. ids[k] points into one array (free ids[0]).
 */
int tv_stack_locations(ap_profile *p, const ap_tl_stack *st, size_t n,
		       uint64_t ***out)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += st[i].depth;
	uint64_t **ids = calloc(n ? n : 1, sizeof *ids);
	uint64_t *flat = calloc(total ? total : 1, sizeof *flat);
	addr_id *idx = calloc(p->nlocations + total + 1, sizeof *idx);
	int rc = ids && flat && idx ? 0 : AP_ENOMEM;
	size_t ni = 0;
	for (size_t i = 0; rc == 0 && i < p->nlocations; i++)
		idx[ni++] = (addr_id){ p->locations[i].address, p->locations[i].id };
	qsort(idx, ni, sizeof *idx, cmp_addr);
	size_t at = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		ids[i] = flat + at;
		for (size_t j = 0; rc == 0 && j < st[i].depth; j++, at++) {
			addr_id key = { st[i].addrs[j], 0 };
			addr_id *hit = bsearch(&key, idx, ni, sizeof *idx, cmp_addr);
			if (hit) {
				flat[at] = hit->id;
				continue;
			}
			ap_location loc;
			memset(&loc, 0, sizeof loc);
			loc.address = key.addr;
			loc.mapping_id = mapping_for(p, key.addr);
			rc = ap_profile_add_location(p, &loc, &flat[at]);
			/* later stacks find it too (kept sorted) */
			size_t pos = 0;
			while (rc == 0 && pos < ni && idx[pos].addr < key.addr)
				pos++;
			memmove(&idx[pos + 1], &idx[pos], (ni - pos) * sizeof *idx);
			idx[pos] = (addr_id){ key.addr, flat[at] };
			ni++;
		}
	}
	free(idx);
	if (rc) {
		free(flat);
		free(ids);
		return rc;
	}
	*out = ids;
	return 0;
}

int tv_add_marked(ap_profile *p, uint64_t *const *ids, const ap_tl_stack *st,
		  uint32_t k, uint64_t rate, const ap_heap_sums *alloc,
		  const ap_heap_sums *inuse, int64_t mark)
{
	int64_t vals[AP_HEAP_NVALUES];
	uint64_t key = ap_round_key(st[k].addrs, st[k].depth, 0) ^ rate;
	ap_heap_sums_encode(alloc, inuse, (double)rate, key, vals);
	if ((size_t)p->nsample_types != AP_HEAP_NVALUES)
		return AP_ECORRUPT;
	ap_label lb[2];
	memset(lb, 0, sizeof lb);
	lb[0].key = ap_profile_intern(p, MARK);
	lb[0].num = mark;
	size_t nl = 1;
	if (p->period > 0 && rate != (uint64_t)p->period) {
		lb[1].key = ap_profile_intern(p, "rate");
		lb[1].num = (int64_t)rate;
		lb[1].num_unit = ap_profile_intern(p, "bytes");
		nl = 2;
	}
	if (lb[0].key < 0 || (nl == 2 && (lb[1].key < 0 || lb[1].num_unit < 0)))
		return AP_ENOMEM;
	return ap_profile_add_sample(p, ids[k], st[k].depth, vals, lb, nl);
}

/* The mark of sample s (0 = not one of ours). */
static int64_t mark_of(const ap_profile *p, const ap_sample *s)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(ap_profile_string(p, s->labels[i].key), MARK))
			return s->labels[i].num;
	return 0;
}

/* Load one profile and its extension named name (raw data into *ext). */
static int load_with_ext(const char *const *paths, size_t n, const char *name,
			 ap_profile **out, const ap_profile_ext **ext, char *err,
			 size_t errlen)
{
	if (n != 1) {
		ap_cli_seterr(err, errlen, "--peak and --lifetimes read one profile "
			      "(the series of one process), not %zu", n);
		return AP_EINVAL;
	}
	int rc = hv_load_profiles(paths, n, out, err, errlen);
	if (rc)
		return rc;
	size_t cur = 0;
	*ext = ap_profile_ext_next(*out, name, false, &cur);
	if (!*ext) {
		ap_cli_seterr(err, errlen, "%s: no \"%s\" extension (the runtime writes "
			      "it with timeline= or peak=1%s)", paths[0], name,
			      strcmp(name, AP_LIFETIMES_EXT) ? "" : "; lifetimes=1 is "
			      "the default");
		ap_profile_destroy(*out);
		*out = NULL;
		return AP_ENOTFOUND;
	}
	return 0;
}

static int symbolize_into(ap_profile *p, bool symbolize, ap_profile **out,
			  char *err, size_t errlen)
{
	if (!symbolize) {
		*out = p;
		return 0;
	}
	sym_options so;
	sym_options_default(&so);
	int rc = sym_symbolize_profile(p, &so, out, NULL, err, errlen);
	ap_profile_destroy(p);
	return rc;
}

/* A shallow copy of a profile with its own sample array; view comes
 * first, so a pointer to it is a pointer to the whole. */
typedef struct tv_owned {
	ap_profile view;
	ap_profile *owner;
} tv_owned;

/* The shallow copy of p with only the marked samples; owns p. */
static int keep_marked(ap_profile *p, ap_profile **out)
{
	tv_owned *o = calloc(1, sizeof *o);
	ap_sample *v = calloc(p->nsamples ? p->nsamples : 1, sizeof *v);
	if (!o || !v) {
		free(o);
		free(v);
		ap_profile_destroy(p);
		return AP_ENOMEM;
	}
	o->view = *p;
	o->owner = p;
	size_t k = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		if (mark_of(p, &p->samples[i]))
			v[k++] = p->samples[i];
	o->view.samples = v;
	o->view.nsamples = k;
	*out = &o->view;
	return 0;
}

void tv_profile_free(ap_profile *p)
{
	if (!p)
		return;
	tv_owned *o = (tv_owned *)(void *)p;
	free(o->view.samples);
	ap_profile_destroy(o->owner);
	free(o);
}

/* ---- peak ---------------------------------------------------------------- */

int tv_peak_profile(const char *const *paths, size_t n, bool symbolize,
		    ap_profile **out, tv_peak_info *info, char *err, size_t errlen)
{
	ap_profile *p;
	const ap_profile_ext *ext;
	*out = NULL;
	int rc = load_with_ext(paths, n, AP_PEAK_EXT, &p, &ext, err, errlen);
	if (rc)
		return rc;
	ap_timeline *tl = NULL;
	char why[200] = "";
	rc = ap_timeline_decode(ext->data, ext->len, NULL, &tl, why, sizeof why);
	if (rc == 0 && tl->npoints != 1) {
		rc = AP_ECORRUPT;
		snprintf(why, sizeof why, "%zu points, not one", tl->npoints);
	}
	if (rc) {
		ap_cli_seterr(err, errlen, "%s: the peak extension is unreadable: %s",
			      paths[0], why);
		ap_timeline_free(tl);
		ap_profile_destroy(p);
		return rc == AP_ENOMEM ? rc : AP_ECORRUPT;
	}
	const ap_tl_point *pt = &tl->points[0];
	info->t_ns = pt->t_ns;
	info->candidates = tl->candidates;
	info->max_space = tl->max_space;
	info->total = pt->total;
	info->period = (double)(tl->period ? tl->period : (uint64_t)p->period);
	uint64_t **ids = NULL;
	rc = tv_stack_locations(p, tl->stacks, tl->nstacks, &ids);
	ap_heap_sums none;
	memset(&none, 0, sizeof none);
	for (size_t i = 0; rc == 0 && i < pt->nsites; i++)
		rc = tv_add_marked(p, ids, tl->stacks, pt->sites[i].stack, pt->sites[i].rate,
				&none, &pt->sites[i].inuse, (int64_t)i + 1);
	if (ids)
		free(ids[0]);
	free(ids);
	ap_timeline_free(tl);
	if (rc) {
		ap_cli_seterr(err, errlen, "%s: cannot rebuild the peak: %s", paths[0],
			      ap_strerror(rc));
		ap_profile_destroy(p);
		return rc;
	}
	ap_profile *sp;
	rc = symbolize_into(p, symbolize, &sp, err, errlen);
	if (rc)
		return rc;
	return keep_marked(sp, out);
}

void tv_peak_interval(const tv_peak_info *info, double level, ap_interval *out)
{
	double m = info->candidates ? (double)info->candidates : 1;
	double alpha = 1 - level;
	double se = sqrt(info->total.space_var > 0 ? info->total.space_var : 0);
	double z_hi = ap_normal_quantile(1 - alpha / 2);
	double z_lo = ap_normal_quantile(1 - alpha / (2 * m));
	out->estimate = info->total.space;
	out->lo = fmax(0, info->total.space - z_lo * se);
	out->hi = fmax(info->total.space, info->max_space) + z_hi * se;
}

/* ---- lifetimes --------------------------------------------------------------- */

struct tv_lifetimes {
	tv_life_row *rows;
	size_t n;
	double seconds;
	char **strings; /* names owned here */
	size_t nstrings;
};

/* A group being filled: its observations. */
typedef struct group {
	char *name, *function, *file;
	int64_t line;
	ap_life_obs *obs;
	double *w2;
	uint64_t (*edge)[2]; /* each observation's bin [t_lo, t_hi] */
	size_t n, cap, nfreed;
	uint64_t freed_samples, live_samples;
	double short_bytes, short_var;
} group;

static int push_obs(group *g, const ap_lt_bin *b, bool censored)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		ap_life_obs *no = realloc(g->obs, cap * sizeof *no);
		if (no)
			g->obs = no;
		double *nw = realloc(g->w2, cap * sizeof *nw);
		if (nw)
			g->w2 = nw;
		uint64_t (*ne)[2] = realloc(g->edge, cap * sizeof *ne);
		if (ne)
			g->edge = ne;
		if (!no || !nw || !ne)
			return AP_ENOMEM;
		g->cap = cap;
	}
	double w = b->w >= 1 ? b->w : 1; /* weights below 1: count mode */
	double mid = (double)b->t_lo + (double)(b->t_hi - b->t_lo) / 2;
	g->obs[g->n] = (ap_life_obs){ mid, w, w > 0 ? b->bytes / w : 0, censored };
	g->edge[g->n][0] = b->t_lo;
	g->edge[g->n][1] = b->t_hi;
	g->w2[g->n] = b->w2 >= w ? b->w2 : w;
	g->n++;
	return 0;
}

static int add_bins(group *g, const ap_lt_site *s, double short_ns)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < s->nfreed; i++) {
		rc = push_obs(g, &s->freed[i], false);
		g->freed_samples += s->freed[i].n;
		if ((double)s->freed[i].t_hi <= short_ns) {
			g->short_bytes += s->freed[i].bytes;
			g->short_var += s->freed[i].bytes_var;
		}
	}
	for (size_t i = 0; rc == 0 && i < s->nlive; i++) {
		rc = push_obs(g, &s->live[i], true);
		g->live_samples += s->live[i].n;
	}
	return rc;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

/* The group of name (made when new). */
static group *group_of(group **gs, size_t *ng, size_t *cap, const hv_site *site)
{
	for (size_t i = 0; i < *ng; i++)
		if (!strcmp((*gs)[i].name, site->name))
			return &(*gs)[i];
	if (*ng == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		group *n = realloc(*gs, nc * sizeof *n);
		if (!n)
			return NULL;
		*gs = n;
		*cap = nc;
	}
	group *g = &(*gs)[(*ng)++];
	memset(g, 0, sizeof *g);
	g->name = dup_or_empty(site->name);
	g->function = dup_or_empty(site->function);
	g->file = dup_or_empty(site->file);
	g->line = site->line;
	return g->name && g->function && g->file ? g : NULL;
}

/* Name each marked sample of view with the heap view's rule (one sample
 * at a time) and add its bins to its group. */
static int group_sites(const ap_profile *view, const ap_lifetimes *lt,
		       const hv_options *o, double short_ns, group **gs, size_t *ng,
		       char *err, size_t errlen)
{
	size_t cap = 0;
	hv_options one = *o;
	one.view = HV_ALLOC;
	one.size_min = 0;
	one.size_max = UINT64_MAX;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < view->nsamples; i++) {
		int64_t m = mark_of(view, &view->samples[i]);
		if (m < 1 || (uint64_t)m > lt->nsites)
			continue;
		ap_profile single = *view;
		single.samples = &view->samples[i];
		single.nsamples = 1;
		hv_view *v;
		rc = hv_build(&single, &one, &v, err, errlen);
		if (rc)
			break;
		if (hv_nsites(v) > 0) {
			group *g = group_of(gs, ng, &cap, hv_site_at(v, 0));
			rc = g ? add_bins(g, &lt->sites[m - 1], short_ns) : AP_ENOMEM;
		}
		hv_destroy(v);
	}
	return rc;
}

static int cmp_rows(const void *a, const void *b)
{
	const tv_life_row *x = a, *y = b;
	if (x->short_rate.estimate != y->short_rate.estimate)
		return x->short_rate.estimate > y->short_rate.estimate ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * The data hold lifetimes to their bin: a quantile at a bin's middle may
 * be anywhere in the bin. Widen the interval to the bins' edges: lo to
 * the lowest edge of the bins whose middle is lo, hi to the highest edge
 * of those whose middle is hi.
 */
static void widen(const group *g, size_t n, ap_life_quantile *q)
{
	double lo = q->lo, hi = q->hi;
	for (size_t i = 0; i < n; i++) {
		if (g->obs[i].lifetime_ns == q->lo && (double)g->edge[i][0] < lo)
			lo = (double)g->edge[i][0];
		if (g->obs[i].lifetime_ns == q->hi && (double)g->edge[i][1] > hi)
			hi = (double)g->edge[i][1];
	}
	q->lo = lo;
	q->hi = hi;
}

static void widen_all(const group *g, size_t n, ap_life_summary *s)
{
	widen(g, n, &s->q25);
	widen(g, n, &s->median);
	widen(g, n, &s->q75);
}

/* KM of each group into rows. */
static int finish_rows(tv_lifetimes *t, group *gs, size_t ng, double level)
{
	t->rows = calloc(ng ? ng : 1, sizeof *t->rows);
	t->strings = calloc(3 * ng + 1, sizeof *t->strings);
	if (!t->rows || !t->strings)
		return AP_ENOMEM;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ng; i++) {
		group *g = &gs[i];
		tv_life_row *r = &t->rows[t->n++];
		r->name = t->strings[t->nstrings++] = g->name;
		r->function = t->strings[t->nstrings++] = g->function;
		r->file = t->strings[t->nstrings++] = g->file;
		g->name = g->function = g->file = NULL;
		r->line = g->line;
		r->freed_samples = g->freed_samples;
		r->live_samples = g->live_samples;
		rc = ap_life_km_binned(g->obs, g->w2, g->n, level, NULL, &r->km);
		widen_all(g, g->n, &r->km);
		/* freed-only: the same observations without the censored ones */
		size_t k = 0;
		for (size_t j = 0; rc == 0 && j < g->n; j++)
			if (!g->obs[j].censored) {
				g->obs[k] = g->obs[j];
				g->edge[k][0] = g->edge[j][0];
				g->edge[k][1] = g->edge[j][1];
				g->w2[k++] = g->w2[j];
			}
		if (rc == 0)
			rc = ap_life_km_binned(g->obs, g->w2, k, level, NULL, &r->freed_only);
		widen_all(g, k, &r->freed_only);
		if (rc == 0)
			rc = ap_ht_interval(g->short_bytes / t->seconds,
					    g->short_var / (t->seconds * t->seconds), level,
					    &r->short_rate);
	}
	qsort(t->rows, t->n, sizeof *t->rows, cmp_rows);
	return rc;
}

static void free_groups(group *gs, size_t ng)
{
	for (size_t i = 0; i < ng; i++) {
		free(gs[i].name);
		free(gs[i].function);
		free(gs[i].file);
		free(gs[i].obs);
		free(gs[i].w2);
		free(gs[i].edge);
	}
	free(gs);
}

/* Add a marked sample per lifetimes site to p. */
static int mark_sites(ap_profile *p, const ap_lifetimes *lt)
{
	uint64_t **ids = NULL;
	int rc = tv_stack_locations(p, lt->stacks, lt->nstacks, &ids);
	ap_heap_sums one, none;
	memset(&one, 0, sizeof one);
	memset(&none, 0, sizeof none);
	one.objects = one.space = 1;
	one.samples = 1;
	for (size_t i = 0; rc == 0 && i < lt->nsites; i++)
		rc = tv_add_marked(p, ids, lt->stacks, lt->sites[i].stack, lt->sites[i].rate,
				&one, &none, (int64_t)i + 1);
	if (ids)
		free(ids[0]);
	free(ids);
	return rc;
}

int tv_lifetimes_open(const char *const *paths, size_t n, const hv_options *o,
		      double short_ns, tv_lifetimes **out, char *err, size_t errlen)
{
	ap_profile *p, *sp = NULL, *view = NULL;
	const ap_profile_ext *ext;
	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	int rc = load_with_ext(paths, n, AP_LIFETIMES_EXT, &p, &ext, err, errlen);
	if (rc)
		return rc;
	ap_lifetimes *lt = NULL;
	char why[200] = "";
	rc = ap_lifetimes_decode(ext->data, ext->len, NULL, &lt, why, sizeof why);
	if (rc) {
		ap_cli_seterr(err, errlen, "%s: the lifetimes extension is unreadable: %s",
			      paths[0], why);
		ap_profile_destroy(p);
		return rc == AP_ENOMEM ? rc : AP_ECORRUPT;
	}
	rc = mark_sites(p, lt);
	if (rc) {
		ap_cli_seterr(err, errlen, "%s: %s", paths[0], ap_strerror(rc));
		ap_profile_destroy(p);
	} else {
		rc = symbolize_into(p, o->symbolize, &sp, err, errlen);
	}
	if (rc == 0)
		rc = keep_marked(sp, &view);
	tv_lifetimes *t = calloc(1, sizeof *t);
	group *gs = NULL;
	size_t ng = 0;
	if (rc == 0 && !t)
		rc = AP_ENOMEM;
	if (rc == 0) {
		t->seconds = lt->t_ns > 0 ? (double)lt->t_ns * 1e-9 : 1e-9;
		rc = group_sites(view, lt, o, short_ns, &gs, &ng, err, errlen);
	}
	if (rc == 0)
		rc = finish_rows(t, gs, ng, o->level);
	free_groups(gs, ng);
	tv_profile_free(view);
	ap_lifetimes_free(lt);
	if (rc) {
		if (err && errlen && !err[0])
			ap_cli_seterr(err, errlen, "%s: %s", paths[0], ap_strerror(rc));
		tv_lifetimes_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

size_t tv_lifetimes_count(const tv_lifetimes *t) { return t->n; }
const tv_life_row *tv_lifetimes_row(const tv_lifetimes *t, size_t i) { return &t->rows[i]; }
double tv_lifetimes_seconds(const tv_lifetimes *t) { return t->seconds; }

void tv_lifetimes_free(tv_lifetimes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->rows);
	free(t);
}
