/*
 * cmd_diff.c: allocprof diff: per-site change between two profiles (NEW -
 * BASE), or between several runs of each, with a p-value and a
 * confidence interval for the change, Benjamini-Hochberg q-values across
 * the sites, and a marker where the q-value is at most the false
 * discovery rate (docs/DIFF.md).
 *
 * Every profile is loaded into its own view with the same options, sites
 * are matched by their display key (function, function + line, or whole
 * stack); a site missing in a run has no sample there, bounded by what can
 * hide unseen (the zero-sample rule). The tests are diffstat.c's, which
 * calls allocprof/difftest.h.
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
	"                      [--by function|line|stack] [--level L] [--fdr Q]\n"
	"                      [--top N] [--significant] [--json] [--skip REGEX]\n"
	"                      [--no-skip] [--full-names] BASE NEW\n"
	"       allocprof diff [options] --base-runs N BASE1..BASEN NEW1..NEWM\n"
	"\n"
	"Per-site change NEW - BASE in estimated bytes, with a p-value of \"no\n"
	"change\" and a confidence interval for the change at level L (default\n"
	"0.95). Sites are sorted by the size of the change; the last line is\n"
	"the change of the total (tested on its own). Each site gets the test\n"
	"that fits where its uncertainty is (docs/DIFF.md): exact (rate 1),\n"
	"wald (many samples), conditional (small objects: exact binomial test\n"
	"given both sides' samples), split (large near-certain objects beside\n"
	"small ones). The p-values are adjusted across sites by\n"
	"Benjamini-Hochberg: '*' marks a site whose q-value is at most Q\n"
	"(--fdr, default 0.05), so that among the flagged sites the expected\n"
	"fraction of unchanged ones is at most Q.\n"
	"\n"
	"Several runs per side (--base-runs N: the first N profiles are BASE\n"
	"runs, the others NEW runs) compare the per-run means by Welch's test,\n"
	"counting the program's run-to-run variation too.\n"
	"\n"
	"BASE and NEW may be two dumps of one process (interval or peak\n"
	"dumps): with --alloc the change is their exact delta, what was\n"
	"allocated in between (shared samples cancel); --inuse is refused.\n"
	"\n"
	"  --inuse         bytes still allocated at the dump (default)\n"
	"  --alloc         all bytes allocated over the run\n"
	"  --requested     requested sizes (default); --usable: usable sizes\n"
	"  --by KEY        function (default), line or stack\n"
	"  --focus RE      keep samples with a function matching RE (POSIX ERE)\n"
	"  --ignore RE     drop samples with a function matching RE\n"
	"  --level L       confidence level in (0,1) (default 0.95)\n"
	"  --fdr Q         false discovery rate in (0,1) (default 0.05)\n"
	"  --base-runs N   the first N profiles are BASE runs (default 1)\n"
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
	char *const *paths; /* nb BASE paths, then nn NEW paths */
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

/* A p- or q-value in a narrow column. */
static void pvalue(double p, char *buf, size_t n)
{
	if (isnan(p))
		snprintf(buf, n, "-");
	else if (p < 1e-4)
		snprintf(buf, n, "<1e-4");
	else
		snprintf(buf, n, "%.4f", p);
}

static void print_row(const struct diff_run *r, const vu_row *row)
{
	hv_stat b, n;
	vu_side_mean(&row->base, r->j.nb, r->j.level, &b);
	vu_side_mean(&row->nw, r->j.nn, r->j.level, &n);
	char ch[48], lo[48], hi[48], bb[40], nb[40], rel[16], iv[112];
	char pv[16], qv[16];
	signed_bytes(row->d.change, ch, sizeof ch);
	if (isnan(row->d.lo)) {
		snprintf(iv, sizeof iv, "[n/a]");
	} else {
		signed_bytes(row->d.lo, lo, sizeof lo);
		signed_bytes(row->d.hi, hi, sizeof hi);
		snprintf(iv, sizeof iv, "[%s, %s]", lo, hi);
	}
	ap_cli_format_bytes(b.bytes, AP_BYTES_FIXED, bb, sizeof bb);
	ap_cli_format_bytes(n.bytes, AP_BYTES_FIXED, nb, sizeof nb);
	double ratio = b.bytes > 0 ? n.bytes / b.bytes : 0;
	if (ratio >= 10) /* "+65486%" reads worse than "655x" */
		snprintf(rel, sizeof rel, "%.0fx", ratio);
	else if (b.bytes > 0)
		snprintf(rel, sizeof rel, "%+.0f%%",
			 100.0 * row->d.change / b.bytes);
	else
		snprintf(rel, sizeof rel, n.bytes > 0 ? "new" : "-");
	char samples[48];
	snprintf(samples, sizeof samples, "%llu/%llu",
		 (unsigned long long)b.samples, (unsigned long long)n.samples);
	pvalue(row->d.p, pv, sizeof pv);
	bool total = row == &r->j.total;
	if (total)
		snprintf(qv, sizeof qv, "-");
	else
		pvalue(row->d.q, qv, sizeof qv);
	printf("%c %12s  %-28s %11s %11s %6s %7s %7s %11s  %s\n",
	       row->d.significant ? '*' : ' ', ch, iv, bb, nb, rel, pv, qv,
	       samples, row->name);
}

static void print_source(const char *what, const struct diff_run *r,
			 size_t from, size_t n, const hv_view *const *v)
{
	for (size_t i = 0; i < n; i++)
		printf("  %s %s (rate %.0f%s)\n", i ? "     " : what,
		       r->paths[from + i], hv_rate(v[i]),
		       hv_mixed_rates(v[i]) ? ", mixed" : "");
}

static bool any_approximate(const vu_join *j)
{
	for (size_t i = 0; i < j->nb; i++)
		if (hv_view_approximate(j->vb[i]))
			return true;
	for (size_t i = 0; i < j->nn; i++)
		if (hv_view_approximate(j->vn[i]))
			return true;
	return false;
}

static void print_table(const struct diff_run *r, size_t top, bool only_sig)
{
	const hv_options *o = hv_view_options(r->j.vb[0]);
	printf("allocprof diff: %s bytes (%s sizes) by %s, NEW - BASE with "
	       "%g%% intervals\n",
	       o->view == HV_ALLOC ? "allocated" : "in-use",
	       hv_value_name(o->value), hv_by_name(o->by), 100 * r->j.level);
	print_source("base:", r, 0, r->j.nb, r->j.vb);
	print_source("new: ", r, r->j.nb, r->j.nn, r->j.vn);
	if (r->j.nb > 1 || r->j.nn > 1)
		printf("  %zu BASE and %zu NEW runs: means per run, Welch's "
		       "test\n", r->j.nb, r->j.nn);
	if (r->j.delta)
		printf("  BASE and NEW are dumps of one process: the exact "
		       "delta, what was allocated in between\n");
	if (any_approximate(&r->j))
		printf("  note: a profile lacks allocprof's sample data; "
		       "intervals are approximate\n");
	printf("  * = q-value <= %g (Benjamini-Hochberg across the sites); "
	       "the total is tested on its own\n\n", r->j.fdr);
	char ivh[32];
	snprintf(ivh, sizeof ivh, "%g%% interval", 100 * r->j.level);
	printf("  %12s  %-28s %11s %11s %6s %7s %7s %11s  %s\n", "change", ivh,
	       "base", "new", "rel", "p", "q", "samples", "site");
	size_t shown = 0, sig = 0;
	for (size_t i = 0; i < r->j.nrows; i++) {
		const vu_row *row = &r->j.rows[i];
		sig += row->d.significant;
		if (!row_shown(row, only_sig) || (top && shown >= top))
			continue;
		print_row(r, row);
		shown++;
	}
	print_row(r, &r->j.total);
	printf("\n%zu sites, %zu with a significant change", r->j.nrows, sig);
	if (shown < r->j.nrows)
		printf(" (%zu shown)", shown);
	printf("\n");
}

/* A bound that may be infinite: JSON null ("unbounded"). */
static void json_bound(json_writer *w, double x)
{
	if (isinf(x))
		json_null(w);
	else
		json_number(w, round(x));
}

static void json_side(json_writer *w, const hv_stat *sum, size_t m,
		      double level)
{
	hv_stat f;
	vu_side_mean(sum, m, level, &f);
	/* Whole bytes, rounded as report rounds them, so the two agree. */
	json_begin_object(w);
	json_key(w, "bytes");
	json_number(w, round(f.bytes));
	json_key(w, "bytes_lo");
	json_number(w, round(f.bytes_lo));
	json_key(w, "bytes_hi");
	json_bound(w, f.bytes_hi);
	json_key(w, "objects");
	json_number(w, round(f.objects));
	json_key(w, "samples");
	json_uint(w, f.samples);
	json_key(w, "interval");
	json_string(w, hv_method_name(f.method));
	json_end_object(w);
}

static void json_change(json_writer *w, const struct diff_run *r,
			const vu_row *row, bool in_family)
{
	json_key(w, "base");
	json_side(w, &row->base, r->j.nb, r->j.level);
	json_key(w, "new");
	json_side(w, &row->nw, r->j.nn, r->j.level);
	hv_stat b;
	vu_side_mean(&row->base, r->j.nb, r->j.level, &b);
	/* The interval is rounded outwards to whole bytes. */
	json_key(w, "change");
	json_number(w, round(row->d.change));
	json_key(w, "change_lo");
	json_number(w, floor(row->d.lo));
	json_key(w, "change_hi");
	json_number(w, ceil(row->d.hi));
	json_key(w, "relative");
	json_number(w, b.bytes > 0 ? row->d.change / b.bytes : (double)NAN);
	json_key(w, "p");
	json_number(w, row->d.p);
	json_key(w, "q");
	json_number(w, in_family ? row->d.q : (double)NAN);
	json_key(w, "significant");
	json_bool(w, row->d.significant);
	json_key(w, "method");
	json_string(w, r->j.delta ? "delta" : ap_diff_method_name(row->d.method));
	if (row->d.method == AP_DIFF_WELCH) {
		json_key(w, "df");
		json_number(w, row->d.df);
	}
}

static void json_site(json_writer *w, const struct diff_run *r,
		      const vu_row *row)
{
	const hv_site *s = row->site;
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
	json_change(w, r, row, true);
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

/* "base"/"new": one profile object, or an array of them for runs. */
static void json_profiles(json_writer *w, const char *key,
			  const struct diff_run *r, size_t from, size_t n,
			  const hv_view *const *v)
{
	json_key(w, key);
	if (n > 1)
		json_begin_array(w);
	for (size_t i = 0; i < n; i++)
		json_profile(w, r->paths[from + i], v[i]);
	if (n > 1)
		json_end_array(w);
}

static int print_json(const struct diff_run *r, size_t top, bool only_sig)
{
	const hv_options *o = hv_view_options(r->j.vb[0]);
	json_writer w;
	json_init(&w, stdout);
	json_begin_object(&w);
	report_json_view(&w, o);
	json_key(&w, "level");
	json_number(&w, r->j.level);
	json_key(&w, "fdr");
	json_number(&w, r->j.fdr);
	json_key(&w, "delta");
	json_bool(&w, r->j.delta);
	json_profiles(&w, "base", r, 0, r->j.nb, r->j.vb);
	json_profiles(&w, "new", r, r->j.nb, r->j.nn, r->j.vn);
	json_key(&w, "total");
	json_begin_object(&w);
	json_change(&w, r, &r->j.total, false);
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
	uint64_t top, base_runs;
	double fdr;
	bool json, only_sig;
};

static int parse_fdr(const char *s, double *out)
{
	char *end;
	double q = strtod(s, &end);
	if (end == s || *end || !(q > 0 && q < 1)) {
		ap_cli_error("--fdr wants a number in (0,1), not '%s'", s);
		return AP_EXIT_USAGE;
	}
	*out = q;
	return -1;
}

/* The profile count against --base-runs; -1 to continue. */
static int check_counts(int nargs, const struct diff_args *a)
{
	if (a->base_runs == 0 && nargs != 2) {
		ap_cli_error("want two profiles, BASE and NEW, got %d (several "
			     "runs per side need --base-runs N; see 'allocprof "
			     "diff --help')", nargs);
		return AP_EXIT_USAGE;
	}
	if (a->base_runs > 0 && (uint64_t)nargs <= a->base_runs) {
		ap_cli_error("--base-runs %llu wants at least %llu profiles "
			     "(the BASE runs and one NEW), got %d",
			     (unsigned long long)a->base_runs,
			     (unsigned long long)a->base_runs + 1, nargs);
		return AP_EXIT_USAGE;
	}
	return -1;
}

/* Options into a; returns -1 to continue, else the exit status. */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	enum { OPT_BY = VC_OPT_END, OPT_TOP, OPT_SIG, OPT_JSON, OPT_FDR,
	       OPT_RUNS };
	static const struct option longopts[] = {
		VC_VIEW_LONGOPTS,
		{"by", required_argument, NULL, OPT_BY},
		{"top", required_argument, NULL, OPT_TOP},
		{"significant", no_argument, NULL, OPT_SIG},
		{"json", no_argument, NULL, OPT_JSON},
		{"fdr", required_argument, NULL, OPT_FDR},
		{"base-runs", required_argument, NULL, OPT_RUNS},
		{NULL, 0, NULL, 0}};
	opterr = 0;
	optind = 1;
	int c, rc;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			fputs(diff_usage, stdout);
			return AP_EXIT_OK;
		} else if (c == OPT_SIG) {
			a->only_sig = true;
		} else if (c == OPT_JSON) {
			a->json = true;
		} else if (c == OPT_FDR) {
			if ((rc = parse_fdr(optarg, &a->fdr)) >= 0)
				return rc;
		} else if (c == OPT_BY) {
			if (parse_by(optarg, &a->o.by)) {
				ap_cli_error("--by wants function, line or "
					     "stack, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
		} else if (c == OPT_TOP || c == OPT_RUNS) {
			uint64_t *dst = c == OPT_TOP ? &a->top : &a->base_runs;
			if (ap_cli_parse_u64(optarg, dst) ||
			    (c == OPT_RUNS && (*dst == 0 || *dst > 4096))) {
				ap_cli_error("--%s wants %s integer, not '%s'",
					     c == OPT_TOP ? "top" : "base-runs",
					     c == OPT_TOP ? "a non-negative"
							  : "a positive", optarg);
				return AP_EXIT_USAGE;
			}
		} else if ((rc = vc_view_option(c, optarg, &a->o)) < 0) {
			return vc_bad_option("diff", argv);
		} else if (rc) {
			return rc;
		}
	}
	if ((rc = check_counts(argc - optind, a)) >= 0)
		return rc;
	int stdin_uses = 0;
	for (int i = optind; i < argc; i++)
		stdin_uses += !strcmp(argv[i], "-");
	if (stdin_uses > 1) {
		ap_cli_error("only one profile can be standard input");
		return AP_EXIT_USAGE;
	}
	return -1;
}

int ap_cmd_diff(int argc, char **argv)
{
	struct diff_args a = {.fdr = AP_DIFF_FDR_DEFAULT};
	hv_options_default(&a.o);
	int rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	size_t n = (size_t)(argc - optind);
	size_t nb = a.base_runs ? (size_t)a.base_runs : 1;
	struct diff_run r = {.paths = argv + optind};
	hv_view **v = calloc(n, sizeof *v);
	if (!v) {
		ap_cli_error("out of memory");
		return AP_EXIT_INPUT;
	}
	bool delta = false;
	rc = 0;
	if (n == 2)
		rc = vc_open_pair(r.paths[0], r.paths[1], &a.o, &v[0], &v[1],
				  &delta);
	for (size_t i = 0; n > 2 && !rc && i < n; i++)
		rc = vc_open((const char *const *)&r.paths[i], 1, &a.o, &v[i]);
	if (rc)
		goto out;
	if (delta ? vu_join_delta((const hv_view *const *)v, a.o.level, a.fdr,
				  &r.j)
		  : vu_join_views((const hv_view *const *)v, nb,
				  (const hv_view *const *)v + nb, n - nb,
				  a.o.level, a.fdr, &r.j)) {
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
	for (size_t i = 0; i < n; i++)
		hv_destroy(v[i]);
	free(v);
	return rc;
}
