/*
 * cmd_folded.c: allocprof folded: a profile as folded stacks, the text
 * format FlameGraph, speedscope and inferno read (FORMATS.md): one line per
 * unique stack, frames root first joined by ';', a space and an integer
 * weight, here the estimated bytes of the view. Lines are sorted by stack so
 * output is deterministic; stacks that symbolize to the same names are one
 * line; weights are rounded so that they add up to the rounded total.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "heapview.h"
#include "views_cli.h"
#include "views_util.h"

static const char folded_usage[] =
	"usage: allocprof folded [--alloc|--inuse] [--requested|--usable]\n"
	"                        [--focus REGEX] [--ignore REGEX] PROFILE...\n"
	"\n"
	"Print the profile as folded stacks: one line per unique stack, frames\n"
	"root first joined by ';', then a space and the estimated bytes of the\n"
	"view as an integer (e.g. 'main;parse;xstrdup 1048576'). Feed it to\n"
	"flamegraph.pl, inferno-flamegraph or speedscope. Several profiles are\n"
	"merged first. Weights are unbiased estimates rounded so they sum to\n"
	"the view's rounded total; stacks estimated at 0 bytes are left out.\n"
	"Characters that would break the format are replaced: ';' in a name\n"
	"becomes ':', control characters '?', an empty name '[unknown]'.\n"
	"\n"
	"  --inuse       bytes still allocated when the profile was written\n"
	"                (default)\n"
	"  --alloc       all bytes allocated over the run\n"
	"  --requested   sizes as requested by the program (default)\n"
	"  --usable      usable sizes reported by the allocator\n"
	"  --focus RE    keep stacks with a function matching RE (POSIX ERE)\n"
	"  --ignore RE   drop stacks with a function matching RE\n"
	"  --level L     accepted for symmetry with the other views; unused\n"
	"  --help        this text\n"
	"\n"
	"Exit status: 0 ok, 1 usage error, 2 unreadable or malformed profile.\n";

struct folded_line {
	char *text;
	double bytes;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

/* "root;...;leaf" of stack i, malloc'd. */
static char *stack_text(const hv_site *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t k = s->nstack; k-- > 0;) {
		if (k + 1 != s->nstack)
			fputc(';', f);
		vu_folded_frame(f, s->stack[k].function, k + 1 == s->nstack);
	}
	if (!s->nstack)
		vu_folded_frame(f, NULL, true);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_folded(const hv_view *v)
{
	size_t n = hv_nstacks(v), m = 0;
	struct folded_line *lines = calloc(n ? n : 1, sizeof *lines);
	double *w = calloc(n ? n : 1, sizeof *w);
	uint64_t *iw = calloc(n ? n : 1, sizeof *iw);
	int rc = AP_EXIT_OK;
	if (!lines || !w || !iw)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		const hv_site *s = hv_stack_at(v, i);
		lines[i].bytes = s->stat.bytes;
		if (!(lines[i].text = stack_text(s)))
			goto nomem;
	}
	qsort(lines, n, sizeof *lines, cmp_line);
	/* Merge stacks that print the same (equal names, other addresses). */
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(lines[m - 1].text, lines[i].text)) {
			lines[m - 1].bytes += lines[i].bytes;
			free(lines[i].text);
			continue;
		}
		lines[m++] = lines[i];
	}
	n = m;
	for (size_t i = 0; i < n; i++)
		w[i] = lines[i].bytes;
	vu_round_weights(w, n, iw);
	for (size_t i = 0; i < n; i++)
		if (iw[i])
			printf("%s %llu\n", lines[i].text,
			       (unsigned long long)iw[i]);
	if (fflush(stdout) || ferror(stdout)) {
		ap_cli_error("writing the output failed");
		rc = AP_EXIT_INPUT;
	}
	goto out;
nomem:
	ap_cli_error("out of memory");
	rc = AP_EXIT_INPUT;
out:
	if (lines)
		for (size_t i = 0; i < n; i++)
			free(lines[i].text);
	free(lines);
	free(w);
	free(iw);
	return rc;
}

int ap_cmd_folded(int argc, char **argv)
{
	static const struct option longopts[] = {VC_VIEW_LONGOPTS,
						 {NULL, 0, NULL, 0}};
	hv_options o;
	hv_options_default(&o);
	o.by = HV_BY_STACK;
	opterr = 0;
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == VC_OPT_HELP) {
			fputs(folded_usage, stdout);
			return AP_EXIT_OK;
		}
		int rc = vc_view_option(c, optarg, &o);
		if (rc < 0)
			return vc_bad_option("folded", argv);
		if (rc)
			return rc;
	}
	if (optind >= argc) {
		ap_cli_error("no profile given (see 'allocprof folded --help')");
		return AP_EXIT_USAGE;
	}
	hv_view *v;
	int rc = vc_open((const char *const *)argv + optind,
			 (size_t)(argc - optind), &o, &v);
	if (rc)
		return rc;
	rc = write_folded(v);
	hv_destroy(v);
	return rc;
}
