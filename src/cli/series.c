/*
 * series.c: the heap of one process over time (series.h). A point is
 * built by the same path as a report of that point (symbolize.h, then
 * heapview.h's view of the in-use heap), so a site here is the report's
 * row; the series only keeps each site's sums and interval per point,
 * sparsely, and the point's total. Loading interval dumps is a second
 * pass: the first reads every file's process identity and time to group
 * and order them without keeping whole profiles in memory.
 */
#define _GNU_SOURCE
#include "series.h"

#include "allocprof/timeline.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "keymap.h"
#include "profload.h"
#include "symmemo.h"
#include "timeview.h"

/* A site's cell at one point (cells of a point sorted by site). */
struct cell {
	size_t site;
	ts_cell c;
};

struct point {
	ts_point p;
	size_t first, n; /* its cells in s->cells */
};

struct ts_series {
	ts_options opt;
	ap_process_id id;
	bool has_id;
	struct point *pts;
	size_t npts, cappts;
	struct cell *cells;
	size_t ncells, capcells;
	ts_site *sites;
	size_t nsites, capsites;
	hv_keymap *sitemap;
	hv_strpool strs;
	sym_memo *memo; /* the points are one process: symbolize once */
};

void ts_options_default(ts_options *o)
{
	memset(o, 0, sizeof *o);
	hv_options_default(&o->hv);
	o->pid = -1;
}

int ts_series_new(const ts_options *o, const ap_process_id *id,
		  ts_series **out)
{
	ts_series *s = calloc(1, sizeof *s);
	*out = NULL;
	if (!s)
		return AP_ENOMEM;
	if (hv_strpool_init(&s->strs) || !(s->sitemap = hv_keymap_new()) ||
	    !(s->memo = sym_memo_new())) {
		ts_series_free(s);
		return AP_ENOMEM;
	}
	s->opt = *o;
	s->opt.hv.view = HV_INUSE;
	s->opt.hv.value = HV_REQUESTED;
	if (id) {
		s->id = *id;
		s->has_id = true;
	}
	*out = s;
	return 0;
}

void ts_series_free(ts_series *s)
{
	if (!s)
		return;
	free(s->pts);
	free(s->cells);
	free(s->sites);
	hv_keymap_free(s->sitemap);
	hv_strpool_free(&s->strs);
	sym_memo_free(s->memo);
	free(s);
}

static ts_cell cell_of(const hv_stat *st)
{
	return (ts_cell){{st->bytes, st->var_bytes, st->objects, st->var_objects},
			 st->bytes_lo, st->bytes_hi};
}

/* The index of site (name, function), added on first sight. */
static int site_index(ts_series *s, const hv_site *hs, size_t *idx)
{
	size_t len = strlen(hs->name);
	*idx = hv_keymap_get(s->sitemap, hs->name, len);
	if (*idx != SIZE_MAX)
		return 0;
	if (ap_cli_grow((void **)&s->sites, &s->capsites, s->nsites + 1,
		 sizeof *s->sites))
		return AP_ENOMEM;
	ts_site *site = &s->sites[s->nsites];
	site->name = hv_strpool_get(&s->strs, hs->name);
	site->function = hv_strpool_get(&s->strs, hs->function);
	site->max_bytes = 0;
	if (!site->name || !site->function ||
	    hv_keymap_put(s->sitemap, hs->name, len, s->nsites))
		return AP_ENOMEM;
	*idx = s->nsites++;
	return 0;
}

static int by_site(const void *a, const void *b)
{
	size_t x = ((const struct cell *)a)->site, y = ((const struct cell *)b)->site;
	return (x > y) - (x < y);
}

/* Append the view's sites and total as a point. */
static int add_view(ts_series *s, const hv_view *v, double t_s, uint64_t seq,
		    const char *source)
{
	size_t ns = hv_nsites(v);
	if (ap_cli_grow((void **)&s->pts, &s->cappts, s->npts + 1, sizeof *s->pts) ||
	    ap_cli_grow((void **)&s->cells, &s->capcells, s->ncells + ns,
		 sizeof *s->cells))
		return AP_ENOMEM;
	struct point *pt = &s->pts[s->npts];
	pt->p.t_s = t_s;
	pt->p.seq = seq;
	pt->p.partial = false; /* the ring's loader marks its points after */
	pt->p.source = hv_strpool_get(&s->strs, source ? source : "");
	pt->p.total = cell_of(hv_total(v));
	pt->first = s->ncells;
	pt->n = 0;
	if (!pt->p.source)
		return AP_ENOMEM;
	for (size_t i = 0; i < ns; i++) {
		const hv_site *hs = hv_site_at(v, i);
		size_t j;
		if (site_index(s, hs, &j))
			return AP_ENOMEM;
		struct cell *c = &s->cells[pt->first + pt->n++];
		c->site = j;
		c->c = cell_of(&hs->stat);
		if (c->c.v.bytes > s->sites[j].max_bytes)
			s->sites[j].max_bytes = c->c.v.bytes;
	}
	if (pt->n > 1)
		qsort(s->cells + pt->first, pt->n, sizeof *s->cells, by_site);
	s->ncells += pt->n;
	s->npts++;
	return 0;
}

/* p symbolized through the series' memo; warnings (a missing binary)
 * once, not at every point. */
static int symbolize(ts_series *s, const ap_profile *p, ap_profile **out,
		     char *err, size_t errlen)
{
	sym_options so;
	sym_options_default(&so);
	so.progress = false;
	so.warn = sym_memo_misses(s->memo) == 0;
	return sym_memo_symbolize(s->memo, p, &so, out, err, errlen);
}

int ts_series_add_profile(ts_series *s, const ap_profile *p, double t_s,
			  uint64_t seq, const char *source, char *err,
			  size_t errlen)
{
	if (!isfinite(t_s) ||
	    (s->npts && !(t_s > s->pts[s->npts - 1].p.t_s))) {
		ap_cli_seterr(err, errlen, "point at %.3f s is not after the "
			      "previous one (%.3f s)", t_s,
			      s->npts ? s->pts[s->npts - 1].p.t_s : 0.0);
		return AP_EINVAL;
	}
	ap_profile *sp = NULL;
	int rc = s->opt.hv.symbolize ? symbolize(s, p, &sp, err, errlen) : 0;
	hv_view *v = NULL;
	if (!rc)
		rc = hv_build(sp ? sp : p, &s->opt.hv, &v, err, errlen);
	ap_profile_destroy(sp);
	if (!rc && (rc = add_view(s, v, t_s, seq, source)))
		ap_cli_seterr(err, errlen, "out of memory");
	hv_destroy(v);
	return rc;
}

/* ---- reading ------------------------------------------------------- */

size_t ts_npoints(const ts_series *s) { return s->npts; }
const ts_point *ts_point_at(const ts_series *s, size_t i)
{
	return i < s->npts ? &s->pts[i].p : NULL;
}
size_t ts_nsites(const ts_series *s) { return s->nsites; }
const ts_site *ts_site_at(const ts_series *s, size_t j)
{
	return j < s->nsites ? &s->sites[j] : NULL;
}
const ap_process_id *ts_process(const ts_series *s)
{
	return s->has_id ? &s->id : NULL;
}
const ts_options *ts_series_options(const ts_series *s) { return &s->opt; }

ts_cell ts_cell_at(const ts_series *s, size_t i, size_t j)
{
	ts_cell zero = {{0, 0, 0, 0}, 0, 0};
	if (i >= s->npts || s->pts[i].n == 0)
		return zero;
	const struct cell *c = s->cells + s->pts[i].first;
	size_t lo = 0, hi = s->pts[i].n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c[mid].site < j)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->pts[i].n && c[lo].site == j ? c[lo].c : zero;
}

bool ts_cell_known(const ts_series *s, size_t i, size_t j)
{
	if (i >= s->npts)
		return false;
	if (!s->pts[i].p.partial)
		return true;
	const struct cell *c = s->cells + s->pts[i].first;
	for (size_t k = 0; k < s->pts[i].n; k++)
		if (c[k].site == j)
			return true;
	return false;
}

size_t ts_peak(const ts_series *s)
{
	size_t k = 0;
	for (size_t i = 1; i < s->npts; i++)
		if (s->pts[i].p.total.v.bytes > s->pts[k].p.total.v.bytes)
			k = i;
	return k;
}

/* ---- the runtime's timeline ring ----------------------------------- */

/* The ring's total (listed sites and "other") as a cell, by the report's
 * interval rule (sample_stat's sums for one group at the process rate). */
static ts_cell ring_total(const ap_heap_sums *t, double rate, double level)
{
	hv_stat st;
	memset(&st, 0, sizeof st);
	st.bytes = t->space;
	st.var_bytes = t->space_var;
	st.objects = t->objects;
	st.var_objects = t->objects_var;
	st.var2_bytes = t->space_var2;
	st.var2_objects = t->objects_var2;
	st.samples = t->samples;
	st.exact_samples = t->exact;
	st.rate_max = rate;
	st.u = t->u;
	hv_stat_add_group(&st, rate, t->samples, t->u);
	hv_stat_finish(&st, level);
	return cell_of(&st);
}

/*
 * Append every ring point of tl to s. p (the dump, ours to change) gets
 * one sample per listed site of each point, appended point after point,
 * so point i's samples are a slice: a shallow copy of p with that slice
 * as its samples is point i's heap (the dump's mappings and locations,
 * symbolized once through the memo).
 */
static int add_ring(ts_series *s, ap_profile *p, const ap_timeline *tl,
		    const char *path, char *err, size_t errlen)
{
	uint64_t **ids = NULL;
	size_t *first = calloc(tl->npoints + 1, sizeof *first);
	int rc = first ? tv_stack_locations(p, tl->stacks, tl->nstacks, &ids)
		       : AP_ENOMEM;
	ap_heap_sums none;
	memset(&none, 0, sizeof none);
	for (size_t i = 0; !rc && i < tl->npoints; i++) {
		const ap_tl_point *pt = &tl->points[i];
		first[i] = p->nsamples;
		for (size_t k = 0; !rc && k < pt->nsites; k++)
			rc = tv_add_marked(p, ids, tl->stacks, pt->sites[k].stack,
					   pt->sites[k].rate, &none,
					   &pt->sites[k].inuse, (int64_t)i + 1);
	}
	first[tl->npoints] = p->nsamples;
	if (rc)
		ap_cli_seterr(err, errlen, "%s: cannot rebuild the timeline: %s",
			      path, ap_strerror(rc));
	double rate = (double)(tl->period ? tl->period
				: p->period > 0 ? (uint64_t)p->period : 1);
	/* A filter (--focus, --ignore, a size range) can judge only the
	 * listed sites: the ring's "other" has no stacks or sizes. The total
	 * of a point is then its listed sites that pass (the view's own), and
	 * one line says how much the filter could not see. */
	const hv_options *ho = &s->opt.hv;
	bool filtered = ho->focus || ho->ignore || ho->size_min > 0 ||
			ho->size_max < UINT64_MAX;
	double unseen = 0;
	for (size_t i = 0; !rc && i < tl->npoints; i++) {
		ap_profile view = *p;
		view.samples = p->samples + first[i];
		view.nsamples = first[i + 1] - first[i];
		char why[400];
		rc = ts_series_add_profile(s, &view, (double)tl->points[i].t_ns / 1e9,
					   0, path, why, sizeof why);
		if (rc) {
			ap_cli_seterr(err, errlen, "%s: timeline point %zu: %s",
				      path, i, why);
			break;
		}
		struct point *sp = &s->pts[s->npts - 1];
		sp->p.partial = true;
		if (!filtered)
			sp->p.total = ring_total(&tl->points[i].total, rate,
						 s->opt.hv.level);
		else if (tl->points[i].other.space > unseen)
			unseen = tl->points[i].other.space;
	}
	if (!rc && unseen > 0) {
		char b[32];
		ap_cli_format_bytes(unseen, AP_BYTES_FIXED, b, sizeof b);
		ap_cli_error("the ring's unlisted sites (up to %s at a point) "
			     "cannot be filtered and are left out of the "
			     "totals", b);
	}
	if (ids)
		free(ids[0]);
	free(ids);
	free(first);
	return rc;
}

/*
 * The ring of the dump at path when it has one with at least two points:
 * *used tells. 0 without one (nothing done); errors with one line in err.
 */
static int try_ring(ts_series *s, const char *path, bool *used, char *err,
		    size_t errlen)
{
	ap_profile *p = NULL;
	ap_timeline *tl = NULL;
	*used = false;
	int rc = hv_load_profiles(&path, 1, &p, err, errlen);
	size_t cur = 0;
	const ap_profile_ext *ext =
		rc ? NULL : ap_profile_ext_next(p, AP_TIMELINE_EXT, false, &cur);
	if (ext) {
		char why[200] = "";
		rc = ap_timeline_decode(ext->data, ext->len, NULL, &tl, why,
					sizeof why);
		if (rc)
			ap_cli_seterr(err, errlen, "%s: the timeline extension is "
				      "unreadable: %s", path, why);
	}
	if (!rc && tl && tl->npoints >= 2) {
		*used = true;
		ap_cli_error("using the timeline ring of %s (%zu points every "
			     "%.3g s at the end)", path, tl->npoints,
			     (double)tl->cadence_ns / 1e9);
		rc = add_ring(s, p, tl, path, err, errlen);
	}
	ap_timeline_free(tl);
	ap_profile_destroy(p);
	return rc == AP_ENOMEM || rc == AP_EIO || rc == AP_EINVAL ? rc
	       : rc ? AP_ECORRUPT : 0;
}

/* ---- loading interval dumps ---------------------------------------- */

/* One file: where it is, whose dump and when. */
struct dumpinfo {
	char *path;
	bool in_dir;  /* found in a directory (a non-profile is skipped) */
	bool has_id;
	ap_process_id id;
	int64_t time_ns;
};

struct files {
	struct dumpinfo *d;
	size_t n, cap;
};

static void files_free(struct files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->d[i].path);
	free(f->d);
}

static int add_file(struct files *f, const char *path, bool in_dir)
{
	if (ap_cli_grow((void **)&f->d, &f->cap, f->n + 1, sizeof *f->d))
		return AP_ENOMEM;
	memset(&f->d[f->n], 0, sizeof f->d[f->n]);
	if (!(f->d[f->n].path = strdup(path)))
		return AP_ENOMEM;
	f->d[f->n++].in_dir = in_dir;
	return 0;
}

/* Drop the entries whose path was freed (set to NULL). */
static void compact(struct files *f)
{
	size_t kept = 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->d[i].path)
			f->d[kept++] = f->d[i];
	f->n = kept;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct dumpinfo *)a)->path,
		      ((const struct dumpinfo *)b)->path);
}

/* The regular files of directory dir, in name order. */
static int add_dir(struct files *f, const char *dir, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		ap_cli_seterr(err, errlen, "%s: %s", dir, strerror(errno));
		return AP_EIO;
	}
	size_t first = f->n;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strstr(e->d_name, ".tmp."))
			continue;
		char *path = NULL;
		struct stat st;
		if (asprintf(&path, "%s/%s", dir, e->d_name) < 0)
			rc = AP_ENOMEM;
		else if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			rc = add_file(f, path, true);
		free(path);
	}
	closedir(d);
	if (rc)
		ap_cli_seterr(err, errlen, "out of memory");
	if (f->n > first) /* an empty directory leaves f->d NULL */
		qsort(f->d + first, f->n - first, sizeof *f->d, by_path);
	return rc;
}

static int expand(const char *const *paths, size_t n, struct files *f,
		  char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int rc;
		if (!strcmp(paths[i], "-")) {
			/* every dump is read twice (identity, then point) */
			ap_cli_seterr(err, errlen, "a series is read from files "
				      "or directories, not standard input");
			return AP_EINVAL;
		}
		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			rc = add_dir(f, paths[i], err, errlen);
		else if ((rc = add_file(f, paths[i], false)))
			ap_cli_seterr(err, errlen, "out of memory");
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * First pass: each file's identity and time; files of a directory that
 * are not heap profiles are dropped (and counted).
 */
static int identify(struct files *f, size_t *skipped, char *err, size_t errlen)
{
	*skipped = 0;
	for (size_t i = 0; i < f->n; i++) {
		struct dumpinfo *d = &f->d[i];
		ap_profile *p = NULL;
		const char *path = d->path;
		int rc = hv_load_profiles(&path, 1, &p, err, errlen);
		if (rc == AP_ENOMEM || (rc && !d->in_dir))
			return rc;
		if (rc) {
			free(d->path);
			d->path = NULL;
			(*skipped)++;
			continue;
		}
		d->has_id = ap_profile_get_process(p, &d->id) == 0;
		d->time_ns = p->time_nanos;
		ap_profile_destroy(p);
	}
	compact(f);
	if (*skipped == 1)
		ap_cli_error("1 file in the directories given is not a heap "
			     "profile: skipped");
	else if (*skipped)
		ap_cli_error("%zu files in the directories given are not heap "
			     "profiles: skipped", *skipped);
	return 0;
}

/* Describe the distinct processes of f (pids, up to a few) into buf. */
static size_t list_processes(const struct files *f, char *buf, size_t n)
{
	size_t count = 0, used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < f->n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = ap_process_same(&f->d[i].id, &f->d[j].id);
		if (seen)
			continue;
		if (count < 6 && used < n)
			used += (size_t)snprintf(buf + used, n - used, "%s%lld",
						 count ? ", " : "",
						 (long long)f->d[i].id.pid);
		else if (count == 6 && used < n)
			used += (size_t)snprintf(buf + used, n - used, ", ...");
		count++;
	}
	return count;
}

/*
 * Keep the dumps of one process: o->pid's, or the only one. Files without
 * an identity are only accepted when none has one.
 */
static int select_process(struct files *f, int64_t pid, char *err,
			  size_t errlen)
{
	size_t with = 0;
	for (size_t i = 0; i < f->n; i++)
		with += f->d[i].has_id;
	if (with == 0) {
		if (pid >= 0) {
			ap_cli_seterr(err, errlen, "--pid %lld: the profiles carry "
				      "no process identity", (long long)pid);
			return AP_EINVAL;
		}
		if (f->n > 1)
			ap_cli_error("the profiles carry no process identity: "
				     "taken as dumps of one process, in time order");
		return 0;
	}
	for (size_t i = 0; i < f->n; i++) {
		if (!f->d[i].has_id) {
			ap_cli_seterr(err, errlen, "%s has no process identity "
				      "but the other dumps do: leave it out",
				      f->d[i].path);
			return AP_EINVAL;
		}
	}
	size_t all = f->n;
	for (size_t i = 0; i < f->n; i++) {
		if (pid >= 0 && f->d[i].id.pid != pid) {
			free(f->d[i].path);
			f->d[i].path = NULL;
		}
	}
	compact(f);
	char pids[160];
	size_t nproc = list_processes(f, pids, sizeof pids);
	if (f->n == 0) {
		ap_cli_seterr(err, errlen, "no dump of pid %lld among the %zu "
			      "profiles", (long long)pid, all);
		return AP_EINVAL;
	}
	if (nproc > 1 && pid < 0) {
		ap_cli_seterr(err, errlen, "dumps of %zu processes (pids %s): a "
			      "series is one process; choose one with --pid",
			      nproc, pids);
		return AP_EINVAL;
	}
	if (nproc > 1) {
		ap_cli_seterr(err, errlen, "pid %lld names %zu processes (started "
			      "at different times or on other boots)",
			      (long long)pid, nproc);
		return AP_EINVAL;
	}
	return 0;
}

static int by_seq_time(const void *a, const void *b)
{
	const struct dumpinfo *x = a, *y = b;
	if (x->has_id && x->id.seq != y->id.seq)
		return x->id.seq < y->id.seq ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Order by sequence (time without identity); a dump given twice counts
 * once; times must increase. */
static int order(struct files *f, char *err, size_t errlen)
{
	qsort(f->d, f->n, sizeof *f->d, by_seq_time);
	for (size_t i = 1; i < f->n; i++) {
		struct dumpinfo *d = &f->d[i], *prev = &f->d[i - 1];
		bool same_seq = d->has_id && prev->id.seq == d->id.seq;
		if (prev->time_ns == d->time_ns && (same_seq || !d->has_id))
			continue; /* the same dump again: dropped below */
		if (same_seq) {
			ap_cli_seterr(err, errlen, "%s and %s are both dump %llu "
				      "of pid %lld, at different times",
				      prev->path, d->path,
				      (unsigned long long)d->id.seq,
				      (long long)d->id.pid);
			return AP_ECORRUPT;
		}
		if (d->time_ns <= prev->time_ns) {
			ap_cli_seterr(err, errlen, "times are not increasing: "
				      "dump %llu (%s) was written %.3f s before "
				      "dump %llu (%s)",
				      (unsigned long long)d->id.seq, d->path,
				      (double)(prev->time_ns - d->time_ns) / 1e9,
				      (unsigned long long)prev->id.seq, prev->path);
			return AP_ECORRUPT;
		}
	}
	for (size_t i = f->n; i-- > 1;) {
		if (f->d[i].time_ns == f->d[i - 1].time_ns) {
			free(f->d[i].path);
			f->d[i].path = NULL;
		}
	}
	compact(f);
	return 0;
}

/*
 * Second pass: each dump as a point. The last dump is symbolized first:
 * dumps are cumulative, so its locations are (nearly always) those of
 * every earlier one, which then come from the memo.
 */
static int load_points(ts_series *s, const struct files *f, char *err,
		       size_t errlen)
{
	int64_t origin = f->d[0].has_id ? (int64_t)f->d[0].id.start_ns
					 : f->d[0].time_ns;
	if (s->opt.hv.symbolize) {
		const char *last = f->d[f->n - 1].path;
		ap_profile *p = NULL, *sp = NULL;
		int rc = hv_load_profiles(&last, 1, &p, err, errlen);
		if (!rc)
			rc = symbolize(s, p, &sp, err, errlen);
		ap_profile_destroy(p);
		ap_profile_destroy(sp);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < f->n; i++) {
		const struct dumpinfo *d = &f->d[i];
		const char *path = d->path;
		ap_profile *p = NULL;
		int rc = hv_load_profiles(&path, 1, &p, err, errlen);
		if (!rc) {
			double t = (double)(d->time_ns - origin) / 1e9;
			char why[400];
			rc = ts_series_add_profile(s, p, t, d->has_id ? d->id.seq : 0,
						   path, why, sizeof why);
			if (rc)
				ap_cli_seterr(err, errlen, "%s: %s", path, why);
		}
		ap_profile_destroy(p);
		if (rc)
			return rc;
	}
	return 0;
}

int ts_series_load(const char *const *paths, size_t n, const ts_options *o,
		   ts_series **out, char *err, size_t errlen)
{
	struct files f = {0};
	size_t skipped = 0;
	ts_series *s = NULL;
	*out = NULL;
	int rc = expand(paths, n, &f, err, errlen);
	if (!rc)
		rc = identify(&f, &skipped, err, errlen);
	if (!rc && f.n == 0) {
		ap_cli_seterr(err, errlen, "no heap profile given%s",
			      skipped ? " (the directories hold none)" : "");
		rc = AP_EINVAL;
	}
	if (!rc)
		rc = select_process(&f, o->pid, err, errlen);
	if (!rc)
		rc = order(&f, err, errlen);
	if (!rc && (rc = ts_series_new(o, f.d[0].has_id ? &f.d[0].id : NULL, &s)))
		ap_cli_seterr(err, errlen, "out of memory");
	/* the latest dump's ring, when it has one, is denser than the dumps */
	bool ring = false;
	if (!rc)
		rc = try_ring(s, f.d[f.n - 1].path, &ring, err, errlen);
	if (!rc && !ring && f.n < 2) {
		ap_cli_seterr(err, errlen, "only one dump (%s) and no timeline in "
			      "it: a series over time needs at least two points "
			      "(run with ALLOCPROF_OPTIONS=timeline=1s, or dump "
			      "with interval=1s)", f.d[0].path);
		rc = AP_ECORRUPT;
	}
	if (!rc && !ring)
		rc = load_points(s, &f, err, errlen);
	files_free(&f);
	if (rc)
		ts_series_free(s);
	else
		*out = s;
	return rc;
}

/* ---- shared output pieces ------------------------------------------ */

void ts_describe(const ts_series *s, char *buf, size_t n)
{
	char who[64] = "one process";
	if (s->has_id)
		snprintf(who, sizeof who, "pid %lld", (long long)s->id.pid);
	double span = s->npts ? s->pts[s->npts - 1].p.t_s - s->pts[0].p.t_s : 0;
	snprintf(buf, n, "%s: %zu point%s over %.1f s (%.1f to %.1f s after "
		 "start)", who, s->npts, s->npts == 1 ? "" : "s", span,
		 s->npts ? s->pts[0].p.t_s : 0.0,
		 s->npts ? s->pts[s->npts - 1].p.t_s : 0.0);
}

void ts_json_begin(json_writer *w, FILE *out, const ts_series *s)
{
	json_init(w, out);
	json_begin_object(w);
	json_key(w, "process");
	if (s->has_id) {
		json_begin_object(w);
		json_key(w, "pid");
		json_int(w, s->id.pid);
		json_key(w, "start_ns");
		json_uint(w, s->id.start_ns);
		json_key(w, "boot_id");
		json_string(w, s->id.boot_id);
		json_end_object(w);
	} else {
		json_null(w);
	}
	json_key(w, "view");
	json_string(w, hv_kind_name(s->opt.hv.view));
	json_key(w, "by");
	json_string(w, hv_by_name(s->opt.hv.by));
	json_key(w, "level");
	json_number(w, s->opt.hv.level);
	json_key(w, "points");
	json_uint(w, s->npts);
}
