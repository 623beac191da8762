/*
 * report.c: the report engine (report.h): heapview.h does the statistics;
 * this file lays them out as a table or JSON in the shape docs/DESIGN.md
 * fixes, and shows the allocation-size and lifetime distributions the
 * runtime stores as histogram comments (profmerge.h decodes them).
 */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "allocprof/hist.h"
#include "cli_util.h"
#include "memview.h"
#include "profload.h"
#include "profmerge.h"
#include "timeview.h"

void report_options_default(report_options *r)
{
	memset(r, 0, sizeof *r);
	hv_options_default(&r->hv);
	r->top = 20;
	r->short_ns = 1e6;
}

void report_json_view(json_writer *w, const hv_options *o)
{
	json_key(w, "view");
	json_string(w, hv_kind_name(o->view));
	json_key(w, "value");
	json_string(w, hv_value_name(o->value));
	json_key(w, "by");
	json_string(w, hv_by_name(o->by));
}

/* "12.3 MiB" style, 3 significant digits; exact below 10 KiB. */
static const char *fmt_bytes(double v, char *buf, size_t n)
{
	ap_cli_format_bytes(v, AP_BYTES_SHORT, buf, n);
	return buf;
}

static const char *fmt_count(double v, char *buf, size_t n)
{
	if (isinf(v) && v > 0) /* a zero-sample objects bound without a
				  * size floor (STATISTICS.md section 5) */
		snprintf(buf, n, "unbounded");
	else if (!isfinite(v))
		snprintf(buf, n, "?");
	else if (v < 1e6)
		snprintf(buf, n, "%.0f", v);
	else if (v < 1e8)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else
		snprintf(buf, n, "%.1fM", v / 1e6);
	return buf;
}

static void print_row(FILE *out, const hv_stat *s, double total, const char *label,
		      const char *where)
{
	char b[3][32], o[3][32], br[80], orr[80];
	snprintf(br, sizeof br, "[%s, %s]", fmt_bytes(s->bytes_lo, b[1], 32),
		 fmt_bytes(s->bytes_hi, b[2], 32));
	snprintf(orr, sizeof orr, "[%s, %s]", fmt_count(s->objects_lo, o[1], 32),
		 fmt_count(s->objects_hi, o[2], 32));
	fprintf(out, "%10s %-24s %6.1f%% %9s %-20s %8llu %-6s %s%s%s\n",
	       fmt_bytes(s->bytes, b[0], 32), br,
	       total > 0 ? 100.0 * s->bytes / total : 0.0,
	       fmt_count(s->objects, o[0], 32), orr, (unsigned long long)s->samples,
	       hv_method_name(s->method), label, where && *where ? "  " : "",
	       where ? where : "");
}

/*
 * A stack as read in a table: the site first, then its callers
 * ("parse <- load <- main"); deep C++ stacks start with the user's frame
 * and the part cut off by the buffer is the root end. Uses buf.
 */
static const char *leaf_first(const hv_site *s, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	if (s->nstack == 0)
		return s->name;
	for (size_t i = 0; i < s->nstack && n + 1 < len; i++) {
		int k = snprintf(buf + n, len - n, "%s%s", i ? " <- " : "",
				 s->stack[i].function);
		n += k > 0 ? (size_t)k : 0;
	}
	return buf;
}

/* ---- a hint: the program's own allocation wrappers ------------------- */

/* Does the name say it allocates ("xmalloc", "zrealloc_usable",
 * "ngx_palloc", "g_malloc0", "sqlite3MallocZero", "AllocBuffer")? */
static bool alloc_like(const char *name)
{
	for (const char *c = name; *c; c++)
		if (strncasecmp(c, "alloc", 5) == 0)
			return true;
	return false;
}

/* Do the samples whose first frame is fn come from two calling functions
 * or more? */
static bool several_callers(const hv_view *v, const char *fn)
{
	const char *first = NULL;
	for (size_t i = 0, n = hv_nstacks(v); i < n; i++) {
		const hv_site *st = hv_stack_at(v, i);
		if (st->nstack < 2 || strcmp(st->stack[0].function, fn) != 0)
			continue;
		const char *caller = st->stack[1].function;
		if (!first)
			first = caller;
		else if (strcmp(first, caller) != 0)
			return true;
	}
	return false;
}

/* Append name to buf as an ERE matching it literally. */
static void ere_literal(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);
	for (const char *c = name; *c && n + 2 < len; c++) {
		if (strchr(".[]()*+?{}|^$\\", *c))
			buf[n++] = '\\';
		buf[n++] = *c;
	}
	buf[n] = '\0';
}

/*
 * By function, a large row whose function is named like an allocator and
 * is reached from several callers is most likely the program's own
 * wrapper (redis's zmalloc, nginx's ngx_alloc, git's xmalloc): every
 * allocation made through it is charged to it, and its callers, the
 * answer the user wants, do not appear. Say how to see them. Rows of at
 * least 5% of the total among those shown, at most three named.
 */
static void print_wrapper_hint(FILE *out, const hv_view *v, size_t shown)
{
	const hv_stat *t = hv_total(v);
	if (hv_view_options(v)->by != HV_BY_FUNCTION || !(t->bytes > 0))
		return;
	const char *fn[3];
	size_t found = 0;
	for (size_t i = 0; i < shown && found < 3; i++) {
		const hv_site *s = hv_site_at(v, i);
		if (s->stat.bytes >= 0.05 * t->bytes && alloc_like(s->function) &&
		    !strchr(s->function, '\'') && several_callers(v, s->function))
			fn[found++] = s->function;
	}
	if (!found)
		return;
	char names[768] = "", re[1024] = "";
	for (size_t k = 0; k < found; k++) {
		size_t nl = strlen(names);
		snprintf(names + nl, sizeof names - nl, "%s%s",
			 k == 0 ? "" : k + 1 == found ? " and " : ", ", fn[k]);
		if (k && strlen(re) + 1 < sizeof re)
			strcat(re, "|");
		ere_literal(re, sizeof re, fn[k]);
	}
	fprintf(out, "hint: %s %s called from several functions, as allocation "
		     "wrappers are; --skip '^(%s)$' charges %s callers instead\n",
		names, found > 1 ? "are each" : "is", re,
		found > 1 ? "their" : "its");
}

static void print_table(FILE *out, const hv_view *v, const report_options *r)
{
	const hv_options *o = hv_view_options(v);
	const hv_stat *t = hv_total(v);
	size_t n = hv_nsites(v);
	size_t shown = r->top && r->top < n ? (size_t)r->top : n;
	fprintf(out, "%s view, %s bytes, by %s; sampling rate %.0f bytes%s; %g%% intervals\n",
	       hv_kind_name(o->view), hv_value_name(o->value), hv_by_name(o->by),
	       hv_rate(v), hv_mixed_rates(v) ? " (merged: several rates)" : "",
	       100 * o->level);
	if (hv_view_approximate(v))
		fprintf(out, "note: this profile lacks allocprof's sample counts; sample counts "
		       "and intervals are approximate\n");
	fprintf(out, "%10s %-24s %7s %9s %-20s %8s %-6s %s\n", "bytes", "interval",
	       "share", "objects", "interval", "samples", "ci", hv_by_name(o->by));
	for (size_t i = 0; i < shown; i++) {
		const hv_site *s = hv_site_at(v, i);
		char where[512] = "", chain[4096];
		if (o->by == HV_BY_FUNCTION && s->several_files)
			snprintf(where, sizeof where, "(in several files: --by line)");
		else if (o->by == HV_BY_FUNCTION && *s->file)
			snprintf(where, sizeof where, "%s:%lld", s->file,
				 (long long)s->line);
		print_row(out, &s->stat, t->bytes,
			  o->by == HV_BY_STACK ? leaf_first(s, chain, sizeof chain)
					       : s->name,
			  o->by == HV_BY_STACK ? NULL : where);
	}
	if (shown < n)
		fprintf(out, "%10s ... %zu more sites (--top 0 shows all)\n", "", n - shown);
	print_row(out, t, t->bytes, "total", NULL);
	fprintf(out, "ci: nb = exact negative binomial, split = certain part + "
	       "gamma on the uncertain part, normal = Horvitz-Thompson normal, "
	       "exact = no sampling error, none sampled = [0, what can hide "
	       "unseen]\n");
	print_wrapper_hint(out, v, shown);
}

static void json_stat(json_writer *w, const hv_stat *s, double total)
{
	json_key(w, "bytes");
	json_number(w, round(s->bytes));
	json_key(w, "bytes_lo");
	json_number(w, floor(s->bytes_lo));
	json_key(w, "bytes_hi");
	json_number(w, ceil(s->bytes_hi));
	json_key(w, "objects");
	json_number(w, round(s->objects));
	json_key(w, "objects_lo");
	json_number(w, floor(s->objects_lo));
	json_key(w, "objects_hi");
	json_number(w, ceil(s->objects_hi));
	json_key(w, "samples");
	json_uint(w, s->samples);
	json_key(w, "share");
	json_number(w, total > 0 ? s->bytes / total : 0.0);
	json_key(w, "interval");
	json_string(w, hv_method_name(s->method));
}

/*
 * A profile written by `allocprof attach` carries the allocator's heap at
 * the attach ("allocprof.attach=BYTES SOURCE"): blocks allocated before it,
 * which no view attributes. Shown as its own line, and in the in-use view
 * added to the total, so the figure reconciles with the allocator's.
 */
static void show_attach(FILE *out, const ap_profile *p, const hv_view *v)
{
	static const char key[] = "allocprof.attach=";
	for (size_t i = 0; i < p->ncomments; i++) {
		const char *c = ap_profile_string(p, p->comments[i]);
		unsigned long long heap;
		char src[64];
		if (strncmp(c, key, sizeof key - 1) != 0 ||
		    sscanf(c + sizeof key - 1, "%llu %63s", &heap, src) != 2)
			continue;
		char b[32];
		bool inuse = hv_view_options(v)->view == HV_INUSE;
		fprintf(out, "%10s heap at attach (%s): allocated before allocprof "
			"attached, not attributed; the views cover blocks allocated "
			"since\n", fmt_bytes((double)heap, b, sizeof b), src);
		if (inuse)
			fprintf(out, "%10s total with the heap at attach\n",
				fmt_bytes(hv_total(v)->bytes + (double)heap, b, sizeof b));
		return;
	}
}

/* ---- --sizes: histograms stored as profile comments ------------------- */

static const double quantiles[] = {0.5, 0.9, 0.99, 0.999};

static void fmt_value(const char *name, uint64_t v, char *buf, size_t n)
{
	if (strstr(name, "_ns")) {
		double s = (double)v * 1e-9;
		if (s < 1e-6)
			snprintf(buf, n, "%.0f ns", s * 1e9);
		else if (s < 1e-3)
			snprintf(buf, n, "%.1f us", s * 1e6);
		else if (s < 1)
			snprintf(buf, n, "%.1f ms", s * 1e3);
		else
			snprintf(buf, n, "%.2f s", s);
	} else {
		fmt_bytes((double)v, buf, n);
	}
}

static void print_hist_text(FILE *out, const char *name, const ap_hist_snap *h)
{
	uint64_t q[4], mn = 0, mx = 0;
	char b[32];
	fprintf(out, "\n%s: %llu allocations (HT-weighted)\n", name,
	       (unsigned long long)ap_hist_snap_count(h));
	if (ap_hist_snap_values_at_quantiles(h, quantiles, 4, q) ||
	    ap_hist_snap_min(h, &mn) || ap_hist_snap_max(h, &mx)) {
		fprintf(out, "  (empty)\n");
		return;
	}
	fmt_value(name, mn, b, sizeof b);
	fprintf(out, "  min %s", b);
	for (size_t i = 0; i < 4; i++) {
		fmt_value(name, q[i], b, sizeof b);
		fprintf(out, "  p%g %s", 100 * quantiles[i], b);
	}
	fmt_value(name, mx, b, sizeof b);
	fprintf(out, "  max %s\n", b);
	/* bars per power of two: the log-linear buckets are finer than a
	 * terminal needs */
	uint64_t pow2[65] = {0}, peak = 0;
	for (size_t i = 0; i < ap_hist_snap_bucket_count(h); i++) {
		ap_hist_bucket bk;
		if (ap_hist_snap_bucket(h, i, &bk))
			break;
		int e = bk.lo ? 64 - __builtin_clzll(bk.lo) : 0;
		pow2[e] += bk.count;
		if (pow2[e] > peak)
			peak = pow2[e];
	}
	for (int e = 0; e < 65; e++) {
		if (!pow2[e])
			continue;
		char lo[32];
		fmt_value(name, e ? 1ull << (e - 1) : 0, lo, sizeof lo);
		int width = (int)((double)pow2[e] * 40.0 / (double)peak + 0.5);
		fprintf(out, "  >= %-10s %-40.*s %llu\n", lo, width > 0 ? width : 1,
		       "########################################",
		       (unsigned long long)pow2[e]);
	}
}

static void json_hist(json_writer *w, const char *name, const ap_hist_snap *h)
{
	uint64_t q[4], mn, mx;
	json_key(w, name);
	json_begin_object(w);
	json_key(w, "count");
	json_uint(w, ap_hist_snap_count(h));
	if (!ap_hist_snap_min(h, &mn) && !ap_hist_snap_max(h, &mx) &&
	    !ap_hist_snap_values_at_quantiles(h, quantiles, 4, q)) {
		json_key(w, "min");
		json_uint(w, mn);
		json_key(w, "max");
		json_uint(w, mx);
		json_key(w, "mean");
		json_number(w, ap_hist_snap_mean(h));
		json_key(w, "quantiles");
		json_begin_object(w);
		for (size_t i = 0; i < 4; i++) {
			char k[16];
			snprintf(k, sizeof k, "%g", quantiles[i]);
			json_key(w, k);
			json_uint(w, q[i]);
		}
		json_end_object(w);
	}
	json_end_object(w);
}

/* Show every histogram (extensions, and comments of earlier versions);
 * returns the number shown. */
static size_t show_sizes(FILE *out, const ap_profile *p, json_writer *w)
{
	size_t shown = 0, cur = 0;
	char *name;
	ap_hist_snap *h;
	int rc;
	while ((rc = ap_profile_hist_next(p, &cur, NULL, &name, &h)) != AP_ENOTFOUND) {
		if (rc == AP_ECORRUPT)
			fprintf(stderr, "allocprof: warning: a histogram is "
					"malformed; skipped\n");
		if (rc == AP_ECORRUPT)
			continue;
		if (rc)
			break;
		if (w)
			json_hist(w, name, h);
		else
			print_hist_text(out, name, h);
		shown++;
		free(name);
		ap_hist_snap_destroy(h);
	}
	if (!shown && !w)
		fprintf(out, "\n(no size or lifetime distributions in this profile)\n");
	return shown;
}

size_t report_json_hists(json_writer *w, const ap_profile *p)
{
	return show_sizes(NULL, p, w);
}

static void json_peak(json_writer *w, const tv_peak_info *pk, double level)
{
	ap_interval iv;
	tv_peak_interval(pk, level, &iv);
	json_key(w, "peak");
	json_begin_object(w);
	json_key(w, "t_ns");
	json_uint(w, pk->t_ns);
	json_key(w, "candidates");
	json_uint(w, pk->candidates);
	json_key(w, "bytes");
	json_number(w, round(iv.estimate));
	json_key(w, "bytes_lo");
	json_number(w, floor(iv.lo));
	json_key(w, "bytes_hi");
	json_number(w, ceil(iv.hi));
	json_key(w, "bytes_se");
	json_number(w, sqrt(pk->total.space_var > 0 ? pk->total.space_var : 0));
	json_key(w, "max_bytes");
	json_number(w, round(pk->max_space));
	json_end_object(w);
}

static void print_json(FILE *out, const hv_view *v, const report_options *r,
		       const ap_profile *p, const memview *mv,
		       const tv_peak_info *pk)
{
	const hv_options *o = hv_view_options(v);
	const hv_stat *t = hv_total(v);
	json_writer w;
	json_init(&w, out);
	json_begin_object(&w);
	report_json_view(&w, o);
	json_key(&w, "rate");
	json_number(&w, hv_rate(v));
	json_key(&w, "level");
	json_number(&w, o->level);
	json_key(&w, "approximate");
	json_bool(&w, hv_view_approximate(v));
	json_key(&w, "mixed_rates");
	json_bool(&w, hv_mixed_rates(v));
	json_key(&w, "total");
	json_begin_object(&w);
	json_stat(&w, t, t->bytes);
	json_end_object(&w);
	if (pk)
		json_peak(&w, pk, o->level);
	json_key(&w, "sites");
	json_begin_array(&w);
	size_t n = hv_nsites(v);
	if (r->top && r->top < n)
		n = (size_t)r->top;
	for (size_t i = 0; i < n; i++) {
		const hv_site *s = hv_site_at(v, i);
		json_begin_object(&w);
		json_key(&w, "name");
		json_string(&w, s->name);
		json_key(&w, "function");
		json_string(&w, s->function);
		json_key(&w, "file");
		json_string(&w, s->file);
		json_key(&w, "line");
		json_int(&w, s->line);
		json_key(&w, "several_files");
		json_bool(&w, s->several_files);
		json_key(&w, "stack");
		json_begin_array(&w);
		for (size_t j = 0; j < s->nstack; j++)
			json_string(&w, s->stack[j].function);
		json_end_array(&w);
		json_stat(&w, &s->stat, t->bytes);
		json_end_object(&w);
	}
	json_end_array(&w);
	if (r->sizes) {
		json_key(&w, "distributions");
		json_begin_object(&w);
		show_sizes(out, p, &w);
		json_end_object(&w);
	}
	if (mv) {
		json_key(&w, "memory");
		memview_json(&w, &mv->mem, mv->trigger, &mv->heap);
	}
	json_end_object(&w);
	fputc('\n', out);
}

/* The line under the --peak table: when, and the total's interval
 * protected against the selection of the maximum (docs/TIME.md). */
static void print_peak(FILE *out, const tv_peak_info *pk, double level)
{
	ap_interval iv;
	tv_peak_interval(pk, level, &iv);
	char e[32], lo[32], hi[32];
	ap_cli_format_bytes(iv.estimate, AP_BYTES_SHORT, e, sizeof e);
	ap_cli_format_bytes(iv.lo, AP_BYTES_SHORT, lo, sizeof lo);
	ap_cli_format_bytes(iv.hi, AP_BYTES_SHORT, hi, sizeof hi);
	fprintf(out, "peak: %s [%s, %s] in use at %.3fs, the highest of the "
		     "estimate's %llu values: the estimate is biased up by the "
		     "choice, the interval allows for it (docs/TIME.md)\n", e, lo, hi,
		(double)pk->t_ns * 1e-9, (unsigned long long)pk->candidates);
}

static void free_loaded(ap_profile *p, bool peak)
{
	if (peak)
		tv_profile_free(p);
	else
		ap_profile_destroy(p);
}

int report_write(const char *const *paths, size_t n, const report_options *r,
		 FILE *out, char *err, size_t errlen)
{
	char why[1024];
	ap_profile *p;
	hv_view *v;
	tv_peak_info pk;
	if (r->peak) {
		int prc = tv_peak_profile(paths, n, r->hv.symbolize, &p, &pk, err, errlen);
		if (prc)
			return prc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
	} else if (hv_load_symbolized(paths, n, r->hv.symbolize, &p, err, errlen)) {
		return AP_EXIT_INPUT;
	}
	int rc = hv_build(p, &r->hv, &v, why, sizeof why);
	if (rc) {
		free_loaded(p, r->peak);
		if (n == 1)
			ap_cli_seterr(err, errlen, "%s: %s", paths[0], why);
		else
			ap_cli_seterr(err, errlen, "%s", why);
		return rc == AP_EINVAL && (r->hv.focus || r->hv.ignore) &&
				       !strncmp(why, "bad ", 4)
			       ? AP_EXIT_USAGE
			       : AP_EXIT_INPUT;
	}
	memview mv;
	if (r->memory && (rc = memview_prepare(p, &r->hv, &mv, why, sizeof why))) {
		hv_destroy(v);
		ap_profile_destroy(p);
		ap_cli_seterr(err, errlen, "%s: %s", paths[0], why);
		return rc;
	}
	if (r->json) {
		print_json(out, v, r, p, r->memory ? &mv : NULL,
			   r->peak ? &pk : NULL);
	} else {
		print_table(out, v, r);
		show_attach(out, p, v);
		if (r->peak)
			print_peak(out, &pk, r->hv.level);
		if (r->sizes)
			show_sizes(out, p, NULL);
		if (r->memory)
			memview_print(out, &mv.mem, mv.trigger, &mv.heap, mv.level);
	}
	hv_destroy(v);
	free_loaded(p, r->peak);
	if (fflush(out) || ferror(out)) {
		ap_cli_seterr(err, errlen, "writing the report: %s",
			      strerror(errno));
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}
