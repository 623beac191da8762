/*
 * cmd_report.c: `allocprof report`, the top allocation sites of one or more
 * heap profiles, each estimate with its confidence interval (heapview.h does
 * the statistics; this file parses options and prints a table or JSON in
 * the shape docs/DESIGN.md fixes). --sizes adds the allocation-size and lifetime
 * distributions the runtime stores as histogram comments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist.h"
#include "cli_util.h"
#include "commands.h"
#include "heapview.h"
#include "json.h"
#include "views_cli.h"

static void report_usage(FILE *f)
{
	fputs("usage: allocprof report [--alloc|--inuse] [--by function|line|stack]\n"
	      "                        [--top N] [--level L] [--requested|--usable]\n"
	      "                        [--focus REGEX] [--ignore REGEX] [--size MIN:MAX]\n"
	      "                        [--sizes] [--json] [--no-symbolize] PROFILE...\n"
	      "\n"
	      "Top allocation sites of heap profiles (gzip'd pprof; several are merged\n"
	      "first, unbias-then-sum) with estimated bytes and objects, each with a\n"
	      "confidence interval at level L, the sample counts behind them and the\n"
	      "share of the total.\n"
	      "\n"
	      "  --alloc, --inuse      everything allocated, or still live at the dump\n"
	      "                        (default: inuse)\n"
	      "  --by KEY              function (first frame outside the allocator and\n"
	      "                        allocprof; default), line, or stack\n"
	      "  --top N               show N sites (default 20; 0 = all)\n"
	      "  --level L             confidence level, 0 < L < 1 (default 0.95)\n"
	      "  --requested, --usable bytes asked for (default), or usable size\n"
	      "  --focus REGEX         only samples with a frame matching (POSIX ERE)\n"
	      "  --ignore REGEX        drop samples with a frame matching\n"
	      "  --size MIN:MAX        only allocations of MIN..MAX bytes (either may be\n"
	      "                        empty: 4096: means 4096 and up)\n"
	      "  --sizes               also show the size and lifetime distributions\n"
	      "  --json                one JSON object (see docs/REPORTS.md)\n"
	      "  --no-symbolize        show addresses; do not read the binaries\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage error, 2 unreadable or invalid input.\n",
	      f);
	fprintf(f,
		"\nIntervals: bytes use the exact negative-binomial interval ([R4]:\n"
		"failed trials before the s-th sampled byte) when a site has fewer than\n"
		"%d samples, and the Horvitz-Thompson normal interval (estimate +- z *\n"
		"sqrt(variance estimate)) from %d samples up; objects use the exact\n"
		"Poisson interval of the sample count scaled by the mean weight below %d\n"
		"samples, HT normal above. At rate 1 every number is exact. For profiles\n"
		"without allocprof's sample counts (e.g. Go's) counts are derived from\n"
		"sizes and the period and the intervals are marked approximate.\n"
		"See docs/REPORTS.md.\n",
		AP_NB_MAX_SAMPLES, AP_NB_MAX_SAMPLES, AP_NB_MAX_SAMPLES);
}

struct ropts {
	hv_options hv;
	uint64_t top;
	bool json, sizes;
};

static int parse_size_range(const char *s, hv_options *o)
{
	const char *colon = strchr(s, ':');
	if (!colon || strchr(colon + 1, ':'))
		return -1;
	char lo[32];
	size_t n = (size_t)(colon - s);
	if (n >= sizeof lo)
		return -1;
	memcpy(lo, s, n);
	lo[n] = 0;
	uint64_t a = 0, b = UINT64_MAX;
	if ((n && ap_cli_parse_u64(lo, &a)) || (colon[1] && ap_cli_parse_u64(colon + 1, &b)))
		return -1;
	if (a > b)
		return -1;
	o->size_min = a;
	o->size_max = b;
	return 0;
}

/* Parse argv; returns -1 to continue, else the exit status. */
static int parse(int argc, char **argv, struct ropts *r)
{
	enum { O_ALLOC = 256, O_INUSE, O_BY, O_TOP, O_LEVEL, O_REQ, O_USABLE,
	       O_FOCUS, O_IGNORE, O_SIZE, O_SIZES, O_JSON, O_NOSYM };
	static const struct option opts[] = {
		{"alloc", no_argument, NULL, O_ALLOC},
		{"inuse", no_argument, NULL, O_INUSE},
		{"by", required_argument, NULL, O_BY},
		{"top", required_argument, NULL, O_TOP},
		{"level", required_argument, NULL, O_LEVEL},
		{"requested", no_argument, NULL, O_REQ},
		{"usable", no_argument, NULL, O_USABLE},
		{"focus", required_argument, NULL, O_FOCUS},
		{"ignore", required_argument, NULL, O_IGNORE},
		{"size", required_argument, NULL, O_SIZE},
		{"sizes", no_argument, NULL, O_SIZES},
		{"json", no_argument, NULL, O_JSON},
		{"no-symbolize", no_argument, NULL, O_NOSYM},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c;
	hv_options_default(&r->hv);
	r->top = 20;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_ALLOC: r->hv.view = HV_ALLOC; break;
		case O_INUSE: r->hv.view = HV_INUSE; break;
		case O_REQ: r->hv.value = HV_REQUESTED; break;
		case O_USABLE: r->hv.value = HV_USABLE; break;
		case O_FOCUS: r->hv.focus = optarg; break;
		case O_IGNORE: r->hv.ignore = optarg; break;
		case O_SIZES: r->sizes = true; break;
		case O_JSON: r->json = true; break;
		case O_NOSYM: r->hv.symbolize = false; break;
		case 'h': report_usage(stdout); return AP_EXIT_OK;
		case O_BY:
			if (!strcmp(optarg, "function"))
				r->hv.by = HV_BY_FUNCTION;
			else if (!strcmp(optarg, "line"))
				r->hv.by = HV_BY_LINE;
			else if (!strcmp(optarg, "stack"))
				r->hv.by = HV_BY_STACK;
			else {
				ap_cli_error("--by must be function, line or stack, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case O_TOP:
			if (ap_cli_parse_u64(optarg, &r->top)) {
				ap_cli_error("--top needs a number >= 0, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case O_LEVEL:
			if (ap_cli_parse_level(optarg, &r->hv.level)) {
				ap_cli_error("--level must be strictly between 0 and 1, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		case O_SIZE:
			if (parse_size_range(optarg, &r->hv)) {
				ap_cli_error("--size wants MIN:MAX in bytes (MIN <= MAX), not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			break;
		default:
			ap_cli_error("bad option '%s' (try --help)", argv[optind - 1]);
			return AP_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ap_cli_error("no profile given (try --help)");
		return AP_EXIT_USAGE;
	}
	return -1;
}

/* "12.3 MiB" style, 3 significant digits; exact below 10 KiB. */
static const char *fmt_bytes(double v, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	if (!isfinite(v)) {
		snprintf(buf, n, "?");
		return buf;
	}
	if (v < 10240) {
		snprintf(buf, n, "%.0f B", v);
		return buf;
	}
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v,
		 units[u]);
	return buf;
}

static const char *fmt_count(double v, char *buf, size_t n)
{
	if (!isfinite(v))
		snprintf(buf, n, "?");
	else if (v < 1e6)
		snprintf(buf, n, "%.0f", v);
	else if (v < 1e8)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else
		snprintf(buf, n, "%.1fM", v / 1e6);
	return buf;
}

static void print_row(const hv_stat *s, double total, const char *label,
		      const char *where)
{
	char b[3][32], o[3][32], br[80], orr[80];
	snprintf(br, sizeof br, "[%s, %s]", fmt_bytes(s->bytes_lo, b[1], 32),
		 fmt_bytes(s->bytes_hi, b[2], 32));
	snprintf(orr, sizeof orr, "[%s, %s]", fmt_count(s->objects_lo, o[1], 32),
		 fmt_count(s->objects_hi, o[2], 32));
	printf("%10s %-24s %6.1f%% %9s %-20s %8llu %-6s %s%s%s\n",
	       fmt_bytes(s->bytes, b[0], 32), br,
	       total > 0 ? 100.0 * s->bytes / total : 0.0,
	       fmt_count(s->objects, o[0], 32), orr, (unsigned long long)s->samples,
	       hv_method_name(s->method), label, where && *where ? "  " : "",
	       where ? where : "");
}

static void print_table(const hv_view *v, const struct ropts *r)
{
	const hv_options *o = hv_view_options(v);
	const hv_stat *t = hv_total(v);
	size_t n = hv_nsites(v);
	size_t shown = r->top && r->top < n ? (size_t)r->top : n;
	printf("%s view, %s bytes, by %s; sampling rate %.0f bytes%s; %g%% intervals\n",
	       hv_kind_name(o->view), hv_value_name(o->value), hv_by_name(o->by),
	       hv_rate(v), hv_mixed_rates(v) ? " (merged: several rates)" : "",
	       100 * o->level);
	if (hv_view_approximate(v))
		printf("note: this profile lacks allocprof's sample counts; sample counts "
		       "and intervals are approximate\n");
	printf("%10s %-24s %7s %9s %-20s %8s %-6s %s\n", "bytes", "interval",
	       "share", "objects", "interval", "samples", "ci", hv_by_name(o->by));
	for (size_t i = 0; i < shown; i++) {
		const hv_site *s = hv_site_at(v, i);
		char where[512] = "";
		if (o->by == HV_BY_FUNCTION && *s->file)
			snprintf(where, sizeof where, "%s:%lld", s->file,
				 (long long)s->line);
		print_row(&s->stat, t->bytes, s->name, where);
	}
	if (shown < n)
		printf("%10s ... %zu more sites (--top 0 shows all)\n", "", n - shown);
	print_row(t, t->bytes, "total", NULL);
	printf("ci: nb = exact negative binomial (bytes) / Poisson (objects), "
	       "normal = Horvitz-Thompson normal, exact = no sampling error\n");
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

static void print_hist_text(const char *name, const ap_hist_snap *h)
{
	uint64_t q[4], mn = 0, mx = 0;
	char b[32];
	printf("\n%s: %llu allocations (HT-weighted)\n", name,
	       (unsigned long long)ap_hist_snap_count(h));
	if (ap_hist_snap_values_at_quantiles(h, quantiles, 4, q) ||
	    ap_hist_snap_min(h, &mn) || ap_hist_snap_max(h, &mx)) {
		printf("  (empty)\n");
		return;
	}
	fmt_value(name, mn, b, sizeof b);
	printf("  min %s", b);
	for (size_t i = 0; i < 4; i++) {
		fmt_value(name, q[i], b, sizeof b);
		printf("  p%g %s", 100 * quantiles[i], b);
	}
	fmt_value(name, mx, b, sizeof b);
	printf("  max %s\n", b);
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
		printf("  >= %-10s %-40.*s %llu\n", lo, width > 0 ? width : 1,
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

/* Show every histogram comment; returns the number shown. */
static size_t show_sizes(const ap_profile *p, json_writer *w)
{
	size_t shown = 0;
	for (size_t i = 0; i < p->ncomments; i++) {
		char *name;
		ap_hist_snap *h;
		int rc = ap_profile_hist_comment_decode(
			ap_profile_string(p, p->comments[i]), NULL, &name, &h);
		if (rc == AP_ECORRUPT)
			fprintf(stderr, "allocprof: warning: a histogram comment is "
					"malformed; skipped\n");
		if (rc)
			continue;
		if (w)
			json_hist(w, name, h);
		else
			print_hist_text(name, h);
		shown++;
		free(name);
		ap_hist_snap_destroy(h);
	}
	if (!shown && !w)
		printf("\n(no size or lifetime distributions in this profile)\n");
	return shown;
}

static void print_json(const hv_view *v, const struct ropts *r,
		       const ap_profile *p)
{
	const hv_options *o = hv_view_options(v);
	const hv_stat *t = hv_total(v);
	json_writer w;
	json_init(&w, stdout);
	json_begin_object(&w);
	vc_json_view(&w, o);
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
		show_sizes(p, &w);
		json_end_object(&w);
	}
	json_end_object(&w);
	fputc('\n', stdout);
}

int ap_cmd_report(int argc, char **argv)
{
	struct ropts r;
	memset(&r, 0, sizeof r);
	int rc = parse(argc, argv, &r);
	if (rc >= 0)
		return rc;
	char err[1024];
	ap_profile *p;
	hv_view *v;
	const char *const *paths = (const char *const *)argv + optind;
	size_t n = (size_t)(argc - optind);
	if (hv_load_symbolized(paths, n, r.hv.symbolize, &p, err, sizeof err)) {
		ap_cli_error("%s", err);
		return AP_EXIT_INPUT;
	}
	rc = hv_build(p, &r.hv, &v, err, sizeof err);
	if (rc) {
		ap_profile_destroy(p);
		if (n == 1)
			ap_cli_error("%s: %s", paths[0], err);
		else
			ap_cli_error("%s", err);
		return rc == AP_EINVAL && (r.hv.focus || r.hv.ignore) &&
				       !strncmp(err, "bad ", 4)
			       ? AP_EXIT_USAGE
			       : AP_EXIT_INPUT;
	}
	if (r.json) {
		print_json(v, &r, p);
	} else {
		print_table(v, &r);
		if (r.sizes)
			show_sizes(p, NULL);
	}
	hv_destroy(v);
	ap_profile_destroy(p);
	if (fflush(stdout) || ferror(stdout)) {
		ap_cli_error("writing the report: %s", strerror(errno));
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}
