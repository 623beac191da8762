/*
 * cmd_leaks.c: `allocprof leaks`: which sites' live bytes keep growing,
 * from a series of dumps of one process (series.h), with a growth rate,
 * its interval and a q-value per site (leakview.h; docs/TIME.md).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "cmdopts.h"
#include "commands.h"
#include "leakview.h"
#include "series.h"

static const char leaks_usage[] =
	"usage: allocprof leaks [--fdr Q] [--level L] [--json] [--top N]\n"
	"                       [--by function|line|stack] [--pid PID]\n"
	"                       [--focus RE] [--ignore RE] [--skip RE]\n"
	"                       [--no-skip] [--full-names] [--no-symbolize]\n"
	"                       PROFILE|DIR...\n"
	"\n"
	"Which allocation sites leak: from interval dumps of one process\n"
	"(ALLOCPROF_OPTIONS=interval=1s, or 'allocprof run -e interval=1s'),\n"
	"given as files or directories of them, the trend of each site's live\n"
	"bytes over the later half of the run, with an interval that accounts\n"
	"for the sampling error of each point and for the samples successive\n"
	"points share. A site whose live bytes keep rising is a leak; one that\n"
	"grew and then levelled off (a cache, a pool, a table built at start)\n"
	"is not. Benjamini-Hochberg across sites keeps the expected share of\n"
	"false leaks among those flagged at most Q.\n"
	"\n"
	"  --fdr Q        false discovery rate, 0 < Q < 1 (default 0.05)\n"
	"  --level L      level of the rate intervals (default 0.95)\n"
	"  --json         one JSON object (docs/TIME.md); rates in bytes/s\n"
	"  --top N        show N sites (default 20; 0 = all; --json: all)\n"
	VC_SERIES_HELP
	VC_FRAME_HELP
	"\n"
	"Rates read '+38.0 MiB/h [29.1, 47.2]': live bytes per hour, interval.\n"
	"Exit status: 0 ok (leaks or not), 1 usage error, 2 bad input.\n";

int ap_cmd_leaks(int argc, char **argv)
{
	enum { O_FDR = VC_OPT_SERIES_END, O_JSON, O_TOP };
	static const struct option longopts[] = {
		VC_SERIES_LONGOPTS,
		{"fdr", required_argument, NULL, O_FDR},
		{"json", no_argument, NULL, O_JSON},
		{"top", required_argument, NULL, O_TOP},
		{NULL, 0, NULL, 0}};
	ts_options o;
	ts_options_default(&o);
	double fdr = 0.05;
	uint64_t top = 20;
	bool json = false, top_given = false;
	opterr = 0;
	optind = 1;
	int c, rc;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			fputs(leaks_usage, stdout);
			return AP_EXIT_OK;
		} else if (c == O_FDR) {
			if (ap_cli_parse_level(optarg, &fdr)) {
				ap_cli_error("--fdr wants a number strictly between "
					     "0 and 1, not '%s'", optarg);
				return AP_EXIT_USAGE;
			}
		} else if (c == O_JSON) {
			json = true;
		} else if (c == O_TOP) {
			if (ap_cli_parse_u64(optarg, &top)) {
				ap_cli_error("--top needs a number >= 0, not '%s'",
					     optarg);
				return AP_EXIT_USAGE;
			}
			top_given = true;
		} else if ((rc = vc_series_option(c, optarg, &o)) < 0) {
			return vc_bad_option("leaks", argv);
		} else if (rc) {
			return rc;
		}
	}
	ts_series *s = NULL;
	if ((rc = vc_open_series("leaks", (const char *const *)argv + optind,
				 (size_t)(argc - optind), &o, &s)))
		return rc;
	lk_result r;
	char err[256];
	if (lk_analyse(s, fdr, &r, err, sizeof err)) {
		ap_cli_error("%s", err);
		ts_series_free(s);
		return AP_EXIT_INPUT;
	}
	if (json && !top_given)
		top = 0;
	int wrc = json ? lk_write_json(s, &r, top, stdout)
		       : lk_write_text(s, &r, top, stdout);
	if (wrc || fflush(stdout)) {
		ap_cli_error("writing the output failed");
		rc = AP_EXIT_INPUT;
	}
	lk_free(&r);
	ts_series_free(s);
	return rc;
}
