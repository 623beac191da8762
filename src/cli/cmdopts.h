/*
 * cmdopts.h: command-line plumbing shared by diff, flame and folded: the
 * options that choose a heap view (--alloc/--inuse, --requested/--usable,
 * --focus/--ignore, --level), opening profiles with a one-line error and
 * the right exit status, and the unknown-option message; the frame
 * options (--skip, --no-skip, --full-names) report shares too. Part of the
 * command layer: only cmd_*.c include it.
 */
#ifndef ALLOCPROF_CLI_CMDOPTS_H
#define ALLOCPROF_CLI_CMDOPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "heapview.h"
#include "series.h"

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
	VC_OPT_SKIP,
	VC_OPT_NO_SKIP,
	VC_OPT_FULL_NAMES,
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
	{"help", no_argument, NULL, VC_OPT_HELP},                            \
	VC_FRAME_LONGOPTS

/* The frame options (--skip, --no-skip, --full-names), also for commands
 * with their own view options (report). */
#define VC_FRAME_LONGOPTS                                                    \
	{"skip", required_argument, NULL, VC_OPT_SKIP},                      \
	{"no-skip", no_argument, NULL, VC_OPT_NO_SKIP},                      \
	{"full-names", no_argument, NULL, VC_OPT_FULL_NAMES}

/* Help lines of the frame options, for each command's usage text. */
#define VC_FRAME_HELP                                                        \
	"  --skip REGEX          also skip leaf frames matching REGEX (POSIX ERE;\n" \
	"                        repeatable), e.g. your own xmalloc wrapper\n"    \
	"  --no-skip             skip nothing: show allocator, allocprof and C++\n" \
	"                        runtime frames (operator new, std::...) too\n"    \
	"  --full-names          C++ names with template arguments (default:\n"   \
	"                        std::vector<>::push_back)\n"

/*
 * Apply shared option opt (with its argument) to o. Returns 0 when handled,
 * -1 when opt is not a shared option, or AP_EXIT_USAGE after printing why
 * the argument is bad.
 */
int vc_view_option(int opt, const char *arg, hv_options *o);

/* The message for an option getopt_long rejected; returns AP_EXIT_USAGE. */
int vc_bad_option(const char *cmd, char **argv);

/*
 * hv_open with the error printed as one line. 0, or the exit status:
 * AP_EXIT_USAGE for bad options (e.g. a regex), AP_EXIT_INPUT otherwise.
 */
int vc_open(const char *const *paths, size_t n, const hv_options *o,
	    hv_view **out);

/*
 * BASE and NEW, one profile each, into *vb and *vn (exit status on
 * failure, message printed). Two dumps of one process are not independent
 * samples: the later holds every sample of the earlier. Then *delta is set
 * and *vb is their exact delta with the alloc view (hv_profile_subtract:
 * the shared samples cancel; NEW older than BASE, or the in-use view, is
 * refused with a one-line reason) and *vn is NULL.
 */
int vc_open_pair(const char *base_path, const char *new_path,
		 const hv_options *o, hv_view **vb, hv_view **vn, bool *delta);

/*
 * The options of the commands over a series (leaks, timeline): --level,
 * --focus, --ignore, --by, --pid, --no-symbolize and the frame options.
 * Commands number theirs from VC_OPT_SERIES_END on.
 */
enum { VC_OPT_BY = VC_OPT_END + 32, VC_OPT_PID, VC_OPT_NOSYM,
       VC_OPT_SERIES_END };
#define VC_SERIES_LONGOPTS                                                   \
	{"level", required_argument, NULL, VC_OPT_LEVEL},                    \
	{"focus", required_argument, NULL, VC_OPT_FOCUS},                    \
	{"ignore", required_argument, NULL, VC_OPT_IGNORE},                  \
	{"help", no_argument, NULL, VC_OPT_HELP},                            \
	{"by", required_argument, NULL, VC_OPT_BY},                          \
	{"pid", required_argument, NULL, VC_OPT_PID},                        \
	{"no-symbolize", no_argument, NULL, VC_OPT_NOSYM},                   \
	VC_FRAME_LONGOPTS
#define VC_SERIES_HELP                                                       \
	"  --by KEY       site key: function (default), line or stack, as in\n" \
	"                 'allocprof report'\n"                                 \
	"  --pid PID      the process to use when the dumps are of several\n"  \
	"  --focus RE     keep stacks with a function matching RE (POSIX ERE)\n" \
	"  --ignore RE    drop stacks with a function matching RE\n"           \
	"  --no-symbolize show addresses; do not read the binaries\n"

/* As vc_view_option, for the series options into o. */
int vc_series_option(int opt, const char *arg, ts_options *o);

/*
 * ts_series_load with the error printed as one line (cmd names the
 * command in the hint when no file is given). 0, or the exit status:
 * AP_EXIT_USAGE (no files, several processes without --pid, ...),
 * AP_EXIT_INPUT (unreadable or invalid files, a single point, times not
 * increasing).
 */
int vc_open_series(const char *cmd, const char *const *paths, size_t n,
		   const ts_options *o, ts_series **out);

#endif
