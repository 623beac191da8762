/*
 * tuneprof.c: size classes and per-stack cells of training profiles, and
 * the per-site rate search of `allocprof tune --advise` (tuneprof.h).
 */
#include "tuneprof.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist.h"
#include "allocprof/profile.h"
#include "allocprof/sampler.h"
#include "cli_util.h"
#include "framename.h"
#include "keymap.h"
#include "profload.h"

struct tp_priv {
	hv_strpool names;
};

struct build {
	const ap_profile *p;
	int ao, as, io, is; /* sample type indices */
	int64_t k_bytes;    /* "bytes" label key, -1 when absent */
	tp_class *bykey;    /* classes indexed by size key while building */
	hv_keymap *sites, *cells;
	tp_data *d;
	size_t cap_cells, cap_sites;
};

static void *grow(void *a, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return a;
	size_t c = *cap ? *cap * 2 : 64;
	void *b = realloc(a, c * elem);
	if (b)
		*cap = c;
	return b;
}

/* The sample's requested size: its "bytes" label, else value / count. */
static uint64_t sample_size(const struct build *b, const ap_sample *s)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (s->labels[i].key == b->k_bytes && s->labels[i].num > 0)
			return (uint64_t)s->labels[i].num;
	if (s->values[b->ao] > 0)
		return (uint64_t)((double)s->values[b->as] / (double)s->values[b->ao] + 0.5);
	if (s->values[b->io] > 0)
		return (uint64_t)((double)s->values[b->is] / (double)s->values[b->io] + 0.5);
	return 0;
}

/* Name of a stack: its first function outside the allocator and the C++
 * runtime, else the leaf address. */
static const char *site_name(struct build *b, const ap_sample *s)
{
	struct tp_priv *pv = b->d->priv;
	char buf[32];
	for (size_t i = 0; i < s->nlocations; i++) {
		const ap_location *l = ap_profile_location(b->p, s->location_ids[i]);
		for (size_t j = 0; l && j < l->nlines; j++) {
			const ap_function *f = ap_profile_function(b->p, l->lines[j].function_id);
			const char *n = f ? ap_profile_string(b->p, f->name) : NULL;
			if (n && *n && !fn_is_alloc_entry(n) && !fn_is_std_frame(n))
				return hv_strpool_get(&pv->names, n);
		}
	}
	const ap_location *l = s->nlocations ? ap_profile_location(b->p, s->location_ids[0]) : NULL;
	snprintf(buf, sizeof buf, "0x%" PRIx64, l ? l->address : 0);
	return hv_strpool_get(&pv->names, buf);
}

static size_t site_index(struct build *b, const ap_sample *s)
{
	size_t len = s->nlocations * sizeof *s->location_ids;
	size_t i = hv_keymap_get(b->sites, s->location_ids, len);
	tp_data *d = b->d;
	if (i != SIZE_MAX)
		return i;
	d->sites = grow(d->sites, &b->cap_sites, d->nsites, sizeof *d->sites);
	if (!d->sites || hv_keymap_put(b->sites, s->location_ids, len, d->nsites))
		return SIZE_MAX;
	d->sites[d->nsites] = (tp_site){site_name(b, s), 0, 0};
	return d->nsites++;
}

static int add_sample(struct build *b, const ap_sample *s)
{
	tp_data *d = b->d;
	uint64_t z = sample_size(b, s);
	double ao = (double)s->values[b->ao], io = (double)s->values[b->io];
	if (z == 0 || (ao <= 0 && io <= 0))
		return 0;
	if (ao < io) /* a fork child's inherited blocks: live, not allocated here */
		ao = io;
	size_t ci = ap_hist_value_to_key(TP_SIGBITS, z), si = site_index(b, s);
	if (si == SIZE_MAX)
		return AP_ENOMEM;
	size_t key[2] = {si, ci};
	size_t k = hv_keymap_get(b->cells, key, sizeof key);
	if (k == SIZE_MAX) {
		d->cells = grow(d->cells, &b->cap_cells, d->ncells, sizeof *d->cells);
		if (!d->cells || hv_keymap_put(b->cells, key, sizeof key, d->ncells))
			return AP_ENOMEM;
		k = d->ncells++;
		d->cells[k] = (tp_cell){si, ci, 0, 0};
	}
	d->cells[k].allocs += ao;
	d->cells[k].live += io;
	b->bykey[ci].c.allocs += ao;
	b->bykey[ci].c.live += io;
	b->bykey[ci].bytes += ao * (double)z;
	d->sites[si].alloc_bytes += ao * (double)z;
	d->sites[si].inuse_bytes += io * (double)z;
	return 0;
}

/* The classes that occurred, by increasing size; cells then name them by
 * index instead of key. */
static int finish_classes(struct build *b)
{
	tp_data *d = b->d;
	uint32_t nkeys = ap_hist_key_count(TP_SIGBITS);
	size_t *to = malloc(nkeys * sizeof *to);
	d->cls = malloc(nkeys * sizeof *d->cls);
	if (!to || !d->cls) {
		free(to);
		return AP_ENOMEM;
	}
	for (uint32_t k = 0; k < nkeys; k++) {
		tp_class *c = &b->bykey[k];
		if (c->c.allocs <= 0 && c->c.live <= 0)
			continue;
		ap_hist_key_bounds(TP_SIGBITS, k, &c->lo, &c->hi);
		c->c.size = c->c.allocs > 0 ? c->bytes / c->c.allocs
					    : (double)(c->lo + c->hi) / 2;
		to[k] = d->ncls;
		d->cls[d->ncls++] = *c;
	}
	for (size_t i = 0; i < d->ncells; i++)
		d->cells[i].cls = to[d->cells[i].cls];
	free(to);
	return 0;
}

static int build_all(struct build *b, char *err, size_t errlen)
{
	const ap_profile *p = b->p;
	b->ao = ap_profile_find_sample_type(p, AP_ST_ALLOC_OBJECTS);
	b->as = ap_profile_find_sample_type(p, AP_ST_ALLOC_SPACE);
	b->io = ap_profile_find_sample_type(p, AP_ST_INUSE_OBJECTS);
	b->is = ap_profile_find_sample_type(p, AP_ST_INUSE_SPACE);
	if (b->ao < 0 || b->as < 0 || b->io < 0 || b->is < 0) {
		ap_cli_seterr(err, errlen, "not a heap profile with both views "
			      "(alloc_objects, alloc_space, inuse_objects, inuse_space)");
		return AP_ECORRUPT;
	}
	b->k_bytes = -1;
	for (size_t i = 1; i < p->nstrings; i++)
		if (!strcmp(p->strings[i], "bytes"))
			b->k_bytes = (int64_t)i;
	b->bykey = calloc(ap_hist_key_count(TP_SIGBITS), sizeof *b->bykey);
	b->sites = hv_keymap_new();
	b->cells = hv_keymap_new();
	int rc = b->bykey && b->sites && b->cells ? 0 : AP_ENOMEM;
	for (size_t i = 0; rc == 0 && i < p->nsamples; i++)
		rc = add_sample(b, &p->samples[i]);
	if (rc == 0)
		rc = finish_classes(b);
	if (rc == 0 && b->d->ncls == 0) {
		ap_cli_seterr(err, errlen, "the profiles hold no allocation to learn from");
		rc = AP_ECORRUPT;
	} else if (rc) {
		ap_cli_seterr(err, errlen, "out of memory");
	}
	free(b->bykey);
	hv_keymap_free(b->sites);
	hv_keymap_free(b->cells);
	return rc;
}

int tp_load(const char *const *paths, size_t n, bool symbolize, tp_data *out,
	    char *err, size_t errlen)
{
	ap_profile *p = NULL;
	struct tp_priv *pv = calloc(1, sizeof *pv);
	memset(out, 0, sizeof *out);
	if (!pv || hv_strpool_init(&pv->names)) {
		free(pv);
		ap_cli_seterr(err, errlen, "out of memory");
		return AP_ENOMEM;
	}
	out->priv = pv;
	int rc = hv_load_symbolized(paths, n, symbolize, &p, err, errlen);
	if (rc == 0) {
		struct build b = {.p = p, .d = out};
		rc = build_all(&b, err, errlen);
		out->duration_s = p->duration_nanos > 0 ? (double)p->duration_nanos * 1e-9 : 0;
		out->period = p->period > 0 ? (double)p->period : 1;
	}
	ap_profile_destroy(p);
	if (rc)
		tp_free(out);
	return rc;
}

void tp_free(tp_data *d)
{
	struct tp_priv *pv = d->priv;
	if (pv) {
		hv_strpool_free(&pv->names);
		free(pv);
	}
	free(d->cls);
	free(d->cells);
	free(d->sites);
	memset(d, 0, sizeof *d);
}

void tp_site_variance(const tp_data *d, double rate, bool inuse, double *var)
{
	double lq = rate > 1 ? log1p(-1 / rate) : 0;
	for (size_t i = 0; i < d->nsites; i++)
		var[i] = 0;
	for (size_t i = 0; i < d->ncells; i++) {
		const tp_cell *c = &d->cells[i];
		double z = d->cls[c->cls].c.size, n = inuse ? c->live : c->allocs;
		double p = rate > 1 ? -expm1(z * lq) : 1;
		var[c->site] += n * z * z * (1 - p) / p;
	}
}

/* Whether every qualifying site meets the precision at rate r. */
static bool meets(const tp_data *d, double r, bool inuse, double prec, double z,
		  double floor_bytes, double *var, size_t *binding)
{
	double worst = 0;
	bool ok = true;
	tp_site_variance(d, r, inuse, var);
	for (size_t i = 0; i < d->nsites; i++) {
		double t = inuse ? d->sites[i].inuse_bytes : d->sites[i].alloc_bytes;
		if (t <= 0 || t < floor_bytes)
			continue;
		double rel = z * sqrt(var[i]) / t;
		if (rel > prec)
			ok = false;
		if (rel >= worst) {
			worst = rel;
			*binding = i;
		}
	}
	return ok;
}

double tp_advise_rate(const tp_data *d, bool inuse, double precision,
		      double z, double share, size_t *binding, size_t *checked)
{
	double total = 0, lo = 1, hi = (double)AP_SAMPLER_RATE_MAX;
	double *var = malloc((d->nsites + 1) * sizeof *var);
	*binding = SIZE_MAX;
	*checked = 0;
	for (size_t i = 0; i < d->nsites; i++)
		total += inuse ? d->sites[i].inuse_bytes : d->sites[i].alloc_bytes;
	for (size_t i = 0; i < d->nsites; i++) {
		double t = inuse ? d->sites[i].inuse_bytes : d->sites[i].alloc_bytes;
		*checked += t > 0 && t >= share * total;
	}
	if (!var)
		return 1;
	if (*checked == 0 ||
	    meets(d, hi, inuse, precision, z, share * total, var, binding)) {
		free(var);
		return hi;
	}
	for (int it = 0; it < 200 && hi > lo * (1 + 1e-9); it++) {
		double mid = sqrt(lo * hi);
		if (meets(d, mid, inuse, precision, z, share * total, var, binding))
			lo = mid;
		else
			hi = mid;
	}
	meets(d, lo, inuse, precision, z, share * total, var, binding);
	free(var);
	return floor(lo);
}
