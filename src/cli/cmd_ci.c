/*
 * cmd_ci.c: `allocprof ci`, the exact negative-binomial confidence interval
 * on the bytes allocated in a window from its sample count s and u, the sum
 * of (size - offset) over the samples ([R4], docs/STATISTICS.md). A
 * calculator for numbers read off a trace or a profile; the arithmetic is
 * ap_nb_interval's.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "allocprof/estimate.h"
#include "cli_util.h"
#include "commands.h"
#include "json.h"

static void ci_usage(FILE *f)
{
	fputs("usage: allocprof ci --samples S --u U --rate R [--level L] [--json]\n"
	      "                    [--open-start] [--open-end]\n"
	      "\n"
	      "Exact negative-binomial interval on the bytes allocated in a window\n"
	      "that produced S sample events at mean sampling interval R bytes, where\n"
	      "U is the sum over the samples of (size - offset of the sampled byte).\n"
	      "Estimate S*(R-1) + U; bounds from the NegBin(S, 1/R) quantiles + U.\n"
	      "\n"
	      "  --samples S     number of sample events (integer >= 0)\n"
	      "  --u U           sum of size - offset over the samples, bytes (>= 0;\n"
	      "                  0 when S is 0)\n"
	      "  --rate R        mean sampling interval in bytes (>= 1)\n"
	      "  --level L       confidence level, 0 < L < 1 (default 0.95)\n"
	      "  --open-start    the window began between events: lower bound from S-1\n"
	      "  --open-end      the window ended between events: upper bound from S+1\n"
	      "  --json          print {\"samples\",\"u\",\"rate\",\"level\",\"estimate\",\n"
	      "                  \"lo\",\"hi\"} as one JSON object\n"
	      "  -h, --help      this help\n"
	      "\n"
	      "Example ([R4]): allocprof ci --samples 8 --u 10908 --rate 102400\n"
	      "Exit status: 0 ok, 1 usage error.\n",
	      f);
}

enum { OPT_SAMPLES = 256, OPT_U, OPT_RATE, OPT_LEVEL, OPT_JSON, OPT_OPEN_START,
       OPT_OPEN_END };

struct ci_args {
	uint64_t samples;
	double u, rate, level;
	bool have_samples, have_u, have_rate, json, open_start, open_end;
};

/* Parse one option's value; prints the error and returns -1 when bad. */
static int ci_option(struct ci_args *a, int opt, const char *val)
{
	switch (opt) {
	case OPT_SAMPLES:
		if (ap_cli_parse_u64(val, &a->samples) ||
		    a->samples > ((uint64_t)1 << 53)) {
			ap_cli_error("--samples wants a whole number from 0 to 2^53, not '%s'",
				     val);
			return -1;
		}
		a->have_samples = true;
		return 0;
	case OPT_U:
		if (ap_cli_parse_double(val, &a->u) || !(a->u >= 0)) {
			ap_cli_error("--u wants a number of bytes >= 0, not '%s'", val);
			return -1;
		}
		a->have_u = true;
		return 0;
	case OPT_RATE:
		if (ap_cli_parse_double(val, &a->rate) || !(a->rate >= 1)) {
			ap_cli_error("--rate wants a sampling interval in bytes >= 1, not '%s'",
				     val);
			return -1;
		}
		a->have_rate = true;
		return 0;
	case OPT_LEVEL:
		if (ap_cli_parse_level(val, &a->level)) {
			ap_cli_error("--level wants a number strictly between 0 and 1, not '%s'",
				     val);
			return -1;
		}
		return 0;
	default:
		return -1;
	}
}

static int ci_parse(int argc, char **argv, struct ci_args *a)
{
	static const struct option opts[] = {
		{"samples", required_argument, NULL, OPT_SAMPLES},
		{"u", required_argument, NULL, OPT_U},
		{"rate", required_argument, NULL, OPT_RATE},
		{"level", required_argument, NULL, OPT_LEVEL},
		{"json", no_argument, NULL, OPT_JSON},
		{"open-start", no_argument, NULL, OPT_OPEN_START},
		{"open-end", no_argument, NULL, OPT_OPEN_END},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h': ci_usage(stdout); return 1;
		case OPT_JSON: a->json = true; break;
		case OPT_OPEN_START: a->open_start = true; break;
		case OPT_OPEN_END: a->open_end = true; break;
		case '?':
			if (optopt)
				ap_cli_error("option '%s' needs a value (try --help)",
					     argv[optind - 1]);
			else
				ap_cli_error("unknown option '%s' (try --help)",
					     argv[optind - 1]);
			return -1;
		default:
			if (ci_option(a, c, optarg))
				return -1;
		}
	}
	if (optind < argc) {
		ap_cli_error("unexpected argument '%s' (try --help)", argv[optind]);
		return -1;
	}
	if (!a->have_samples || !a->have_u || !a->have_rate) {
		ap_cli_error("missing %s (try --help)",
			     !a->have_samples ? "--samples S"
			     : !a->have_u     ? "--u U"
					      : "--rate R");
		return -1;
	}
	if (a->samples == 0 && a->u != 0) {
		ap_cli_error("--u must be 0 when --samples is 0 (it sums over the samples)");
		return -1;
	}
	return 0;
}

static void ci_print(const struct ci_args *a, const ap_interval *iv)
{
	if (a->json) {
		json_writer w;
		json_init(&w, stdout);
		json_begin_object(&w);
		json_key(&w, "samples");
		json_uint(&w, a->samples);
		const struct {
			const char *key;
			double v;
		} fields[] = {{"u", a->u},		{"rate", a->rate},
			      {"level", a->level},	{"estimate", iv->estimate},
			      {"lo", iv->lo},		{"hi", iv->hi}};
		for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
			json_key(&w, fields[i].key);
			json_number(&w, fields[i].v);
		}
		json_end_object(&w);
		putchar('\n');
		return;
	}
	printf("estimate: %.0f bytes\n", iv->estimate);
	printf("%g%% interval: [%.0f, %.0f] bytes\n", a->level * 100, iv->lo,
	       iv->hi);
	printf("(exact negative binomial: %llu samples at rate %g, window %s)\n",
	       (unsigned long long)a->samples, a->rate,
	       a->open_start && a->open_end ? "open at both ends"
	       : a->open_start	     ? "open at the start"
	       : a->open_end	     ? "open at the end"
				     : "bounded by sample events");
}

int ap_cmd_ci(int argc, char **argv)
{
	struct ci_args a = {.level = 0.95};
	int rc = ci_parse(argc, argv, &a);
	if (rc)
		return rc > 0 ? AP_EXIT_OK : AP_EXIT_USAGE;
	ap_interval iv;
	rc = ap_nb_interval(a.samples, a.u, a.rate, a.level, a.open_start,
			    a.open_end, &iv);
	if (rc == AP_ERANGE) {
		ap_cli_error("the interval runs past 2^53 failed trials; "
			     "too many samples at this rate to count exactly");
		return AP_EXIT_USAGE;
	}
	if (rc) {
		ap_cli_error("cannot compute the interval: %s", ap_strerror(rc));
		return AP_EXIT_USAGE;
	}
	ci_print(&a, &iv);
	if (fflush(stdout) || ferror(stdout)) {
		ap_cli_error("cannot write the result to standard output");
		return AP_EXIT_INPUT;
	}
	return AP_EXIT_OK;
}
