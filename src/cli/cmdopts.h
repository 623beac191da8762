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

#endif
