/*
 * cmd_run.c: `allocprof run`, an unmodified program under the heap profiler.
 *
 * This file reads the arguments, composes ALLOCPROF_OPTIONS from the
 * user's own value plus the command line (later keys win, so the command
 * line overrides the environment), checks every option with the runtime's
 * own table before anything starts, and prints the summary. runner.h does
 * the rest: it finds liballocprof_preload.so (beside this executable, else
 * in the install prefix), runs the command with fork/execvp and forwards
 * SIGINT, SIGTERM and SIGHUP sent to allocprof (not the terminal's SIGINT,
 * which the child already receives as part of the foreground process
 * group; signals ignored at start, as under nohup, stay ignored). The exit
 * status is the child's (128+N for a death by signal N; 127 when the
 * command is not found, 126 when it cannot be executed). At the end the
 * pprof profiles the run wrote are symbolized in place
 * (runner_symbolize_files; --no-symbolize keeps the addresses), then a
 * short summary of them is printed on stderr: the profile names, then the
 * report of them (top 10 allocating sites, top 5 holding memory at exit;
 * report.h's engine, writing to stderr).
 *
 * Which files the run wrote is found by turning the output pattern into a
 * glob (%p, %t, %n become *) and keeping the matches that are new or were
 * modified during the run. The pattern is made absolute first so a child
 * that changes directory still writes where allocprof looks.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "config.h" /* the runtime's option table */
#include "report.h"
#include "runner.h"

static void usage(FILE *out)
{
	rt_options defaults;
	rt_options_default(&defaults);
	fprintf(out,
		"usage: allocprof run [OPTIONS] [--] CMD [ARGS...]\n"
		"\n"
		"Run CMD under the allocprof heap profiler (liballocprof_preload.so\n"
		"via LD_PRELOAD) and summarize the profile(s) it wrote on stderr.\n"
		"\n"
		"options:\n"
		"  -r, --rate BYTES      mean sampling interval, suffix k/m/g allowed\n"
		"                        (1 = record every allocation exactly;\n"
		"                        default 524288)\n"
		"  -o, --output PATTERN  profile file name; %%p = pid, %%t = time,\n"
		"                        %%n = sequence number (default\n"
		"                        %s, or .heap for heap_v2)\n"
		"      --format FMT      pprof (gzip'd protobuf, default) or heap_v2\n"
		"                        (jemalloc text, read by jeprof)\n"
		"  -e, --option KEY=VAL  any other runtime option (repeatable), e.g.\n"
		"                        -e seed=42 -e interval=10s -e fork=stop\n"
		"      --no-symbolize    leave the profiles' addresses as they are\n"
		"                        (default: when the program exits, each pprof\n"
		"                        profile it wrote is rewritten with function\n"
		"                        names, files and lines, like convert --symbolize)\n"
		"  -q, --quiet           no summary at the end\n"
		"  -h, --help            this help\n"
		"\n"
		"ALLOCPROF_OPTIONS from the environment is kept; options given here\n"
		"override its keys. The exit status is the command's (128+N if it\n"
		"died of signal N, 127 if it was not found, 126 if not executable).\n",
		rt_output_pattern(&defaults));
}

/* ---- ALLOCPROF_OPTIONS -------------------------------------------------- */

struct strbuf {
	char *s;
	size_t len, cap;
};

static int sb_append(struct strbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *t = realloc(b->s, cap);
		if (!t)
			return -1;
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
	return 0;
}

/* Append ",KEY=VALUE" (no comma when the buffer is empty). */
static int sb_option(struct strbuf *b, const char *key, const char *value)
{
	if (b->len && b->s[b->len - 1] != ',' && sb_append(b, ",", 1))
		return -1;
	if (sb_append(b, key, strlen(key)) || sb_append(b, "=", 1))
		return -1;
	return sb_append(b, value, strlen(value));
}

/* An output pattern made absolute against the current directory. */
static int absolute_pattern(const char *pattern, char *out, size_t cap)
{
	if (pattern[0] == '/')
		return (size_t)snprintf(out, cap, "%s", pattern) < cap ? 0 : -1;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	return (size_t)snprintf(out, cap, "%s/%s", cwd, pattern) < cap ? 0 : -1;
}

/* ---- the summary --------------------------------------------------------- */

/* The report of view kind, top sites, on stderr (stdout is the program's). */
static void report_summary(char **paths, size_t n, hv_kind kind, uint64_t top)
{
	report_options r;
	char err[1024];
	report_options_default(&r);
	r.hv.view = kind;
	r.top = top;
	if (report_write((const char *const *)paths, n, &r, stderr, err,
			 sizeof err))
		ap_cli_error("%s", err);
}

static void print_summary(char **paths, size_t n, bool pprof)
{
	fprintf(stderr, "allocprof: %zu profile%s written:", n,
		n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %s", paths[i]);
	fputc('\n', stderr);
	if (!pprof || !n)
		return;
	/* Where it allocated, then what it still held at exit. */
	report_summary(paths, n, HV_ALLOC, 10);
	report_summary(paths, n, HV_INUSE, 5);
}

/* ---- the command --------------------------------------------------------- */

struct run_opts {
	const char *rate, *output, *format;
	const char **extra;
	size_t nextra;
	bool quiet, no_symbolize;
};

/*
 * Store one of the keys run handles itself (rate, output, format), whether
 * given as its own flag or with -e. -1 when key is not one of them, 0 when
 * stored, AP_EXIT_USAGE (after a message) for an output pattern that cannot
 * be passed on. Values are checked later, with every other key, by the
 * runtime's own option table (check_options).
 */
static int set_known(struct run_opts *o, const char *key, const char *value)
{
	if (!strcmp(key, "rate")) {
		o->rate = value;
	} else if (!strcmp(key, "output")) {
		if (!*value || strchr(value, ',')) {
			ap_cli_error("bad output pattern '%s': must be non-empty "
				     "and contain no ','", value);
			return AP_EXIT_USAGE;
		}
		o->output = value;
	} else if (!strcmp(key, "format")) {
		o->format = value;
	} else {
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct run_opts *o, int *cmd)
{
	static const struct option longopts[] = {
		{"rate", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'F'},
		{"option", required_argument, NULL, 'e'},
		{"quiet", no_argument, NULL, 'q'},
		{"no-symbolize", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+r:o:e:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
		case 'o':
		case 'F':
			rc = set_known(o, c == 'r' ? "rate" : c == 'o' ? "output" : "format",
				       optarg);
			if (rc)
				return rc;
			break;
		case 'e': {
			char key[64];
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || strchr(optarg, ',') ||
			    (size_t)(eq - optarg) >= sizeof key) {
				ap_cli_error("bad option '%s': expected KEY=VALUE "
					     "without ','", optarg);
				return AP_EXIT_USAGE;
			}
			memcpy(key, optarg, (size_t)(eq - optarg));
			key[eq - optarg] = 0;
			rc = set_known(o, key, eq + 1);
			if (rc < 0)
				o->extra[o->nextra++] = optarg;
			else if (rc)
				return rc;
			break;
		}
		case 'q':
			o->quiet = true;
			break;
		case 'S':
			o->no_symbolize = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return AP_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ap_cli_error("no command given (try 'allocprof run --help')");
		return AP_EXIT_USAGE;
	}
	*cmd = optind;
	return 0;
}

/*
 * ALLOCPROF_OPTIONS for the child: the user's own value, then the keys
 * given here (later keys win in the runtime's parser). output is the given
 * pattern (NULL: none added).
 */
static int build_options(const struct run_opts *o, const char *output,
			 struct strbuf *b)
{
	/* First, so that the user's ALLOCPROF_OPTIONS may turn it off: a
	 * line when the program execs another without the runtime (a
	 * wrapper that clears LD_PRELOAD), whose profile this run would
	 * otherwise silently lack. */
	static const char note[] = "exec_note=1";
	if (sb_append(b, note, sizeof note - 1))
		return -1;
	const char *user = getenv("ALLOCPROF_OPTIONS");
	if (user && *user && (sb_append(b, ",", 1) || sb_append(b, user, strlen(user))))
		return -1;
	if ((o->rate && sb_option(b, "rate", o->rate)) ||
	    (o->format && sb_option(b, "format", o->format)) ||
	    (output && sb_option(b, "output", output)))
		return -1;
	for (size_t i = 0; i < o->nextra; i++) {
		if (b->len && sb_append(b, ",", 1))
			return -1;
		if (sb_append(b, o->extra[i], strlen(o->extra[i])))
			return -1;
	}
	return 0;
}

/* The runtime's own message for a bad option, word for word (runtime.c
 * prints "allocprof: ALLOCPROF_OPTIONS: ..." at start-up). */
static void option_error(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "allocprof: ALLOCPROF_OPTIONS: %s\n", msg);
}

/*
 * Check every option with the runtime's table (src/preload/config.c), so
 * a key or value the runtime would reject stops the run before the program
 * starts, with the runtime's message. Fills *parsed. 0, or the number of
 * problems (each reported on its own line).
 */
static int check_options(const struct run_opts *o, rt_options *parsed)
{
	struct strbuf b = {0};
	int rc = build_options(o, o->output, &b);
	if (rc) {
		ap_cli_error("out of memory");
		return 1;
	}
	rt_options_default(parsed);
	rc = rt_options_parse(parsed, b.s, option_error, NULL);
	free(b.s);
	return rc;
}

/* Build ALLOCPROF_OPTIONS; *pattern gets the absolute output pattern. */
static int compose_options(const struct run_opts *o, const rt_options *parsed,
			   struct strbuf *b, char *pattern, size_t cap,
			   bool *pprof)
{
	*pprof = parsed->format != RT_FORMAT_HEAPV2;
	/* The user's output= or the runtime's default for the format. */
	if (absolute_pattern(rt_output_pattern(parsed), pattern, cap)) {
		ap_cli_error("output pattern too long or no current directory");
		return -1;
	}
	return build_options(o, pattern, b);
}

int ap_cmd_run(int argc, char **argv)
{
	struct run_opts o = {0};
	int cmd = 0;
	o.extra = calloc((size_t)argc + 1, sizeof *o.extra);
	if (!o.extra) {
		ap_cli_error("out of memory");
		return AP_EXIT_INPUT;
	}
	int rc = parse_args(argc, argv, &o, &cmd);
	if (rc) {
		free(o.extra);
		return rc < 0 ? AP_EXIT_OK : rc;
	}
	rt_options parsed;
	if (check_options(&o, &parsed)) {
		free(o.extra);
		return AP_EXIT_USAGE;
	}
	char lib[PATH_MAX], pattern[PATH_MAX], globpat[2 * PATH_MAX];
	if (runner_find_preload(lib, sizeof lib)) {
		ap_cli_error("cannot find %s beside this executable or in %s",
			     RUNNER_PRELOAD_NAME,
#ifdef AP_INSTALL_LIBDIR
			     AP_INSTALL_LIBDIR
#else
			     "the install prefix"
#endif
		);
		free(o.extra);
		return AP_EXIT_USAGE;
	}
	struct strbuf opts = {0};
	bool pprof = true;
	if (compose_options(&o, &parsed, &opts, pattern, sizeof pattern,
			    &pprof) ||
	    runner_pattern_glob(pattern, globpat, sizeof globpat)) {
		ap_cli_error("cannot compose ALLOCPROF_OPTIONS");
		free(opts.s);
		free(o.extra);
		return AP_EXIT_USAGE;
	}
	runner_files before, after;
	if (runner_files_scan(globpat, &before))
		memset(&before, 0, sizeof before);
	bool started;
	int signo;
	int status = runner_run_child(argv + cmd, lib, opts.s, &started, &signo);
	const char *why;
	pid_t left[8];
	size_t nleft = started && !o.quiet ? runner_survivors(left, 8) : 0;
	if (nleft) {
		/* A daemon: its processes write their profiles when they end,
		 * after this summary. Eight pids of at most 10 digits fit. */
		char list[128] = "";
		for (size_t i = 0, k = 0; i < nleft && i < 8; i++)
			k += (size_t)snprintf(list + k, sizeof list - k, "%s%ld",
					      i ? ", " : "", (long)left[i]);
		const char *name = strrchr(argv[cmd], '/');
		name = name ? name + 1 : argv[cmd];
		fprintf(stderr, "allocprof: %s left %zu process%s running "
				"(%s %s%s): %s profiles are written when %s, "
				"to %s, and are not in this summary\n",
			name, nleft, nleft > 1 ? "es" : "",
			nleft > 1 ? "pids" : "pid", list,
			nleft > 8 ? ", ..." : "", nleft > 1 ? "their" : "its",
			nleft > 1 ? "they exit" : "it exits", pattern);
	}
	if (started && (!o.quiet || (pprof && !o.no_symbolize)) &&
	    runner_files_scan(globpat, &after) == 0) {
		runner_files_subtract(&after, &before);
		/* Names in the files themselves: pprof and every other reader
		 * then need neither the binaries nor debug information. */
		if (pprof && !o.no_symbolize)
			runner_symbolize_files(after.paths, after.n, !o.quiet);
		if (!o.quiet && after.n)
			print_summary(after.paths, after.n, pprof);
		else if (!o.quiet && signo)
			ap_cli_error("no profile was written: the program "
				     "died of signal %d (%s) before its "
				     "exit dump", signo, strsignal(signo));
		else if (!o.quiet && (why = runner_no_profile_reason(argv[cmd])))
			ap_cli_error("no profile was written: %s %s", argv[cmd], why);
		else if (!o.quiet)
			ap_cli_error("no profile was written (pattern %s)",
				     pattern);
		runner_files_free(&after);
	}
	runner_files_free(&before);
	free(opts.s);
	free(o.extra);
	return status;
}
