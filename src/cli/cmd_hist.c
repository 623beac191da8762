/*
 * cmd_hist.c: `allocprof hist`, a log-linear histogram of the non-negative
 * integers on stdin (whitespace-separated, any number per line). Prints a
 * summary (count, min, max, mean, standard deviation, quantiles) and a text
 * bar chart, or JSON, or Prometheus exposition text, or an OpenTelemetry
 * exponential-histogram data point. All input is read and checked before
 * anything is printed, so a bad token never leaves half a report behind.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/hist.h"
#include "cli_util.h"
#include "commands.h"

#define DEFAULT_SIGBITS 7
#define BAR_WIDTH 40
#define MAX_ROWS 24

static void usage(FILE *out)
{
	fputs("usage: allocprof hist [--sigbits N] [--quantiles Q1,Q2,...]\n"
	      "                      [--json | --prometheus NAME [--le B1,B2,...]"
	      " |\n"
	      "                       --native SCHEMA | --otel SCALE]\n"
	      "\n"
	      "Reads whitespace-separated non-negative integers from stdin and\n"
	      "prints count, min, max, mean, standard deviation, quantiles and a\n"
	      "bar chart of their log-linear histogram.\n"
	      "\n"
	      "  --sigbits N        precision: buckets at most 2^-N wide, N 1..15\n"
	      "                     (default 7, under 0.8%)\n"
	      "  --quantiles LIST   comma-separated quantiles in [0, 1]\n"
	      "                     (default 0.5,0.9,0.99,0.999)\n"
	      "  --json             one JSON object: summary, quantiles and the\n"
	      "                     histogram in allocprof's JSON form\n"
	      "  --prometheus NAME  Prometheus text exposition of histogram NAME\n"
	      "  --le LIST          with --prometheus: these upper bounds instead of\n"
	      "                     one per bucket (counts split proportionally)\n"
	      "  --native SCHEMA    Prometheus native histogram at SCHEMA -4..8: the\n"
	      "                     fields of its protobuf message, as JSON\n"
	      "  --otel SCALE       OpenTelemetry exponential histogram data point\n"
	      "                     (OTLP/JSON) at SCALE -4..8\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage error, 2 bad input (the line is named).\n",
	      out);
}

/* Split a comma-separated list; each item parsed by parse(). -1 on error. */
static int parse_list(const char *arg, int (*parse)(const char *, void *),
		      size_t elem, void **out, size_t *n)
{
	size_t cap = 1;
	for (const char *p = arg; *p; p++)
		cap += *p == ',';
	char *copy = strdup(arg);
	unsigned char *items = malloc(cap * elem);
	size_t count = 0;
	int rc = copy && items ? 0 : -1;
	for (char *tok = copy, *next; !rc && tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = 0;
		rc = parse(tok, items + count++ * elem);
	}
	free(copy);
	if (rc) {
		free(items);
		return -1;
	}
	*out = items;
	*n = count;
	return 0;
}

static int parse_quantile(const char *s, void *out)
{
	double q;
	if (ap_cli_parse_double(s, &q) || !(q >= 0.0 && q <= 1.0))
		return -1;
	*(double *)out = q;
	return 0;
}

static int parse_bound(const char *s, void *out)
{
	return ap_cli_parse_u64(s, out);
}

/* Record every token of buf; on a bad token report its line, return -1. */
static int read_values(ap_hist *h, char *buf)
{
	unsigned long line = 1;
	char *p = buf;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
		       *p == '\v' || *p == '\f')
			line += *p++ == '\n';
		if (!*p)
			return 0;
		char *tok = p;
		while (*p && !strchr(" \t\n\r\v\f", *p))
			p++;
		char saved = *p;
		*p = 0;
		uint64_t v;
		if (ap_cli_parse_u64(tok, &v)) {
			int digits = tok[strspn(tok, "0123456789")] == 0;
			ap_cli_error("line %lu: '%.40s%s' is %s", line, tok,
				     strlen(tok) > 40 ? "..." : "",
				     digits ? "larger than 2^64 - 1"
					    : "not a non-negative integer");
			return -1;
		}
		int rc = ap_hist_add(h, v);
		if (rc) {
			ap_cli_error("%s", ap_strerror(rc));
			return -1;
		}
		*p = saved;
	}
}

/* Bar chart: one row per power-of-two range (several when there are many),
 * so the shape of wide distributions fits on a screen. */
static void print_chart(const ap_hist_snap *s)
{
	size_t nb = ap_hist_snap_bucket_count(s);
	if (!nb)
		return;
	ap_hist_bucket b;
	ap_hist_snap_bucket(s, 0, &b);
	int g0 = b.lo ? 64 - __builtin_clzll(b.lo) : 0;
	ap_hist_snap_bucket(s, nb - 1, &b);
	int g1 = b.hi ? 64 - __builtin_clzll(b.hi) : 0;
	int per = (g1 - g0 + MAX_ROWS) / MAX_ROWS, rows = (g1 - g0) / per + 1;
	uint64_t count[MAX_ROWS + 1] = {0}, lo[MAX_ROWS + 1], hi[MAX_ROWS + 1];
	for (int r = 0; r < rows; r++) {
		int ga = g0 + r * per, gb = ga + per - 1;
		lo[r] = ga ? UINT64_C(1) << (ga - 1) : 0;
		hi[r] = gb >= 64 ? UINT64_MAX : (UINT64_C(1) << gb) - 1;
	}
	uint64_t top = 0;
	for (size_t i = 0; i < nb; i++) {
		ap_hist_snap_bucket(s, i, &b);
		int g = b.lo ? 64 - __builtin_clzll(b.lo) : 0;
		int r = (g - g0) / per;
		count[r] += b.count;
		if (count[r] > top)
			top = count[r];
	}
	uint64_t mn, mx;
	ap_hist_snap_min(s, &mn);
	ap_hist_snap_max(s, &mx);
	printf("\n%20s    %-20s %-*s   %s\n", "from", "to", BAR_WIDTH, "", "count");
	for (int r = 0; r < rows; r++) {
		int len = (int)((double)count[r] / (double)top * BAR_WIDTH + 0.5);
		if (count[r] && !len)
			len = 1;
		char bar[BAR_WIDTH + 1];
		memset(bar, '#', (size_t)len);
		bar[len] = 0;
		printf("%20llu .. %-20llu |%-*s| %llu\n",
		       (unsigned long long)(lo[r] < mn ? mn : lo[r]),
		       (unsigned long long)(hi[r] > mx ? mx : hi[r]), BAR_WIDTH,
		       bar, (unsigned long long)count[r]);
	}
}

static void quantile_label(double q, char *buf, size_t n)
{
	snprintf(buf, n, "p%.10g", q * 100);
}

static int print_text(const ap_hist_snap *s, const double *q,
		      const uint64_t *qv, size_t nq)
{
	uint64_t mn, mx;
	printf("count   %llu\n", (unsigned long long)ap_hist_snap_count(s));
	if (!ap_hist_snap_count(s))
		return AP_EXIT_OK;
	ap_hist_snap_min(s, &mn);
	ap_hist_snap_max(s, &mx);
	printf("min     %llu\nmax     %llu\n", (unsigned long long)mn,
	       (unsigned long long)mx);
	printf("mean    %.2f\nstddev  %.2f\n", ap_hist_snap_mean(s),
	       ap_hist_snap_stddev(s));
	for (size_t i = 0; i < nq; i++) {
		char label[32];
		quantile_label(q[i], label, sizeof label);
		printf("%-7s %llu\n", label, (unsigned long long)qv[i]);
	}
	print_chart(s);
	return AP_EXIT_OK;
}

static int print_json(const ap_hist_snap *s, const double *q,
		      const uint64_t *qv, size_t nq)
{
	char *hist;
	size_t len;
	int rc = ap_hist_encode_json(s, NULL, &hist, &len);
	if (rc) {
		ap_cli_error("%s", ap_strerror(rc));
		return AP_EXIT_INPUT;
	}
	while (len && hist[len - 1] == '\n')
		hist[--len] = 0;
	uint64_t n = ap_hist_snap_count(s), mn = 0, mx = 0;
	printf("{\"count\":%llu,", (unsigned long long)n);
	if (n) {
		ap_hist_snap_min(s, &mn);
		ap_hist_snap_max(s, &mx);
		printf("\"min\":%llu,\"max\":%llu,\"mean\":%.17g,\"stddev\":%.17g,",
		       (unsigned long long)mn, (unsigned long long)mx,
		       ap_hist_snap_mean(s), ap_hist_snap_stddev(s));
	} else {
		printf("\"min\":null,\"max\":null,\"mean\":null,\"stddev\":null,");
	}
	printf("\"quantiles\":[");
	for (size_t i = 0; i < nq; i++) {
		printf("%s{\"q\":%.17g,\"value\":", i ? "," : "", q[i]);
		if (n)
			printf("%llu}", (unsigned long long)qv[i]);
		else
			printf("null}");
	}
	printf("],\"histogram\":%s}\n", hist);
	ap_hist_buffer_free(NULL, hist, len);
	return AP_EXIT_OK;
}

static int print_export(const ap_hist_snap *s, const char *prom,
			const uint64_t *le, size_t nle, bool native, int scale)
{
	char *out;
	size_t len;
	int rc = prom     ? ap_hist_export_prometheus(s, prom, NULL, le, nle,
						      NULL, &out, &len)
		 : native ? ap_hist_export_prometheus_native_json(s, scale, NULL,
								  &out, &len)
			  : ap_hist_export_otel_json(s, scale, NULL, &out, &len);
	if (rc) {
		ap_cli_error("%s", ap_strerror(rc));
		return rc == AP_EINVAL ? AP_EXIT_USAGE : AP_EXIT_INPUT;
	}
	fwrite(out, 1, len, stdout);
	ap_hist_buffer_free(NULL, out, len);
	return AP_EXIT_OK;
}

struct opts {
	unsigned sigbits;
	double *q;
	size_t nq;
	uint64_t *le;
	size_t nle;
	bool json, otel, native;
	int scale;
	const char *prom;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"sigbits", required_argument, NULL, 's'},
		{"quantiles", required_argument, NULL, 'q'},
		{"json", no_argument, NULL, 'j'},
		{"prometheus", required_argument, NULL, 'p'},
		{"le", required_argument, NULL, 'l'},
		{"otel", required_argument, NULL, 'o'},
		{"native", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	uint64_t u;
	double d;
	int c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (ap_cli_parse_u64(optarg, &u) || u < AP_HIST_SIGBITS_MIN ||
			    u > AP_HIST_SIGBITS_MAX) {
				ap_cli_error("--sigbits must be an integer 1..15, "
					     "not '%s'", optarg);
				return -1;
			}
			o->sigbits = (unsigned)u;
			break;
		case 'q':
			free(o->q);
			if (parse_list(optarg, parse_quantile, sizeof *o->q,
				       (void **)&o->q, &o->nq)) {
				o->q = NULL;
				ap_cli_error("--quantiles: '%s' is not a comma-"
					     "separated list of numbers in [0, 1]",
					     optarg);
				return -1;
			}
			break;
		case 'j': o->json = true; break;
		case 'p':
			o->prom = optarg;
			if (!optarg[0] || strspn(optarg, "abcdefghijklmnopqrstuvwxyz"
						 "ABCDEFGHIJKLMNOPQRSTUVWXYZ_:"
						 "0123456789") != strlen(optarg) ||
			    (optarg[0] >= '0' && optarg[0] <= '9')) {
				ap_cli_error("--prometheus: '%s' is not a metric "
					     "name ([a-zA-Z_:][a-zA-Z0-9_:]*)",
					     optarg);
				return -1;
			}
			break;
		case 'l':
			free(o->le);
			if (parse_list(optarg, parse_bound, sizeof *o->le,
				       (void **)&o->le, &o->nle)) {
				o->le = NULL;
				ap_cli_error("--le: '%s' is not a comma-separated "
					     "list of non-negative integers", optarg);
				return -1;
			}
			break;
		case 'o':
		case 'n':
			if (ap_cli_parse_double(optarg, &d) || d != floor(d) ||
			    d < -4 || d > 8) {
				ap_cli_error("--%s: %s must be an integer -4..8, "
					     "not '%s'", c == 'o' ? "otel" : "native",
					     c == 'o' ? "scale" : "schema", optarg);
				return -1;
			}
			*(c == 'o' ? &o->otel : &o->native) = true;
			o->scale = (int)d;
			break;
		case 'h': return 1;
		default:
			ap_cli_error("unknown or incomplete option '%s' (try "
				     "'allocprof hist --help')", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		ap_cli_error("unexpected argument '%s': numbers are read from "
			     "stdin", argv[optind]);
		return -1;
	}
	if (o->json + !!o->prom + o->otel + o->native > 1) {
		ap_cli_error("--json, --prometheus, --native and --otel exclude "
			     "each other");
		return -1;
	}
	if (o->le && !o->prom) {
		ap_cli_error("--le needs --prometheus");
		return -1;
	}
	for (size_t i = 1; i < o->nle; i++)
		if (o->le[i] <= o->le[i - 1]) {
			ap_cli_error("--le bounds must be strictly increasing");
			return -1;
		}
	return 0;
}

static int run(const struct opts *o)
{
	static const double default_q[] = {0.5, 0.9, 0.99, 0.999};
	const double *q = o->q ? o->q : default_q;
	size_t nq = o->q ? o->nq : 4;
	unsigned char *buf;
	size_t len;
	if (ap_read_file("-", &buf, &len)) {
		ap_cli_error("cannot read stdin: %m");
		return AP_EXIT_INPUT;
	}
	if (memchr(buf, 0, len)) {
		ap_cli_error("input contains a NUL byte: not text");
		free(buf);
		return AP_EXIT_INPUT;
	}
	ap_hist *h;
	ap_hist_snap *s = NULL;
	int rc = ap_hist_create(&h, o->sigbits, NULL);
	int status = rc ? AP_EXIT_INPUT : read_values(h, (char *)buf) ? AP_EXIT_INPUT
									  : AP_EXIT_OK;
	free(buf);
	if (!rc && status == AP_EXIT_OK && (rc = ap_hist_snapshot(h, NULL, &s))) {
		ap_cli_error("%s", ap_strerror(rc));
		status = AP_EXIT_INPUT;
	}
	ap_hist_destroy(h);
	if (status != AP_EXIT_OK)
		return status;
	uint64_t *qv = calloc(nq ? nq : 1, sizeof *qv);
	if (!qv) {
		ap_hist_snap_destroy(s);
		ap_cli_error("out of memory");
		return AP_EXIT_INPUT;
	}
	if (ap_hist_snap_count(s))
		ap_hist_snap_values_at_quantiles(s, q, nq, qv);
	if (o->prom || o->otel || o->native)
		status = print_export(s, o->prom, o->le, o->nle, o->native,
				      o->scale);
	else if (o->json)
		status = print_json(s, q, qv, nq);
	else
		status = print_text(s, q, qv, nq);
	free(qv);
	ap_hist_snap_destroy(s);
	if (fflush(stdout) || ferror(stdout)) {
		ap_cli_error("write error on stdout");
		return AP_EXIT_INPUT;
	}
	return status;
}

int ap_cmd_hist(int argc, char **argv)
{
	struct opts o = {.sigbits = DEFAULT_SIGBITS};
	int rc = parse_args(argc, argv, &o);
	int status;
	if (rc > 0) {
		usage(stdout);
		status = AP_EXIT_OK;
	} else if (rc < 0) {
		status = AP_EXIT_USAGE;
	} else {
		status = run(&o);
	}
	free(o.q);
	free(o.le);
	return status;
}
