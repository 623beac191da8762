/*
 * profmerge.c: the profile merge of profmerge.h, with its histogram
 * comments.
 *
 * Merging is unbias-then-sum ([R1], "aggregation must be done after
 * unbiasing samples"): the values in each profile are already unbiased and
 * additive (HT estimates, sample counts, sums of u, variance estimates), so
 * identical samples simply add. A sample drawn at a rate other than the
 * output's period carries a "rate" label so the per-rate NB groups, and so
 * the intervals, stay valid. Addresses are per process (ASLR), so mappings
 * are only shared when every field matches.
 */
#define _GNU_SOURCE
#include "profmerge.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/codec.h"
#include "allocprof/hist.h"
#include "cli_util.h"
#include "keymap.h"

/* A growable byte buffer for composite keys. */
struct kb {
	unsigned char *b;
	size_t n, cap;
	bool oom;
};

static void kb_put(struct kb *k, const void *p, size_t n)
{
	if (k->n + n > k->cap) {
		size_t c = k->cap ? k->cap : 256;
		while (c < k->n + n)
			c *= 2;
		unsigned char *nb = realloc(k->b, c);
		if (!nb) {
			k->oom = true;
			return;
		}
		k->b = nb;
		k->cap = c;
	}
	memcpy(k->b + k->n, p, n);
	k->n += n;
}

static void kb_u64(struct kb *k, uint64_t v) { kb_put(k, &v, sizeof v); }
static void kb_str(struct kb *k, const char *s) { kb_put(k, s, strlen(s) + 1); }

/* A histogram comment being merged. */
struct mhist {
	char *name;
	ap_hist *h;
};

/* A merged sample being accumulated. */
struct msample {
	uint64_t *locs;
	size_t nlocs;
	ap_label *labels;
	size_t nlabels;
	int64_t *values;
};

struct merger {
	ap_profile *out;
	const hv_rewrite *rw;
	hv_keymap *maps, *funcs, *locs, *samples, *comments;
	struct msample *ms;
	size_t nms, capms;
	struct mhist *hists; /* histograms by name, merged */
	size_t nhists;
	size_t nvals;
	int64_t k_rate, u_bytes;
	size_t nin; /* inputs: more than one means no single process */
	bool negate; /* the input being merged is subtracted (a delta) */
	struct kb k;
	char *err;
	size_t errlen;
};

static int64_t str_in(struct merger *m, const ap_profile *in, int64_t i)
{
	return ap_profile_intern(m->out, ap_profile_string(in, i));
}

/* Get-or-add through a keymap; adds with add() when the key is new. */
#define KEY_OK(m) (!(m)->k.oom)

static int merge_mapping(struct merger *m, const ap_profile *in,
			 const ap_mapping *mp, uint64_t *id)
{
	struct kb *k = &m->k;
	ap_mapping c = *mp;
	if (m->rw && m->rw->mapping)
		m->rw->mapping(m->rw->ctx, in, &c);
	k->n = 0;
	kb_u64(k, mp->memory_start);
	kb_u64(k, mp->memory_limit);
	kb_u64(k, mp->file_offset);
	kb_str(k, ap_profile_string(in, mp->filename));
	kb_str(k, ap_profile_string(in, mp->build_id));
	kb_u64(k, (uint64_t)c.has_functions | (uint64_t)c.has_filenames << 1 |
			  (uint64_t)c.has_line_numbers << 2 |
			  (uint64_t)c.has_inline_frames << 3);
	if (!KEY_OK(m))
		return AP_ENOMEM;
	size_t v = hv_keymap_get(m->maps, k->b, k->n);
	if (v != SIZE_MAX) {
		*id = v;
		return 0;
	}
	c.id = 0;
	c.filename = str_in(m, in, mp->filename);
	c.build_id = str_in(m, in, mp->build_id);
	if (c.filename < 0 || c.build_id < 0)
		return AP_ENOMEM;
	int rc = ap_profile_add_mapping(m->out, &c, id);
	return rc ? rc : hv_keymap_put(m->maps, k->b, k->n, *id);
}

static int merge_function(struct merger *m, const char *name,
			  const char *sysname, const char *file,
			  int64_t start_line, uint64_t *id)
{
	struct kb *k = &m->k;
	k->n = 0;
	kb_str(k, name);
	kb_str(k, sysname);
	kb_str(k, file);
	kb_u64(k, (uint64_t)start_line);
	if (!KEY_OK(m))
		return AP_ENOMEM;
	size_t v = hv_keymap_get(m->funcs, k->b, k->n);
	if (v != SIZE_MAX) {
		*id = v;
		return 0;
	}
	ap_function c = {0, ap_profile_intern(m->out, name),
			 ap_profile_intern(m->out, sysname),
			 ap_profile_intern(m->out, file), start_line};
	if (c.name < 0 || c.system_name < 0 || c.filename < 0)
		return AP_ENOMEM;
	int rc = ap_profile_add_function(m->out, &c, id);
	return rc ? rc : hv_keymap_put(m->funcs, k->b, k->n, *id);
}

/* The lines of l in the output's function ids (rewritten when asked). */
static int merge_lines(struct merger *m, const ap_profile *in,
		       const ap_location *l, ap_line **lp, size_t *n)
{
	const hv_sym_line *sl = NULL;
	size_t ns = 0;
	int rc = 0;
	if (m->rw && m->rw->location &&
	    (rc = m->rw->location(m->rw->ctx, in, l, &sl, &ns)))
		return rc;
	*n = sl ? ns : l->nlines;
	*lp = malloc((*n + 1) * sizeof **lp);
	if (!*lp)
		return AP_ENOMEM;
	for (size_t i = 0; !rc && i < *n; i++) {
		if (sl) {
			(*lp)[i] = (ap_line){0, sl[i].line, sl[i].column};
			rc = merge_function(m, sl[i].name, sl[i].system_name,
					    sl[i].file, 0, &(*lp)[i].function_id);
			continue;
		}
		const ap_function *f = ap_profile_function(in, l->lines[i].function_id);
		(*lp)[i] = l->lines[i];
		rc = f ? merge_function(m, ap_profile_string(in, f->name),
					ap_profile_string(in, f->system_name),
					ap_profile_string(in, f->filename),
					f->start_line, &(*lp)[i].function_id)
		       : AP_ECORRUPT;
	}
	return rc;
}

static int merge_location(struct merger *m, const ap_profile *in,
			  const ap_location *l, uint64_t *id)
{
	uint64_t mid = 0;
	ap_line *lp = NULL;
	size_t nl = 0;
	int rc = 0;
	if (l->mapping_id) {
		const ap_mapping *mp = ap_profile_mapping(in, l->mapping_id);
		rc = mp ? merge_mapping(m, in, mp, &mid) : AP_ECORRUPT;
	}
	if (!rc)
		rc = merge_lines(m, in, l, &lp, &nl);
	struct kb *k = &m->k;
	k->n = 0;
	kb_u64(k, mid);
	kb_u64(k, l->address);
	kb_u64(k, l->is_folded);
	for (size_t i = 0; !rc && i < nl; i++) {
		kb_u64(k, lp[i].function_id);
		kb_u64(k, (uint64_t)lp[i].line);
		kb_u64(k, (uint64_t)lp[i].column);
	}
	if (!rc && !KEY_OK(m))
		rc = AP_ENOMEM;
	size_t v = rc ? SIZE_MAX : hv_keymap_get(m->locs, k->b, k->n);
	if (!rc && v != SIZE_MAX) {
		*id = v;
	} else if (!rc) {
		ap_location c = *l;
		c.id = 0;
		c.mapping_id = mid;
		c.lines = lp;
		c.nlines = nl;
		rc = ap_profile_add_location(m->out, &c, id);
		if (!rc)
			rc = hv_keymap_put(m->locs, k->b, k->n, *id);
	}
	free(lp);
	return rc;
}

/* ---- histogram comments ---------------------------------------------- */

/* Sum every histogram of in (extensions and comments) into m->hists, one
 * per name; a malformed one is dropped. */
static int merge_hists(struct merger *m, const ap_profile *in)
{
	size_t cur = 0;
	char *name;
	ap_hist_snap *snap;
	int rc;
	while ((rc = ap_profile_hist_next(in, &cur, NULL, &name, &snap)) != AP_ENOTFOUND) {
		if (rc == AP_ECORRUPT)
			continue;
		if (rc)
			return rc;
		size_t i = 0;
		while (i < m->nhists && strcmp(m->hists[i].name, name))
			i++;
		if (i == m->nhists) {
			struct mhist *nh = realloc(m->hists, (i + 1) * sizeof *nh);
			rc = nh ? 0 : AP_ENOMEM;
			if (nh)
				m->hists = nh;
			if (!rc)
				rc = ap_hist_create(&m->hists[i].h,
						    ap_hist_snap_sigbits(snap), NULL);
			if (!rc) {
				m->hists[i].name = name;
				name = NULL;
				m->nhists++;
			}
		}
		if (!rc)
			rc = ap_hist_merge(m->hists[i].h, snap);
		free(name);
		ap_hist_snap_destroy(snap);
		if (rc)
			return rc;
	}
	return 0;
}

/* Write the merged histograms as extensions (ap_profile_hist_add). */
static int emit_hists(struct merger *m)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < m->nhists; i++) {
		ap_hist_snap *snap = NULL;
		rc = ap_hist_snapshot(m->hists[i].h, NULL, &snap);
		if (!rc)
			rc = ap_profile_hist_add(m->out, m->hists[i].name, snap);
		ap_hist_snap_destroy(snap);
	}
	return rc;
}

static void free_hists(struct merger *m)
{
	for (size_t i = 0; i < m->nhists; i++) {
		free(m->hists[i].name);
		ap_hist_destroy(m->hists[i].h);
	}
	free(m->hists);
}

/* Labels of s in the output's strings, "rate" normalised (see top). */
static int merge_labels(struct merger *m, const ap_profile *in,
			const ap_sample *s, ap_label *out, size_t *n)
{
	int64_t rate = in->period > 0 ? in->period : 0;
	*n = 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const ap_label *l = &s->labels[i];
		if (!strcmp(ap_profile_string(in, l->key), "rate") && !l->str) {
			rate = l->num;
			continue;
		}
		ap_label c = *l;
		c.key = str_in(m, in, l->key);
		c.str = str_in(m, in, l->str);
		c.num_unit = str_in(m, in, l->num_unit);
		if (c.key < 0 || c.str < 0 || c.num_unit < 0)
			return AP_ENOMEM;
		out[(*n)++] = c;
	}
	if (rate > 0 && rate != m->out->period)
		out[(*n)++] = (ap_label){m->k_rate, 0, rate, m->u_bytes};
	return 0;
}

static int merge_sample(struct merger *m, const ap_profile *in,
			const ap_sample *s, const uint64_t *locmap,
			const int *typemap)
{
	ap_label *labels = malloc((s->nlabels + 1) * sizeof *labels);
	uint64_t *locs = malloc((s->nlocations + 1) * sizeof *locs);
	size_t nl;
	int rc = labels && locs ? 0 : AP_ENOMEM;
	if (!rc)
		rc = merge_labels(m, in, s, labels, &nl);
	struct kb *k = &m->k;
	k->n = 0;
	for (size_t i = 0; !rc && i < s->nlocations; i++) {
		const ap_location *l = ap_profile_location(in, s->location_ids[i]);
		locs[i] = locmap[l - in->locations];
		kb_u64(k, locs[i]);
	}
	kb_u64(k, 0); /* separator: location ids are nonzero */
	for (size_t i = 0; !rc && i < nl; i++)
		kb_put(k, &labels[i], sizeof labels[i]);
	if (!rc && !KEY_OK(m))
		rc = AP_ENOMEM;
	size_t v = rc ? 0 : hv_keymap_get(m->samples, k->b, k->n);
	if (!rc && v == SIZE_MAX) {
		if (m->nms == m->capms) {
			size_t c = m->capms ? 2 * m->capms : 256;
			struct msample *nm = realloc(m->ms, c * sizeof *nm);
			if (!nm) {
				rc = AP_ENOMEM;
				goto out;
			}
			m->ms = nm;
			m->capms = c;
		}
		struct msample *ms = &m->ms[m->nms];
		ms->values = calloc(m->nvals ? m->nvals : 1, sizeof *ms->values);
		if (!ms->values || hv_keymap_put(m->samples, k->b, k->n, m->nms)) {
			free(ms->values);
			rc = AP_ENOMEM;
			goto out;
		}
		ms->locs = locs;
		ms->nlocs = s->nlocations;
		ms->labels = labels;
		ms->nlabels = nl;
		locs = NULL;
		labels = NULL;
		v = m->nms++;
	}
	for (size_t i = 0; !rc && i < m->nvals; i++) {
		int64_t *dst = &m->ms[v].values[typemap[i]];
		if (m->negate ? __builtin_sub_overflow(*dst, s->values[i], dst)
			      : __builtin_add_overflow(*dst, s->values[i], dst)) {
			ap_cli_seterr(m->err, m->errlen, "sample values overflow 64 bits");
			rc = AP_ERANGE;
		}
	}
out:
	free(labels);
	free(locs);
	return rc;
}

static int copy_header(struct merger *m, const ap_profile *first)
{
	ap_profile *o = m->out;
	for (size_t i = 0; i < first->nsample_types; i++)
		if (ap_profile_add_sample_type(
			    o, ap_profile_string(first, first->sample_types[i].type),
			    ap_profile_string(first, first->sample_types[i].unit)) < 0)
			return AP_ENOMEM;
	o->period = first->period;
	o->period_type.type = str_in(m, first, first->period_type.type);
	o->period_type.unit = str_in(m, first, first->period_type.unit);
	o->default_sample_type = str_in(m, first, first->default_sample_type);
	o->keep_frames = str_in(m, first, first->keep_frames);
	o->doc_url = str_in(m, first, first->doc_url);
	o->time_nanos = first->time_nanos;
	o->duration_nanos = first->duration_nanos;
	m->k_rate = ap_profile_intern(o, "rate");
	m->u_bytes = ap_profile_intern(o, "bytes");
	m->nvals = first->nsample_types;
	/* Every profile allocprof writes: pprof puts the bytes on the caller
	 * of malloc/operator new, whatever the inputs carried. */
	if (ap_profile_drop_alloc_frames(o) != 0)
		return AP_ENOMEM;
	if (o->period_type.type < 0 || o->period_type.unit < 0 ||
	    o->default_sample_type < 0 ||
	    o->keep_frames < 0 || o->doc_url < 0 || m->k_rate < 0 || m->u_bytes < 0)
		return AP_ENOMEM;
	return 0;
}

/* typemap[i] = output index of in's sample type i; AP_EINVAL on mismatch. */
static int map_types(struct merger *m, const ap_profile *in, size_t which,
		     int *typemap)
{
	const ap_profile *o = m->out;
	if (in->nsample_types != o->nsample_types)
		goto differ;
	for (size_t i = 0; i < in->nsample_types; i++) {
		const char *t = ap_profile_string(in, in->sample_types[i].type);
		int j = ap_profile_find_sample_type(o, t);
		if (j < 0 || strcmp(ap_profile_string(in, in->sample_types[i].unit),
				    ap_profile_string(o, o->sample_types[j].unit)))
			goto differ;
		typemap[i] = j;
	}
	return 0;
differ:
	ap_cli_seterr(m->err, m->errlen,
	       "profile %zu has different sample types from the first; only "
	       "profiles of the same kind can be merged", which + 1);
	return AP_EINVAL;
}

static int merge_one(struct merger *m, const ap_profile *in, size_t which)
{
	int *typemap = malloc((in->nsample_types + 1) * sizeof *typemap);
	uint64_t *locmap = malloc((in->nlocations + 1) * sizeof *locmap);
	int rc = typemap && locmap ? map_types(m, in, which, typemap) : AP_ENOMEM;
	for (size_t i = 0; !rc && i < in->nlocations; i++)
		rc = merge_location(m, in, &in->locations[i], &locmap[i]);
	for (size_t i = 0; !rc && i < in->nsamples; i++)
		rc = merge_sample(m, in, &in->samples[i], locmap, typemap);
	if (!rc)
		rc = merge_hists(m, in);
	size_t hplen = strlen(AP_COMMENT_HIST_PREFIX);
	for (size_t i = 0; !rc && i < in->ncomments; i++) {
		const char *c = ap_profile_string(in, in->comments[i]);
		/* histograms: summed above, written once as extensions */
		if (!strncmp(c, AP_COMMENT_HIST_PREFIX, hplen))
			continue;
		if (hv_keymap_get(m->comments, c, strlen(c)) != SIZE_MAX)
			continue;
		/* a merge of several dumps is no one process's dump */
		if (m->nin > 1 && !strncmp(c, AP_COMMENT_PROCESS_PREFIX,
					   strlen(AP_COMMENT_PROCESS_PREFIX)))
			continue;
		rc = hv_keymap_put(m->comments, c, strlen(c), i);
		if (!rc)
			rc = ap_profile_add_comment(m->out, c);
	}
	/* Extensions are carried as they are, one per input: their readers
	 * know a merged profile may hold one of each per process. Histograms
	 * excepted: summed into one per name (merge_hists). */
	size_t xplen = strlen(AP_PROFILE_HIST_EXT_PREFIX);
	for (size_t i = 0; !rc && i < in->nexts; i++)
		if (strncmp(in->exts[i].name, AP_PROFILE_HIST_EXT_PREFIX, xplen))
			rc = ap_profile_ext_add(m->out, in->exts[i].name,
						in->exts[i].data, in->exts[i].len);
	if (!rc && in->time_nanos > 0) {
		/* the merged window spans every input's window */
		int64_t s0 = m->out->time_nanos, e0 = s0 + m->out->duration_nanos;
		int64_t s1 = in->time_nanos, e1 = s1 + in->duration_nanos;
		if (s0 <= 0 || s1 < s0)
			s0 = s1;
		if (e1 > e0)
			e0 = e1;
		m->out->time_nanos = s0;
		m->out->duration_nanos = e0 - s0;
	}
	free(typemap);
	free(locmap);
	return rc;
}

int hv_profile_merge(ap_profile *const *in, size_t n, ap_profile **out,
		     char *err, size_t errlen)
{
	return hv_profile_merge_ex(in, n, NULL, out, err, errlen);
}

static int merge_run(ap_profile *const *in, size_t n, const hv_rewrite *rw,
		     bool delta, ap_profile **out, char *err, size_t errlen);

int hv_profile_merge_ex(ap_profile *const *in, size_t n, const hv_rewrite *rw,
			ap_profile **out, char *err, size_t errlen)
{
	return merge_run(in, n, rw, false, out, err, errlen);
}

int hv_profile_subtract(ap_profile *nw, ap_profile *base, ap_profile **out,
			char *err, size_t errlen)
{
	ap_profile *in[2] = {nw, base};
	return merge_run(in, 2, NULL, true, out, err, errlen);
}

static int merge_run(ap_profile *const *in, size_t n, const hv_rewrite *rw,
		     bool delta, ap_profile **out, char *err, size_t errlen)
{
	struct merger m = {.err = err, .errlen = errlen, .rw = rw, .nin = n};
	int rc;
	*out = NULL;
	if (n == 0) {
		ap_cli_seterr(err, errlen, "no profiles to merge");
		return AP_EINVAL;
	}
	if (err && errlen)
		err[0] = 0;
	m.maps = hv_keymap_new();
	m.funcs = hv_keymap_new();
	m.locs = hv_keymap_new();
	m.samples = hv_keymap_new();
	m.comments = hv_keymap_new();
	rc = m.maps && m.funcs && m.locs && m.samples && m.comments
		     ? ap_profile_create(NULL, &m.out)
		     : AP_ENOMEM;
	if (!rc)
		rc = copy_header(&m, in[0]);
	for (size_t i = 0; !rc && i < n; i++) {
		m.negate = delta && i > 0;
		rc = merge_one(&m, in[i], i);
	}
	if (!rc)
		rc = emit_hists(&m);
	for (size_t i = 0; !rc && i < m.nms; i++)
		rc = ap_profile_add_sample(m.out, m.ms[i].locs, m.ms[i].nlocs,
					   m.ms[i].values, m.ms[i].labels,
					   m.ms[i].nlabels);
	for (size_t i = 0; i < m.nms; i++) {
		free(m.ms[i].locs);
		free(m.ms[i].labels);
		free(m.ms[i].values);
	}
	free(m.ms);
	free(m.k.b);
	free_hists(&m);
	hv_keymap_free(m.maps);
	hv_keymap_free(m.funcs);
	hv_keymap_free(m.locs);
	hv_keymap_free(m.samples);
	hv_keymap_free(m.comments);
	if (rc) {
		if (err && errlen && !err[0])
			ap_cli_seterr(err, errlen, "merge failed: %s", ap_strerror(rc));
		ap_profile_destroy(m.out);
		return rc;
	}
	*out = m.out;
	return 0;
}

