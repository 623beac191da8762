/*
 * views_cli.h: command-line plumbing shared by diff, flame and folded (and
 * report, for its JSON header): the options that choose a heap view
 * (--alloc/--inuse, --requested/--usable, --focus/--ignore, --level),
 * opening profiles with a one-line error and
 * the right exit status, the unknown-option message, and the folded-stack
 * writer (also meant for convert --to folded).
 */
#ifndef ALLOCPROF_CLI_VIEWS_CLI_H
#define ALLOCPROF_CLI_VIEWS_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "heapview.h"
#include "json.h"
#include "views_util.h"

/* getopt_long codes of the shared options; commands number theirs from
 * VC_OPT_END on. */
enum {
	VC_OPT_ALLOC = 256,
	VC_OPT_INUSE,
	VC_OPT_REQUESTED,
	VC_OPT_USABLE,
	VC_OPT_FOCUS,
	VC_OPT_IGNORE,
	VC_OPT_LEVEL,
	VC_OPT_HELP,
	VC_OPT_END
};

/* struct option entries for the shared options (place first in a table). */
#define VC_VIEW_LONGOPTS                                                     \
	{"alloc", no_argument, NULL, VC_OPT_ALLOC},                          \
	{"inuse", no_argument, NULL, VC_OPT_INUSE},                          \
	{"requested", no_argument, NULL, VC_OPT_REQUESTED},                  \
	{"usable", no_argument, NULL, VC_OPT_USABLE},                        \
	{"focus", required_argument, NULL, VC_OPT_FOCUS},                    \
	{"ignore", required_argument, NULL, VC_OPT_IGNORE},                  \
	{"level", required_argument, NULL, VC_OPT_LEVEL},                    \
	{"help", no_argument, NULL, VC_OPT_HELP}

/*
 * Apply shared option opt (with its argument) to o. Returns 0 when handled,
 * -1 when opt is not a shared option, or AP_EXIT_USAGE after printing why
 * the argument is bad.
 */
int vc_view_option(int opt, const char *arg, hv_options *o);

/* The keys "view", "value" and "by" of o, as report and diff begin their
 * JSON objects. */
void vc_json_view(json_writer *w, const hv_options *o);

/* The message for an option getopt_long rejected; returns AP_EXIT_USAGE. */
int vc_bad_option(const char *cmd, char **argv);

/*
 * hv_open with the error printed as one line. 0, or the exit status:
 * AP_EXIT_USAGE for bad options (e.g. a regex), AP_EXIT_INPUT otherwise.
 */
int vc_open(const char *const *paths, size_t n, const hv_options *o,
	    hv_view **out);

/*
 * One side of a difference (views_util.h) from a statistic of view v (NULL
 * = the site is absent there): its own interval at level sqrt(level), or,
 * with no sample, [0, vu_empty_upper] (exact 0 at rate 1).
 */
void vc_diff_side(const hv_view *v, const hv_stat *st, double level,
		  vu_side *out);
/* NEW - BASE of a site (b in view vb, n in view vn; either may be NULL)
 * with its interval at level (vu_diff_interval's rule). 0 or AP_EINVAL. */
int vc_diff(const hv_view *vb, const hv_stat *b, const hv_view *vn,
	    const hv_stat *n, double level, vu_diff *out);

/*
 * Write v's stacks as folded lines ("root;...;leaf WEIGHT", FlameGraph's
 * format) to out: frames sanitised by vu_folded_frame, stacks that print
 * the same merged into one line, lines sorted (byte order), weights = the
 * estimated bytes rounded by vu_round_weights so they sum to the rounded
 * total, lines of weight 0 left out. 0, or -1 with errno (ENOMEM, or the
 * stream's write error).
 */
int vc_write_folded(const hv_view *v, FILE *out);

#endif
