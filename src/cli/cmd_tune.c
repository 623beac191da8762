/*
 * cmd_tune.c: `allocprof tune`: per-size-class sampling rates from
 * training profiles (docs/STATISTICS.md section 10), written as a sample
 * table the runtime loads with sample_table=FILE; and `--advise`: the one
 * rate that meets a precision target for every large site. tuneprof.h
 * reads the profiles; allocprof/tune.h solves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/estimate.h"
#include "allocprof/sample_table.h"
#include "allocprof/sampler.h"
#include "allocprof/tune.h"
#include "cli_util.h"
#include "commands.h"
#include "json.h"
#include "tuneprof.h"

/* Default cost of one sample, ns: BENCHMARKS.md "Runtime overhead", cost
 * per sample at a stack depth of ~35 frames (479 ns; 216 ns at depth 3),
 * rounded up. --sample-cost replaces it with a figure for your program. */
#define DEFAULT_SAMPLE_COST_NS 500.0

static void tune_usage(FILE *f)
{
	fputs("usage: allocprof tune [--objective alloc|inuse|objects|mix]\n"
	      "                      [--budget SAMPLES_PER_SEC | --overhead PCT]\n"
	      "                      [--rate R] [--memory BYTES] [--floor F]\n"
	      "                      [--base-rate R] [--sample-cost NS] [-o TABLE]\n"
	      "                      [--json] PROFILE...\n"
	      "       allocprof tune --advise [--precision PCT] [--confidence PCT]\n"
	      "                      [--min-share PCT] [--alloc|--inuse]\n"
	      "                      [--sample-cost NS] [--json] PROFILE...\n"
	      "\n"
	      "From training profiles (rate 1 or sampled; several are merged) choose\n"
	      "one sampling probability per size class that minimises the variance\n"
	      "of the chosen views for the same expected number of samples, print\n"
	      "the table and its predicted variance against per-byte sampling, and\n"
	      "with -o write it for the runtime: allocprof run -e sample_table=TABLE.\n"
	      "\n"
	      "  --objective V      alloc, inuse, objects, or mix (default: the sum of\n"
	      "                     the three views' variances, each relative to\n"
	      "                     per-byte sampling's)\n"
	      "  --rate R           compare with per-byte sampling at R (default\n"
	      "                     524288); the budget is its expected samples\n"
	      "  --budget S         S samples per second of the profiled run instead\n"
	      "  --overhead PCT     the samples that cost PCT% of one core, at\n"
	      "                     --sample-cost NS per sample (default 500 ns)\n"
	      "  --memory BYTES     at most this many sampled live bytes (expected)\n"
	      "  --floor F          no class below per-byte's odds times F (default 4:\n"
	      "                     no view's variance on any workload exceeds 4x\n"
	      "                     per-byte's at the budget's rate)\n"
	      "  --base-rate R      the table's base rate (default: the budget's\n"
	      "                     per-byte rate / 4); no class is sampled more\n"
	      "                     often than per-byte sampling at R would\n"
	      "  -o TABLE           write the sample table\n"
	      "  --advise           print the largest rate at which every site above\n"
	      "                     --min-share (default 1%) of the view's bytes has\n"
	      "                     a relative interval half-width of at most\n"
	      "                     --precision (default 5%) at --confidence (95%)\n"
	      "  --alloc, --inuse   the view --advise checks (default inuse)\n"
	      "  --json             JSON output\n"
	      "  -h, --help         this help\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage error, 2 unreadable or invalid input.\n",
	      f);
}

enum objective { OBJ_MIX, OBJ_ALLOC, OBJ_INUSE, OBJ_OBJECTS };

struct opts {
	enum objective obj;
	double rate, budget, overhead, memory, floor, base, cost_ns;
	double precision, confidence, share;
	bool advise, inuse, json;
	const char *out;
};

/* "5%" or "5": a percentage in (0, 100], returned as a fraction. */
static int parse_pct(const char *s, double *out)
{
	char buf[64];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n + 1);
	if (buf[n - 1] == '%')
		buf[n - 1] = '\0';
	if (ap_cli_parse_double(buf, out) || !(*out > 0 && *out <= 100))
		return -1;
	*out /= 100;
	return 0;
}

static int parse_positive(const char *s, double *out)
{
	return ap_cli_parse_double(s, out) || !(*out > 0) || !isfinite(*out) ? -1 : 0;
}

static int set_objective(const char *s, enum objective *o)
{
	static const char *const names[] = {"mix", "alloc", "inuse", "objects"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*o = (enum objective)i;
			return 0;
		}
	return -1;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"objective", required_argument, NULL, 'O'},
		{"budget", required_argument, NULL, 'b'},
		{"overhead", required_argument, NULL, 'H'},
		{"rate", required_argument, NULL, 'r'},
		{"memory", required_argument, NULL, 'm'},
		{"floor", required_argument, NULL, 'f'},
		{"base-rate", required_argument, NULL, 'B'},
		{"sample-cost", required_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{"advise", no_argument, NULL, 'a'},
		{"precision", required_argument, NULL, 'p'},
		{"confidence", required_argument, NULL, 'C'},
		{"min-share", required_argument, NULL, 's'},
		{"alloc", no_argument, NULL, 'A'},
		{"inuse", no_argument, NULL, 'I'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	*o = (struct opts){.obj = OBJ_MIX, .rate = AP_SAMPLER_DEFAULT_RATE,
			   .floor = 4, .cost_ns = DEFAULT_SAMPLE_COST_NS,
			   .precision = 0.05, .confidence = 0.95, .share = 0.01,
			   .inuse = true};
	int c, bad = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'O': bad = set_objective(optarg, &o->obj); break;
		case 'b': bad = parse_positive(optarg, &o->budget); break;
		case 'H': bad = parse_pct(optarg, &o->overhead); break;
		case 'r': bad = parse_positive(optarg, &o->rate) ||
				o->rate > (double)AP_SAMPLER_RATE_MAX; break;
		case 'm': bad = parse_positive(optarg, &o->memory); break;
		case 'f': bad = parse_positive(optarg, &o->floor) || o->floor < 1; break;
		case 'B': bad = parse_positive(optarg, &o->base) ||
				o->base > (double)AP_SAMPLER_RATE_MAX; break;
		case 'c': bad = parse_positive(optarg, &o->cost_ns); break;
		case 'o': o->out = optarg; break;
		case 'a': o->advise = true; break;
		case 'p': bad = parse_pct(optarg, &o->precision); break;
		case 'C': bad = parse_pct(optarg, &o->confidence) || o->confidence >= 1; break;
		case 's': bad = parse_pct(optarg, &o->share); break;
		case 'A': o->inuse = false; break;
		case 'I': o->inuse = true; break;
		case 'j': o->json = true; break;
		case 'h': tune_usage(stdout); return -2;
		default:
			ap_cli_error("bad option '%s' (try --help)", argv[optind - 1]);
			return -1;
		}
		if (bad) {
			ap_cli_error("bad value '%s' for %s (try --help)", optarg,
				     argv[optind - 1]);
			return -1;
		}
	}
	if (o->budget > 0 && o->overhead > 0) {
		ap_cli_error("--budget and --overhead exclude each other");
		return -1;
	}
	if (optind >= argc) {
		ap_cli_error("no input profiles (try --help)");
		return -1;
	}
	return 0;
}

/* A design for the training classes: per-byte, optimal, and the table. */
struct design {
	size_t n;
	ap_tune_class *c;
	double *pb, *popt, *preal;
	uint64_t *rate;
	double budget, r_eq, entries, tot_alloc, tot_inuse, tot_obj;
	uint64_t base, fill_rate; /* fill: sizes the training never saw */
	ap_tune_var vpb, vopt, vreal;
	double r_same;      /* per-byte rate spending the table's samples */
	ap_tune_var vsame;  /* per-byte at r_same */
};

static void design_free(struct design *g)
{
	free(g->c);
	free(g->pb);
	free(g->popt);
	free(g->preal);
	free(g->rate);
}

/* The expected samples the options ask for; -1 (reported) if impossible. */
static double budget_of(const struct opts *o, const tp_data *d,
			const ap_tune_class *c, size_t n)
{
	if (o->budget > 0 || o->overhead > 0) {
		if (!(d->duration_s > 0)) {
			ap_cli_error("the profiles do not say how long they ran: "
				     "use --rate instead of --budget/--overhead");
			return -1;
		}
		return o->budget > 0 ? o->budget * d->duration_s
				     : o->overhead * d->duration_s * 1e9 / o->cost_ns;
	}
	ap_tune_var v;
	double *p = malloc(n * sizeof *p);
	if (!p)
		return -1;
	ap_tune_perbyte(c, n, o->rate, p);
	ap_tune_variance(c, n, p, &v);
	free(p);
	return v.samples;
}

static void objective_weights(const struct opts *o, const ap_tune_var *v,
			      ap_tune_weights *w)
{
	*w = (ap_tune_weights){o->obj == OBJ_ALLOC, o->obj == OBJ_INUSE,
			       o->obj == OBJ_OBJECTS};
	if (o->obj != OBJ_MIX)
		return;
	/* Each view relative to per-byte's variance: a sum of ratios. */
	w->alloc = v->alloc > 0 ? 1 / v->alloc : 0;
	w->inuse = v->inuse > 0 ? 1 / v->inuse : 0;
	w->objects = v->objects > 0 ? 1 / v->objects : 0;
	if (w->alloc + w->inuse + w->objects == 0)
		w->alloc = 1;
}

/* Round each class to the table's grid (keeping the floor's guarantee). */
static void realise(struct design *g)
{
	for (size_t i = 0; i < g->n; i++) {
		double z = g->c[i].size;
		uint64_t r = ap_tune_table_rate(g->popt[i], g->c[i].p_min, z, g->base);
		g->rate[i] = r;
		g->preal[i] = r <= 1 ? 1 : -expm1(z * log1p(-1 / (double)r));
		g->entries += g->c[i].allocs *
			      (g->base <= 1 ? 1 : -expm1(z * log1p(-1 / (double)g->base)));
	}
	ap_tune_variance(g->c, g->n, g->preal, &g->vreal);
	double k = g->r_eq > g->base ? nearbyint(log2(g->r_eq / (double)g->base)) : 0;
	g->fill_rate = g->base << (int)(k < 52 ? k : 52);
	if (g->fill_rate > AP_SAMPLER_RATE_MAX)
		g->fill_rate = AP_SAMPLER_RATE_MAX;
}

static int build_design(const struct opts *o, const tp_data *d, struct design *g)
{
	*g = (struct design){.n = d->ncls};
	g->c = calloc(g->n, sizeof *g->c);
	g->pb = calloc(g->n, sizeof *g->pb);
	g->popt = calloc(g->n, sizeof *g->popt);
	g->preal = calloc(g->n, sizeof *g->preal);
	g->rate = calloc(g->n, sizeof *g->rate);
	if (!g->c || !g->pb || !g->popt || !g->preal || !g->rate) {
		ap_cli_error("out of memory");
		return AP_EXIT_INPUT;
	}
	for (size_t i = 0; i < g->n; i++) {
		g->c[i] = d->cls[i].c;
		g->tot_alloc += g->c[i].allocs * g->c[i].size;
		g->tot_inuse += g->c[i].live * g->c[i].size;
		g->tot_obj += g->c[i].allocs;
	}
	if ((g->budget = budget_of(o, d, g->c, g->n)) < 0)
		return AP_EXIT_USAGE;
	g->r_eq = ap_tune_perbyte_rate(g->c, g->n, g->budget);
	if (!(g->r_eq >= 1)) {
		ap_cli_error("no usable budget (the profiles hold no allocations?)");
		return AP_EXIT_INPUT;
	}
	g->base = o->base > 0 ? (uint64_t)o->base
			      : (g->r_eq >= 8 ? (uint64_t)(g->r_eq / 4) : 1);
	if ((double)g->base > g->r_eq * (1 + 1e-9)) {
		ap_cli_error("--base-rate %llu is above the budget's per-byte rate "
			     "%.0f: the floor could not be met",
			     (unsigned long long)g->base, g->r_eq);
		return AP_EXIT_USAGE;
	}
	ap_tune_perbyte(g->c, g->n, g->r_eq, g->pb);
	ap_tune_variance(g->c, g->n, g->pb, &g->vpb);
	for (size_t i = 0; i < g->n; i++) {
		ap_tune_class *c = &g->c[i];
		c->p_min = ap_tune_floor(c->size, g->r_eq, o->floor);
		c->p_max = g->base <= 1 ? 1 : -expm1(c->size * log1p(-1 / (double)g->base));
		if (c->p_max < c->p_min)
			c->p_max = c->p_min; /* rounding of equal values */
	}
	ap_tune_weights w;
	objective_weights(o, &g->vpb, &w);
	int rc = ap_tune_solve(g->c, g->n, &w, g->budget, o->memory, g->popt, NULL, NULL);
	if (rc == AP_ERANGE) {
		ap_cli_error("the floors alone need more than the budget%s: raise "
			     "the budget or --floor", o->memory > 0 ? " or --memory" : "");
		return AP_EXIT_USAGE;
	}
	if (rc) {
		ap_cli_error("cannot solve: %s", ap_strerror(rc));
		return AP_EXIT_INPUT;
	}
	ap_tune_variance(g->c, g->n, g->popt, &g->vopt);
	realise(g);
	/* Rounding to the grid moves the sample count: compare the table with
	 * per-byte sampling at the rate that spends the same. */
	g->r_same = ap_tune_perbyte_rate(g->c, g->n, g->vreal.samples);
	ap_tune_perbyte(g->c, g->n, g->r_same, g->pb);
	ap_tune_variance(g->c, g->n, g->pb, &g->vsame);
	ap_tune_perbyte(g->c, g->n, g->r_eq, g->pb);
	return 0;
}

/* The table file: header, then one class line per change of rate. */
static void write_table(FILE *f, const struct opts *o, const tp_data *d,
			const struct design *g)
{
	static const char *const objs[] = {"mix", "alloc", "inuse", "objects"};
	uint64_t last = 0, next = 1;
	fprintf(f, "# written by allocprof tune: objective %s, %.6g expected samples "
		"(per-byte rate %.0f), floor %g\n", objs[o->obj], g->budget, g->r_eq,
		o->floor);
	fprintf(f, "# predicted variance / per-byte's at the same samples: alloc %.4g, "
		"inuse %.4g, objects %.4g\n", g->vreal.alloc / g->vsame.alloc,
		g->vreal.inuse / g->vsame.inuse, g->vreal.objects / g->vsame.objects);
	fprintf(f, "%s %d\nbase %llu\n# class MIN_SIZE RATE  (mean size, allocations, "
		"live, probability)\n", AP_SAMPLE_TABLE_MAGIC, AP_SAMPLE_TABLE_VERSION,
		(unsigned long long)g->base);
	for (size_t i = 0; i < g->n; i++) {
		const tp_class *c = &d->cls[i];
		if (c->lo > next && last != g->fill_rate) {
			fprintf(f, "class %llu %llu  # not in the training profiles\n",
				(unsigned long long)next, (unsigned long long)g->fill_rate);
			last = g->fill_rate;
		}
		if (g->rate[i] != last)
			fprintf(f, "class %llu %llu", (unsigned long long)c->lo,
				(unsigned long long)g->rate[i]);
		else
			fprintf(f, "#     %llu %llu", (unsigned long long)c->lo,
				(unsigned long long)g->rate[i]);
		fprintf(f, "  # %.1f %.6g %.6g %.4g\n", g->c[i].size, g->c[i].allocs,
			g->c[i].live, g->preal[i]);
		last = g->rate[i];
		next = c->hi + 1;
	}
	if (next > 1 && last != g->fill_rate)
		fprintf(f, "class %llu %llu  # not in the training profiles\n",
			(unsigned long long)next, (unsigned long long)g->fill_rate);
}

static int save_table(const char *path, const struct opts *o, const tp_data *d,
		      const struct design *g)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		ap_cli_error("out of memory");
		return AP_EXIT_INPUT;
	}
	write_table(f, o, d, g);
	fclose(f);
	int rc = ap_file_write_atomic(path, (const unsigned char *)buf, len, 0666);
	free(buf);
	if (rc) {
		ap_cli_error("%s: %s", path, strerror(errno));
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}

struct view_row {
	const char *name;
	double pb, opt, same, real, total;
};

static void view_rows(const struct design *g, struct view_row r[3])
{
	r[0] = (struct view_row){"alloc", g->vpb.alloc, g->vopt.alloc,
				 g->vsame.alloc, g->vreal.alloc, g->tot_alloc};
	r[1] = (struct view_row){"inuse", g->vpb.inuse, g->vopt.inuse,
				 g->vsame.inuse, g->vreal.inuse, g->tot_inuse};
	r[2] = (struct view_row){"objects", g->vpb.objects, g->vopt.objects,
				 g->vsame.objects, g->vreal.objects, g->tot_obj};
}

static void print_text(const struct opts *o, const struct design *g)
{
	static const char *const objs[] = {"mix", "alloc", "inuse", "objects"};
	struct view_row r[3];
	printf("objective %s; budget %.6g expected samples = per-byte sampling at "
	       "rate %.0f; floor %g; table base rate %llu\n\n", objs[o->obj],
	       g->budget, g->r_eq, o->floor, (unsigned long long)g->base);
	printf("%12s %12s %12s %10s %10s %10s\n", "mean size", "allocs", "live",
	       "per-byte p", "tuned p", "rate");
	for (size_t i = 0; i < g->n; i++)
		printf("%12.1f %12.6g %12.6g %10.4g %10.4g %10llu\n", g->c[i].size,
		       g->c[i].allocs, g->c[i].live, g->pb[i], g->preal[i],
		       (unsigned long long)g->rate[i]);
	view_rows(g, r);
	printf("\npredicted variance of the table / per-byte sampling at rate %.0f "
	       "(the same expected samples, %.6g), and the relative standard\n"
	       "error of each total:\n", g->r_same, g->vreal.samples);
	for (int i = 0; i < 3; i++)
		printf("  %-8s %8.4gx  (%.3g%% -> %.3g%%; unrounded optimum at the "
		       "budget %.4gx)\n", r[i].name, r[i].real / r[i].same,
		       100 * sqrt(r[i].same) / r[i].total,
		       100 * sqrt(r[i].real) / r[i].total, r[i].opt / r[i].pb);
	printf("slow-path entries at the base rate (most thinned away): %.6g\n",
	       g->entries);
}

static void print_json(const struct opts *o, const struct design *g)
{
	static const char *const objs[] = {"mix", "alloc", "inuse", "objects"};
	json_writer w;
	struct view_row r[3];
	json_init(&w, stdout);
	json_begin_object(&w);
	json_key(&w, "objective"); json_string(&w, objs[o->obj]);
	json_key(&w, "budget"); json_number(&w, g->budget);
	json_key(&w, "perbyte_rate"); json_number(&w, g->r_eq);
	json_key(&w, "base_rate"); json_uint(&w, g->base);
	json_key(&w, "floor"); json_number(&w, o->floor);
	json_key(&w, "classes");
	json_begin_array(&w);
	for (size_t i = 0; i < g->n; i++) {
		json_begin_object(&w);
		json_key(&w, "size"); json_number(&w, g->c[i].size);
		json_key(&w, "allocs"); json_number(&w, g->c[i].allocs);
		json_key(&w, "live"); json_number(&w, g->c[i].live);
		json_key(&w, "p_perbyte"); json_number(&w, g->pb[i]);
		json_key(&w, "p_optimal"); json_number(&w, g->popt[i]);
		json_key(&w, "p_table"); json_number(&w, g->preal[i]);
		json_key(&w, "rate"); json_uint(&w, g->rate[i]);
		json_end_object(&w);
	}
	json_end_array(&w);
	view_rows(g, r);
	json_key(&w, "variance");
	json_begin_object(&w);
	for (int i = 0; i < 3; i++) {
		json_key(&w, r[i].name);
		json_begin_object(&w);
		json_key(&w, "perbyte"); json_number(&w, r[i].pb);
		json_key(&w, "optimal"); json_number(&w, r[i].opt);
		json_key(&w, "perbyte_same_samples"); json_number(&w, r[i].same);
		json_key(&w, "table"); json_number(&w, r[i].real);
		json_key(&w, "total"); json_number(&w, r[i].total);
		json_end_object(&w);
	}
	json_end_object(&w);
	json_key(&w, "samples_perbyte"); json_number(&w, g->vpb.samples);
	json_key(&w, "perbyte_rate_same_samples"); json_number(&w, g->r_same);
	json_key(&w, "samples_table"); json_number(&w, g->vreal.samples);
	json_key(&w, "slow_path_entries"); json_number(&w, g->entries);
	json_end_object(&w);
	putchar('\n');
}

static int run_tune(const struct opts *o, const tp_data *d)
{
	struct design g;
	int rc = build_design(o, d, &g);
	if (rc == 0) {
		if (o->json)
			print_json(o, &g);
		else
			print_text(o, &g);
		if (o->out)
			rc = save_table(o->out, o, d, &g);
	}
	design_free(&g);
	return rc;
}

static int run_advise(const struct opts *o, const tp_data *d)
{
	size_t bind, checked;
	double z = ap_normal_quantile((1 + o->confidence) / 2), k = 0, tot = 0;
	double r = tp_advise_rate(d, o->inuse, o->precision, z, o->share, &bind, &checked);
	for (size_t i = 0; i < d->ncls; i++) {
		const ap_tune_class *c = &d->cls[i].c;
		k += c->allocs * (r <= 1 ? 1 : -expm1(c->size * log1p(-1 / r)));
	}
	for (size_t i = 0; i < d->nsites; i++)
		tot += o->inuse ? d->sites[i].inuse_bytes : d->sites[i].alloc_bytes;
	double per_s = d->duration_s > 0 ? k / d->duration_s : (double)NAN;
	double ovh = per_s * o->cost_ns * 1e-9 * 100;
	const tp_site *s = bind != SIZE_MAX ? &d->sites[bind] : NULL;
	double share = s ? (o->inuse ? s->inuse_bytes : s->alloc_bytes) / tot : (double)NAN;
	if (o->json) {
		json_writer w;
		json_init(&w, stdout);
		json_begin_object(&w);
		json_key(&w, "rate"); json_number(&w, r);
		json_key(&w, "view"); json_string(&w, o->inuse ? "inuse" : "alloc");
		json_key(&w, "sites_checked"); json_uint(&w, checked);
		json_key(&w, "limiting_site"); json_string(&w, s ? s->name : NULL);
		json_key(&w, "limiting_share"); json_number(&w, share);
		json_key(&w, "samples"); json_number(&w, k);
		json_key(&w, "samples_per_sec"); json_number(&w, per_s);
		json_key(&w, "sample_cost_ns"); json_number(&w, o->cost_ns);
		json_key(&w, "overhead_pct"); json_number(&w, ovh);
		json_end_object(&w);
		putchar('\n');
		return AP_EXIT_OK;
	}
	printf("rate=%.0f: every site (stack) with at least %g%% of the %s bytes "
	       "(%zu sites) within +-%g%% at %g%% confidence\n", r, 100 * o->share,
	       o->inuse ? "in-use" : "allocated", checked, 100 * o->precision,
	       100 * o->confidence);
	if (s)
		printf("limited by %s (%.3g%% of the bytes)\n", s->name, 100 * share);
	printf("expected samples %.6g", k);
	if (d->duration_s > 0)
		printf(" over %.3g s (%.4g per second): predicted overhead %.3g%% of "
		       "one core at %g ns per sample", d->duration_s, per_s, ovh, o->cost_ns);
	printf("\n");
	return AP_EXIT_OK;
}

int ap_cmd_tune(int argc, char **argv)
{
	struct opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc == -2 ? AP_EXIT_OK : AP_EXIT_USAGE;
	tp_data d;
	char err[512];
	if (tp_load((const char *const *)argv + optind, (size_t)(argc - optind),
		    o.advise, &d, err, sizeof err)) {
		ap_cli_error("%s", err);
		return AP_EXIT_INPUT;
	}
	rc = o.advise ? run_advise(&o, &d) : run_tune(&o, &d);
	tp_free(&d);
	return rc;
}
