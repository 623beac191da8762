/*
 * cmd_diff.c: allocprof diff: per-site change between two profiles (NEW -
 * BASE) with a confidence interval for the change and a marker where the
 * change is statistically significant (the interval excludes 0).
 *
 * Both profiles are loaded into views with the same options, sites are
 * matched by their display key (function, function + line, or whole
 * stack), and a site missing on one side counts as zero there, with the
 * honest caveat that "no sample" only bounds it (diffstat.h,
 * vu_empty_upper). The interval method is diffstat.c's: normal with added
 * variances when both sides have many samples, else a conservative
 * combination of the two exact intervals at level sqrt(L).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "heapview.h"
#include "json.h"
#include "cmdopts.h"
#include "diffstat.h"
#include "report.h"

static const char diff_usage[] =
	"usage: allocprof diff [--alloc|--inuse] [--requested|--usable]\n"
	"                      [--by function|line|stack] [--level L] [--top N]\n"
	"                      [--significant] [--json] [--skip REGEX] [--no-skip]\n"
	"                      [--full-names] BASE NEW\n"
	"\n"
	"Per-site change NEW - BASE in estimated bytes, with a confidence\n"
	"interval for the change at level L (default 0.95). Sites are sorted by\n"
	"the size of the change; a site seen in only one profile counts as 0 in\n"
	"the other. '*' marks a change whose interval excludes 0, i.e. one that\n"
	"is significant at level L. The last line is the change of the total.\n"
	"\n"
	"How the interval is computed (the profiles are independent samples):\n"
	"  - both sides with %d or more samples (where report switches to\n"
	"    the normal interval): normal interval, the HT variance\n"
	"    estimates of the two sides add;\n"
	"  - otherwise: each side's exact interval (negative binomial, as in\n"
	"    'allocprof report') at level sqrt(L), combined as\n"
	"    [lo_new - hi_base, hi_new - lo_base]; both cover at once with\n"
	"    probability >= L, so the result is conservative;\n"
	"  - a side with no sample is taken as 0 with an upper bound of about\n"
	"    R*ln(2/(1-sqrt(L))) bytes at sampling rate R (a site can hide that\n"
	"    much without being sampled);\n"
	"  - profiles recorded at rate 1 are exact: the change has no error.\n"
	"Among many sites about (1-L) of unchanged ones are still flagged by\n"
	"chance: at 95%%, expect 1 false '*' in 20 unchanged sites.\n"
	"\n"
	"  --inuse         bytes still allocated at the dump (default)\n"
	"  --alloc         all bytes allocated over the run\n"
	"  --requested     requested sizes (default); --usable: usable sizes\n"
	"  --by KEY        function (default), line or stack\n"
	"  --focus RE      keep samples with a function matching RE (POSIX ERE)\n"
	"  --ignore RE     drop samples with a function matching RE\n"
	"  --level L       confidence level in (0,1) (default 0.95)\n"
	"  --top N         print only the N largest changes (default: all)\n"
	"  --significant   print only sites whose change is significant\n"
	"  --json          one JSON object instead of the table\n"
	"  --help          this text\n"
	VC_FRAME_HELP
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 unreadable or malformed profile.\n";

/* The joined sites (diffstat.h) and the paths they came from. */
struct diff_run {
	vu_join j;
	const char *base_path, *new_path;
};

static bool row_shown(const vu_row *row, bool only_sig)
{
	return !only_sig || row->d.significant;
}

static void signed_bytes(double b, char *buf, size_t n)
{
	char tmp[40];
	ap_cli_format_bytes(b, AP_BYTES_FIXED, tmp, sizeof tmp);
	snprintf(buf, n, "%s%s", b > 0 ? "+" : "", tmp);
}

static void print_row(const vu_row *row, const hv_stat *b,
		      const hv_stat *n)
{
	char ch[48], lo[48], hi[48], bb[40], nb[40], rel[16], iv[112];
	signed_bytes(row->d.change, ch, sizeof ch);
	if (isnan(row->d.lo)) {
		snprintf(iv, sizeof iv, "[n/a]");
	} else {
		signed_bytes(row->d.lo, lo, sizeof lo);
		signed_bytes(row->d.hi, hi, sizeof hi);
		snprintf(iv, sizeof iv, "[%s, %s]", lo, hi);
	}
	ap_cli_format_bytes(b ? b->bytes : 0, AP_BYTES_FIXED, bb, sizeof bb);
	ap_cli_format_bytes(n ? n->bytes : 0, AP_BYTES_FIXED, nb, sizeof nb);
	double ratio = b && b->bytes > 0 && n ? n->bytes / b->bytes : 0;
	if (ratio >= 10) /* "+65486%" reads worse than "655x" */
		snprintf(rel, sizeof rel, "%.0fx", ratio);
	else if (b && b->bytes > 0)
		snprintf(rel, sizeof rel, "%+.0f%%",
			 100.0 * row->d.change / b->bytes);
	else
		snprintf(rel, sizeof rel, n && n->bytes > 0 ? "new" : "-");
	char samples[48];
	snprintf(samples, sizeof samples, "%llu/%llu",
		 (unsigned long long)(b ? b->samples : 0),
		 (unsigned long long)(n ? n->samples : 0));
	printf("%c %12s  %-28s %11s %11s %6s %11s  %s\n",
	       row->d.significant ? '*' : ' ', ch, iv, bb, nb, rel, samples,
	       row->name);
}

static void print_table(const struct diff_run *r, size_t top, bool only_sig)
{
	const hv_options *o = hv_view_options(r->j.vb);
	printf("allocprof diff: %s bytes (%s sizes) by %s, NEW - BASE with "
	       "%g%% intervals\n",
	       o->view == HV_ALLOC ? "allocated" : "in-use",
	       hv_value_name(o->value), hv_by_name(o->by), 100 * r->j.level);
	printf("  base: %s (rate %.0f%s)\n", r->base_path, hv_rate(r->j.vb),
	       hv_mixed_rates(r->j.vb) ? ", mixed" : "");
	printf("  new:  %s (rate %.0f%s)\n", r->new_path, hv_rate(r->j.vn),
	       hv_mixed_rates(r->j.vn) ? ", mixed" : "");
	if (hv_view_approximate(r->j.vb) || hv_view_approximate(r->j.vn))
		printf("  note: a profile lacks allocprof's sample data; "
		       "intervals are approximate\n");
	printf("  * = the interval excludes 0: significant at %g%%\n\n",
	       100 * r->j.level);
	char ivh[32];
	snprintf(ivh, sizeof ivh, "%g%% interval", 100 * r->j.level);
	printf("  %12s  %-28s %11s %11s %6s %11s  %s\n", "change", ivh, "base",
	       "new", "rel", "samples", "site");
	size_t shown = 0, sig = 0;
	for (size_t i = 0; i < r->j.nrows; i++) {
		const vu_row *row = &r->j.rows[i];
		sig += row->d.significant;
		if (!row_shown(row, only_sig) || (top && shown >= top))
			continue;
		print_row(row, row->base ? &row->base->stat : NULL,
			  row->nw ? &row->nw->stat : NULL);
		shown++;
	}
	print_row(&r->j.total, &r->j.total_base, &r->j.total_new);
	printf("\n%zu sites, %zu with a significant change", r->j.nrows, sig);
	if (shown < r->j.nrows)
		printf(" (%zu shown)", shown);
	printf("\n");
}

static void json_side(json_writer *w, const hv_view *v, const hv_stat *s,
		      double level)
{
	hv_stat f = {0};
	if (s)
		f = *s;
	hv_stat_finish(&f, level);
	bool empty = !f.samples && !(hv_rate(v) <= 1 && !hv_mixed_rates(v));
	/* Whole bytes, rounded as report rounds them, so the two agree. */
	json_begin_object(w);
	json_key(w, "bytes");
	json_number(w, round(f.bytes));
	json_key(w, "bytes_lo");
	json_number(w, empty ? 0 : round(f.bytes_lo));
	json_key(w, "bytes_hi");
	json_number(w, round(empty ? f.bytes + vu_empty_upper(hv_rate(v), level)
				   : f.bytes_hi));
	json_key(w, "objects");
	json_number(w, round(f.objects));
	json_key(w, "samples");
	json_uint(w, f.samples);
	json_key(w, "interval");
	json_string(w, empty ? "none sampled" : hv_method_name(f.method));
	json_end_object(w);
}

static void json_change(json_writer *w, const struct diff_run *r,
			const vu_row *row, const hv_stat *b,
			const hv_stat *n)
{
	json_key(w, "base");
	json_side(w, r->j.vb, b, r->j.level);
	json_key(w, "new");
	json_side(w, r->j.vn, n, r->j.level);
	/* The interval is rounded outwards to whole bytes. */
	json_key(w, "change");
	json_number(w, round(row->d.change));
	json_key(w, "change_lo");
	json_number(w, floor(row->d.lo));
	json_key(w, "change_hi");
	json_number(w, ceil(row->d.hi));
	json_key(w, "relative");
	json_number(w, b && b->bytes > 0 ? row->d.change / b->bytes : (double)(double)NAN);
	json_key(w, "significant");
	json_bool(w, row->d.significant);
	json_key(w, "method");
	json_string(w, vu_method_name(row->d.method));
}

static void json_site(json_writer *w, const struct diff_run *r,
		      const vu_row *row)
{
	const hv_site *s = row->nw ? row->nw : row->base;
	json_begin_object(w);
	json_key(w, "name");
	json_string(w, s->name);
	json_key(w, "function");
	json_string(w, s->function);
	json_key(w, "file");
	json_string(w, s->file);
	json_key(w, "line");
	json_int(w, s->line);
	json_key(w, "stack");
	json_begin_array(w);
	for (size_t k = 0; k < s->nstack; k++)
		json_string(w, s->stack[k].function);
	json_end_array(w);
	json_change(w, r, row, row->base ? &row->base->stat : NULL,
		    row->nw ? &row->nw->stat : NULL);
	json_end_object(w);
}

static void json_profile(json_writer *w, const char *path, const hv_view *v)
{
	json_begin_object(w);
	json_key(w, "path");
	json_string(w, path);
	json_key(w, "rate");
	json_number(w, hv_rate(v));
	json_key(w, "mixed_rates");
	json_bool(w, hv_mixed_rates(v));
	json_key(w, "approximate");
	json_bool(w, hv_view_approximate(v));
	json_end_object(w);
}

static int print_json(const struct diff_run *r, size_t top, bool only_sig)
{
	const hv_options *o = hv_view_options(r->j.vb);
	json_writer w;
	json_init(&w, stdout);
	json_begin_object(&w);
	report_json_view(&w, o);
	json_key(&w, "level");
	json_number(&w, r->j.level);
	json_key(&w, "base");
	json_profile(&w, r->base_path, r->j.vb);
	json_key(&w, "new");
	json_profile(&w, r->new_path, r->j.vn);
	json_key(&w, "total");
	json_begin_object(&w);
	json_change(&w, r, &r->j.total, &r->j.total_base, &r->j.total_new);
	json_end_object(&w);
	json_key(&w, "sites");
	json_begin_array(&w);
	size_t shown = 0;
	for (size_t i = 0; i < r->j.nrows; i++) {
		if (!row_shown(&r->j.rows[i], only_sig) || (top && shown >= top))
			continue;
		json_site(&w, r, &r->j.rows[i]);
		shown++;
	}
	json_end_array(&w);
	json_end_object(&w);
	fputc('\n', stdout);
	return json_ok(&w) ? 0 : -1;
}

static int parse_by(const char *s, hv_by *out)
{
	if (!strcmp(s, "function"))
		*out = HV_BY_FUNCTION;
	else if (!strcmp(s, "line"))
		*out = HV_BY_LINE;
	else if (!strcmp(s, "stack"))
		*out = HV_BY_STACK;
	else
		return -1;
	return 0;
}

struct diff_args {
	hv_options o;
	uint64_t top;
	bool json, only_sig;
};

/* Options into a; returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	enum { OPT_BY = VC_OPT_END, OPT_TOP, OPT_SIG, OPT_JSON };
	static const struct option longopts[] = {
		VC_VIEW_LONGOPTS,
		{"by", required_argument, NULL, OPT_BY},
		{"top", required_argument, NULL, OPT_TOP},
		{"significant", no_argument, NULL, OPT_SIG},
		{"json", no_argument, NULL, OPT_JSON},
		{NULL, 0, NULL, 0}};
	opterr = 0;
	optind = 1;
	int c, rc;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			printf(diff_usage, AP_NB_MAX_SAMPLES);
			return AP_EXIT_OK;
		} else if (c == OPT_SIG) {
			a->only_sig = true;
		} else if (c == OPT_JSON) {
			a->json = true;
		} else if (c == OPT_BY) {
			if (parse_by(optarg, &a->o.by)) {
				ap_cli_error("--by wants function, line or "
					     "stack, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
		} else if (c == OPT_TOP) {
			if (ap_cli_parse_u64(optarg, &a->top)) {
				ap_cli_error("--top wants a non-negative "
					     "integer, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
		} else if ((rc = vc_view_option(c, optarg, &a->o)) < 0) {
			return vc_bad_option("diff", argv);
		} else if (rc) {
			return rc;
		}
	}
	if (argc - optind != 2) {
		ap_cli_error("want exactly two profiles, BASE and NEW, got %d "
			     "(see 'allocprof diff --help')", argc - optind);
		return AP_EXIT_USAGE;
	}
	if (!strcmp(argv[optind], "-") && !strcmp(argv[optind + 1], "-")) {
		ap_cli_error("BASE and NEW cannot both be standard input");
		return AP_EXIT_USAGE;
	}
	return -1;
}

int ap_cmd_diff(int argc, char **argv)
{
	struct diff_args a = {0};
	hv_options_default(&a.o);
	int rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	struct diff_run r = {.base_path = argv[optind],
			     .new_path = argv[optind + 1]};
	hv_view *vb = NULL, *vn = NULL;
	if ((rc = vc_open((const char *const *)&r.base_path, 1, &a.o, &vb)) ||
	    (rc = vc_open((const char *const *)&r.new_path, 1, &a.o, &vn)))
		goto out;
	if (vu_join_views(vb, vn, a.o.level, &r.j)) {
		ap_cli_error("out of memory");
		rc = AP_EXIT_INPUT;
		goto out;
	}
	if (a.json) {
		if (print_json(&r, a.top, a.only_sig))
			rc = AP_EXIT_INPUT;
	} else {
		print_table(&r, a.top, a.only_sig);
	}
	if (fflush(stdout) || ferror(stdout)) {
		ap_cli_error("writing the output failed");
		rc = AP_EXIT_INPUT;
	}
out:
	vu_join_free(&r.j);
	hv_destroy(vb);
	hv_destroy(vn);
	return rc;
}
