/*
 * cmd_run.c: `allocprof run`, an unmodified program under the heap profiler.
 *
 * It finds liballocprof_preload.so (beside this executable, else in the
 * install prefix), prepends it to LD_PRELOAD, composes ALLOCPROF_OPTIONS
 * from the user's own value plus the command line (later keys win, so the
 * command line overrides the environment), runs the command with
 * fork/execvp and forwards SIGINT, SIGTERM and SIGHUP sent to allocprof
 * (not the terminal's SIGINT, which the child already receives as part of
 * the foreground process group; signals ignored at start, as under nohup,
 * stay ignored). Its exit status is the child's (128+N for a
 * death by signal N; 127 when the command is not found, 126 when it cannot
 * be executed). At the end a short summary of the profiles the run wrote is
 * printed on stderr: the profile names, then the report of them (top 10
 * allocating sites, top 5 holding memory at exit; report.h's engine,
 * writing to stderr).
 *
 * Which files the run wrote is found by turning the output pattern into a
 * glob (%p, %t, %n become *) and keeping the matches that are new or were
 * modified during the run. The pattern is made absolute first so a child
 * that changes directory still writes where allocprof looks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "config.h" /* the runtime's option table */
#include "report.h"

#define PRELOAD_NAME "liballocprof_preload.so"

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
		"  -q, --quiet           no summary at the end\n"
		"  -h, --help            this help\n"
		"\n"
		"ALLOCPROF_OPTIONS from the environment is kept; options given here\n"
		"override its keys. The exit status is the command's (128+N if it\n"
		"died of signal N, 127 if it was not found, 126 if not executable).\n",
		rt_output_pattern(&defaults));
}

/* ---- locating the runtime ---------------------------------------------- */

static int find_preload(char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			if ((size_t)snprintf(out, cap, "%s/%s", exe,
					     PRELOAD_NAME) < cap &&
			    access(out, R_OK) == 0)
				return 0;
#ifdef AP_INSTALL_RELLIBDIR
			/* An installed tree moved as a whole (--prefix at
			 * install time, a package unpacked elsewhere):
			 * PREFIX/bin/allocprof beside PREFIX/lib. */
			if ((size_t)snprintf(out, cap, "%s/../%s/%s", exe,
					     AP_INSTALL_RELLIBDIR,
					     PRELOAD_NAME) < cap &&
			    access(out, R_OK) == 0)
				return 0;
#endif
		}
	}
#ifdef AP_INSTALL_LIBDIR
	if ((size_t)snprintf(out, cap, "%s/%s", AP_INSTALL_LIBDIR,
			     PRELOAD_NAME) < cap &&
	    access(out, R_OK) == 0)
		return 0;
#endif
	return -1;
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

/* ---- finding the profiles a run wrote ----------------------------------- */

/*
 * The glob matching every file name the runtime can make from pattern:
 * %p, %t and %n (and any other conversion) become *, %% a literal %, and
 * glob's own metacharacters are escaped.
 */
static int pattern_to_glob(const char *pattern, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *p = pattern; *p; p++) {
		char buf[3];
		size_t k = 0;
		if (*p == '%' && p[1] == '%') {
			buf[k++] = '%';
			p++;
		} else if (*p == '%' && p[1]) {
			buf[k++] = '*';
			p++;
		} else if (strchr("*?[]\\", *p)) {
			buf[k++] = '\\';
			buf[k++] = *p;
		} else {
			buf[k++] = *p;
		}
		if (n + k + 1 > cap)
			return -1;
		memcpy(out + n, buf, k);
		n += k;
	}
	out[n] = 0;
	return 0;
}

struct seen {
	char **paths;
	struct timespec *mtimes;
	size_t n;
};

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->paths[i]);
	free(s->paths);
	free(s->mtimes);
	memset(s, 0, sizeof *s);
}

static int seen_scan(const char *globpat, struct seen *s)
{
	glob_t g;
	memset(s, 0, sizeof *s);
	int rc = glob(globpat, 0, NULL, &g);
	if (rc == GLOB_NOMATCH)
		return 0;
	if (rc)
		return -1;
	s->paths = calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *s->paths);
	s->mtimes = calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *s->mtimes);
	if (!s->paths || !s->mtimes) {
		globfree(&g);
		seen_free(s);
		return -1;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct stat st;
		if (stat(g.gl_pathv[i], &st) || !S_ISREG(st.st_mode))
			continue;
		s->paths[s->n] = strdup(g.gl_pathv[i]);
		if (!s->paths[s->n]) {
			globfree(&g);
			seen_free(s);
			return -1;
		}
		s->mtimes[s->n++] = st.st_mtim;
	}
	globfree(&g);
	return 0;
}

/* Remove from after the files that are unchanged since before. */
static void seen_subtract(struct seen *after, const struct seen *before)
{
	size_t k = 0;
	for (size_t i = 0; i < after->n; i++) {
		bool old = false;
		for (size_t j = 0; j < before->n && !old; j++)
			old = !strcmp(after->paths[i], before->paths[j]) &&
			      after->mtimes[i].tv_sec == before->mtimes[j].tv_sec &&
			      after->mtimes[i].tv_nsec == before->mtimes[j].tv_nsec;
		if (old) {
			free(after->paths[i]);
			continue;
		}
		after->paths[k] = after->paths[i];
		after->mtimes[k++] = after->mtimes[i];
	}
	after->n = k;
}

/* ---- running the child ------------------------------------------------- */

static volatile sig_atomic_t child_pid;

/*
 * Forward a signal sent to allocprof by a process (kill, a supervisor).
 * SIGINT from the terminal (si_code SI_KERNEL) already went to the whole
 * foreground process group, the child included: do not send it twice.
 */
static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
	(void)uctx;
	if (child_pid > 0 && (!info || info->si_code != SI_KERNEL))
		kill((pid_t)child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	struct strbuf b = {0};
	int rc = sb_append(&b, lib, strlen(lib));
	if (!rc && old && *old)
		rc = sb_append(&b, " ", 1) || sb_append(&b, old, strlen(old));
	if (!rc)
		rc = setenv("LD_PRELOAD", b.s, 1);
	free(b.s);
	return rc;
}

/*
 * Start argv[0] with the runtime preloaded and wait for it. Returns the exit
 * status to pass on; *started tells whether the program ran at all, *signo
 * the signal that killed it (0 if none).
 */
static int run_child(char **argv, const char *lib, const char *options,
		     bool *started, int *signo)
{
	int pipefd[2];
	sigset_t block, oldmask;
	*started = false;
	*signo = 0;
	if (pipe2(pipefd, O_CLOEXEC)) {
		ap_cli_error("pipe: %s", strerror(errno));
		return 126;
	}
	sigemptyset(&block);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &oldmask);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		close(pipefd[0]);
		close(pipefd[1]);
		ap_cli_error("fork: %s", strerror(e));
		return 126;
	}
	if (pid == 0) {
		close(pipefd[0]);
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		int e = 0;
		if (set_preload(lib) || setenv("ALLOCPROF_OPTIONS", options, 1))
			e = errno ? errno : ENOMEM;
		else
			execvp(argv[0], argv);
		if (!e)
			e = errno;
		ssize_t w = write(pipefd[1], &e, sizeof e);
		(void)w;
		_exit(127);
	}
	close(pipefd[1]);
	child_pid = pid;
	struct sigaction sa, old[NFORWARDED];
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++) {
		/* A signal ignored when we started (nohup, a script's background
		 * job) stays ignored, as it is in the child. */
		sigaction(forwarded[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &oldmask, NULL);

	int exec_errno = 0;
	ssize_t r;
	do
		r = read(pipefd[0], &exec_errno, sizeof exec_errno);
	while (r < 0 && errno == EINTR);
	close(pipefd[0]);

	int st = 0;
	pid_t w;
	do
		w = waitpid(pid, &st, 0);
	while (w < 0 && errno == EINTR);
	child_pid = 0;
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &old[i], NULL);

	if (r == (ssize_t)sizeof exec_errno) {
		if (exec_errno == ENOENT) {
			ap_cli_error("%s: command not found", argv[0]);
			return 127;
		}
		ap_cli_error("%s: cannot execute: %s", argv[0],
			     strerror(exec_errno));
		return 126;
	}
	*started = true;
	if (w < 0) {
		ap_cli_error("waitpid: %s", strerror(errno));
		return 126;
	}
	if (WIFSIGNALED(st)) {
		*signo = WTERMSIG(st);
		return 128 + WTERMSIG(st);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 126;
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
	bool quiet;
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
	const char *user = getenv("ALLOCPROF_OPTIONS");
	if (user && *user && sb_append(b, user, strlen(user)))
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
	if (find_preload(lib, sizeof lib)) {
		ap_cli_error("cannot find %s beside this executable or in %s",
			     PRELOAD_NAME,
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
	    pattern_to_glob(pattern, globpat, sizeof globpat)) {
		ap_cli_error("cannot compose ALLOCPROF_OPTIONS");
		free(opts.s);
		free(o.extra);
		return AP_EXIT_USAGE;
	}
	struct seen before, after;
	if (seen_scan(globpat, &before))
		memset(&before, 0, sizeof before);
	bool started;
	int signo;
	int status = run_child(argv + cmd, lib, opts.s, &started, &signo);
	if (started && !o.quiet) {
		if (seen_scan(globpat, &after) == 0) {
			seen_subtract(&after, &before);
			if (after.n)
				print_summary(after.paths, after.n, pprof);
			else if (signo)
				ap_cli_error("no profile was written: the program "
					     "died of signal %d (%s) before its "
					     "exit dump", signo, strsignal(signo));
			else
				ap_cli_error("no profile was written (pattern %s)",
					     pattern);
			seen_free(&after);
		}
	}
	seen_free(&before);
	free(opts.s);
	free(o.extra);
	return status;
}
