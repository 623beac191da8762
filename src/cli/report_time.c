/*
 * report_time.c: the lifetimes report (report_time.h) over timeview.h's
 * rows.
 */
#define _GNU_SOURCE
#include "report_time.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "cli_util.h"
#include "timeview.h"

/* A duration in ns, 3 significant digits; "never" for +inf (not reached). */
static const char *fmt_ns(double ns, char *buf, size_t n)
{
	if (isinf(ns))
		snprintf(buf, n, "-");
	else if (!isfinite(ns))
		snprintf(buf, n, "?");
	else if (ns < 1e3)
		snprintf(buf, n, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, n, "%.3gus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.3gms", ns / 1e6);
	else
		snprintf(buf, n, "%.3gs", ns / 1e9);
	return buf;
}

static const char *fmt_q(const ap_life_quantile *q, char *buf, size_t n)
{
	char e[24], lo[24], hi[24];
	if (isinf(q->estimate))
		snprintf(buf, n, "> %s", fmt_ns(q->lo, lo, sizeof lo));
	else
		snprintf(buf, n, "%s [%s, %s]", fmt_ns(q->estimate, e, sizeof e),
			 fmt_ns(q->lo, lo, sizeof lo),
			 isinf(q->hi) ? "not reached" : fmt_ns(q->hi, hi, sizeof hi));
	return buf;
}

static void print_text(FILE *out, const tv_lifetimes *t, const report_options *r)
{
	size_t n = tv_lifetimes_count(t);
	size_t shown = r->top && r->top < n ? (size_t)r->top : n;
	char sh[24];
	fprintf(out, "lifetimes by %s over %.3gs; Kaplan-Meier over freed and live "
		     "(censored) samples, HT-weighted; %g%% intervals\n",
		hv_by_name(r->hv.by), tv_lifetimes_seconds(t), 100 * r->hv.level);
	fprintf(out, "%-30s %-30s %-30s %7s %7s %s\n", "median [interval]",
		"q25 [interval]", "q75 [interval]", "freed", "live", hv_by_name(r->hv.by));
	for (size_t i = 0; i < shown; i++) {
		const tv_life_row *w = tv_lifetimes_row(t, i);
		char m[80], a[80], b[80];
		fprintf(out, "%-30s %-30s %-30s %7llu %7llu %s\n",
			fmt_q(&w->km.median, m, sizeof m), fmt_q(&w->km.q25, a, sizeof a),
			fmt_q(&w->km.q75, b, sizeof b),
			(unsigned long long)w->freed_samples,
			(unsigned long long)w->live_samples, w->name);
	}
	fprintf(out, "\nmost temporary allocations: bytes/s of blocks freed within "
		     "%s of their allocation\n", fmt_ns(r->short_ns, sh, sizeof sh));
	fprintf(out, "%10s %-24s %s\n", "bytes/s", "interval", hv_by_name(r->hv.by));
	for (size_t i = 0; i < shown; i++) {
		const tv_life_row *w = tv_lifetimes_row(t, i);
		char e[32], lo[32], hi[32];
		if (!(w->short_rate.estimate > 0))
			continue;
		ap_cli_format_bytes(w->short_rate.estimate, AP_BYTES_SHORT, e, sizeof e);
		ap_cli_format_bytes(fmax(0, w->short_rate.lo), AP_BYTES_SHORT, lo, sizeof lo);
		ap_cli_format_bytes(w->short_rate.hi, AP_BYTES_SHORT, hi, sizeof hi);
		char iv[80];
		snprintf(iv, sizeof iv, "[%s, %s]", lo, hi);
		fprintf(out, "%10s %-24s %s\n", e, iv, w->name);
	}
	if (shown < n)
		fprintf(out, "... %zu more sites (--top 0 shows all)\n", n - shown);
	fprintf(out, "-: not reached (the curve never falls that low: objects that "
		     "outlive the run)\n");
}

static void json_ns(json_writer *w, double v)
{
	if (isfinite(v))
		json_number(w, v);
	else
		json_null(w);
}

static void json_q(json_writer *w, const char *key, const ap_life_quantile *q)
{
	json_key(w, key);
	json_begin_object(w);
	json_key(w, "estimate_ns");
	json_ns(w, q->estimate);
	json_key(w, "lo_ns");
	json_ns(w, q->lo);
	json_key(w, "hi_ns");
	json_ns(w, q->hi);
	json_end_object(w);
}

static void json_row(json_writer *w, const tv_life_row *r)
{
	json_begin_object(w);
	json_key(w, "name");
	json_string(w, r->name);
	json_key(w, "function");
	json_string(w, r->function);
	json_key(w, "file");
	json_string(w, r->file);
	json_key(w, "line");
	json_int(w, r->line);
	json_key(w, "freed_samples");
	json_uint(w, r->freed_samples);
	json_key(w, "live_samples");
	json_uint(w, r->live_samples);
	json_key(w, "objects");
	json_number(w, isfinite(r->km.objects) ? r->km.objects : 0);
	json_q(w, "median", &r->km.median);
	json_q(w, "q25", &r->km.q25);
	json_q(w, "q75", &r->km.q75);
	json_q(w, "median_freed_only", &r->freed_only.median);
	json_key(w, "short_lived_bytes_per_s");
	json_number(w, r->short_rate.estimate);
	json_key(w, "short_lived_lo");
	json_number(w, fmax(0, r->short_rate.lo));
	json_key(w, "short_lived_hi");
	json_number(w, r->short_rate.hi);
	json_end_object(w);
}

int report_lifetimes_write(const char *const *paths, size_t n,
			   const report_options *r, FILE *out, char *err,
			   size_t errlen)
{
	tv_lifetimes *t;
	int rc = tv_lifetimes_open(paths, n, &r->hv, r->short_ns, &t, err, errlen);
	if (rc)
		return rc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
	if (r->json) {
		json_writer w;
		json_init(&w, out);
		json_begin_object(&w);
		json_key(&w, "by");
		json_string(&w, hv_by_name(r->hv.by));
		json_key(&w, "level");
		json_number(&w, r->hv.level);
		json_key(&w, "seconds");
		json_number(&w, tv_lifetimes_seconds(t));
		json_key(&w, "short_lived_ns");
		json_number(&w, r->short_ns);
		json_key(&w, "sites");
		json_begin_array(&w);
		size_t k = tv_lifetimes_count(t);
		if (r->top && r->top < k)
			k = (size_t)r->top;
		for (size_t i = 0; i < k; i++)
			json_row(&w, tv_lifetimes_row(t, i));
		json_end_array(&w);
		json_end_object(&w);
		fputc('\n', out);
	} else {
		print_text(out, t, r);
	}
	tv_lifetimes_free(t);
	if (fflush(out) || ferror(out)) {
		ap_cli_seterr(err, errlen, "writing the report: %s", strerror(errno));
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}
