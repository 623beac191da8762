/*
 * cmd_merge.c: `allocprof merge -o OUT PROFILE...`
 * (profmerge.h does the merging, symbolize.h the optional symbolizing; this
 * file reads the arguments and writes the result).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "profload.h"
#include "symbolize.h"

static void merge_usage(FILE *f)
{
	fputs("usage: allocprof merge -o OUT [--symbolize] PROFILE...\n"
	      "\n"
	      "Merge heap profiles (gzip'd pprof) into one, written atomically to\n"
	      "OUT. Values are already unbiased, so they add (unbias-then-sum):\n"
	      "identical samples are summed, and samples drawn at a sampling rate\n"
	      "other than the first profile's period keep a numeric \"rate\" label so\n"
	      "confidence intervals of the merged profile stay valid. Addresses stay\n"
	      "per process; --symbolize resolves them with the binaries on this\n"
	      "machine first (function, file, line, inline frames).\n"
	      "\n"
	      "  -o, --output OUT  output file (required)\n"
	      "      --symbolize   symbolize the merged profile\n"
	      "  -h, --help        this help\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage error, 2 unreadable or invalid input.\n",
	      f);
}

/* Encode p (gzip'd pprof) and write it atomically; CLI exit status. */
static int write_profile(const ap_profile *p, const char *path)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc = ap_pprof_encode(p, true, NULL, &buf, &len);
	if (rc) {
		ap_cli_error("cannot encode the profile: %s", ap_strerror(rc));
		return AP_EXIT_INPUT;
	}
	if (ap_file_write_atomic(path, buf, len, 0666)) {
		ap_cli_error("%s: %s", path, strerror(errno));
		free(buf);
		return AP_EXIT_INPUT;
	}
	free(buf);
	return AP_EXIT_OK;
}

int ap_cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"symbolize", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *outpath = NULL;
	bool symbolize = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': outpath = optarg; break;
		case 's': symbolize = true; break;
		case 'h': merge_usage(stdout); return AP_EXIT_OK;
		default:
			ap_cli_error("bad option '%s' (try --help)", argv[optind - 1]);
			return AP_EXIT_USAGE;
		}
	}
	if (!outpath || optind >= argc) {
		ap_cli_error(!outpath ? "missing -o OUT (try --help)"
				      : "no input profiles (try --help)");
		return AP_EXIT_USAGE;
	}
	char err[512];
	ap_profile *p = NULL;
	if (hv_load_profiles((const char *const *)argv + optind,
			     (size_t)(argc - optind), &p, err, sizeof err)) {
		ap_cli_error("%s", err);
		return AP_EXIT_INPUT;
	}
	if (symbolize) {
		sym_options so;
		ap_profile *sp;
		sym_options_default(&so);
		so.require_main = false;
		if (sym_symbolize_profile(p, &so, &sp, NULL, err, sizeof err)) {
			ap_cli_error("%s", err);
			ap_profile_destroy(p);
			return AP_EXIT_INPUT;
		}
		ap_profile_destroy(p);
		p = sp;
	}
	int rc = write_profile(p, outpath);
	ap_profile_destroy(p);
	return rc;
}
