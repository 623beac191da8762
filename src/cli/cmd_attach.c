/*
 * cmd_attach.c: `allocprof attach PID` and `allocprof detach PID`: profile
 * a program that is already running (docs/ATTACH.md).
 *
 * attach checks the target (inject.h refuses what cannot work), makes one
 * of its threads call its own libc's dlopen on liballocprof_preload.so,
 * then the runtime's ap_runtime_attach(options), which hooks the program's
 * allocator calls and starts sampling. Then, by default, it waits until
 * interrupted (SIGINT, SIGTERM) or --duration has passed, and detaches:
 * ap_runtime_detach writes the final profile and stops sampling. With
 * --no-wait it returns at once and `allocprof detach PID` ends the window.
 * While a remote call is in progress SIGINT and SIGTERM are held back: a
 * tracer dying mid-call would leave the thread on the call's registers.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocprof/options.h"
#include "cli_util.h"
#include "commands.h"
#include "config.h" /* the runtime's option table */
#include "elfdyn.h"
#include "inject.h"
#include "runner.h"

#define RUNTIME_FILE "liballocprof_preload"

struct attach_opts {
	const char *rate, *output;
	char extra[4096];
	uint64_t duration_ns;
	bool no_wait, quiet;
	pid_t pid;
};

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *out, bool detach)
{
	if (detach) {
		fputs("usage: allocprof detach PID\n\n"
		      "End `allocprof attach --no-wait PID`: write the final profile\n"
		      "and stop sampling (the process keeps running).\n", out);
		return;
	}
	fputs("usage: allocprof attach [OPTIONS] PID\n"
	      "\n"
	      "Profile a running process (Linux x86_64, glibc >= 2.34): load\n"
	      "liballocprof_preload.so into it with ptrace and redirect its\n"
	      "allocator calls to it; detach writes the profile.\n"
	      "\n"
	      "options:\n"
	      "  -r, --rate BYTES      mean sampling interval (default 524288)\n"
	      "  -o, --output PATTERN  profile file name (%p pid, %n sequence);\n"
	      "                        relative to this directory\n"
	      "  -e, --option KEY=VAL  any other runtime option (repeatable)\n"
	      "  -d, --duration TIME   detach after TIME (30, 1.5s, 2m); default:\n"
	      "                        when interrupted (Ctrl-C, SIGTERM)\n"
	      "      --no-wait         return once attached; end with\n"
	      "                        `allocprof detach PID`\n"
	      "  -q, --quiet           no messages but errors\n", out);
}

static int add_extra(struct attach_opts *o, const char *kv)
{
	size_t n = strlen(o->extra);
	if (!strchr(kv, '=') || strchr(kv, ',') ||
	    (size_t)snprintf(o->extra + n, sizeof o->extra - n, "%s%s", n ? "," : "", kv) >=
		    sizeof o->extra - n) {
		ap_cli_error("bad option '%s': expected KEY=VALUE without ','", kv);
		return AP_EXIT_USAGE;
	}
	return 0;
}

static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end || v <= 0 || v > INT_MAX) {
		ap_cli_error("bad PID '%s'", s);
		return AP_EXIT_USAGE;
	}
	*pid = (pid_t)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct attach_opts *o)
{
	static const struct option longopts[] = {
		{"rate", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'},
		{"option", required_argument, NULL, 'e'},
		{"duration", required_argument, NULL, 'd'},
		{"no-wait", no_argument, NULL, 'W'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c, rc = 0;
	optind = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, "+r:o:e:d:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': o->rate = optarg; break;
		case 'o': o->output = optarg; break;
		case 'e': rc = add_extra(o, optarg); break;
		case 'd':
			if (ap_options_parse_duration_ns(optarg, strlen(optarg),
							 &o->duration_ns) != 0) {
				ap_cli_error("bad duration '%s'", optarg);
				rc = AP_EXIT_USAGE;
			}
			break;
		case 'W': o->no_wait = true; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout, false); return -1;
		default: usage(stderr, false); return AP_EXIT_USAGE;
		}
	}
	if (rc)
		return rc;
	if (optind != argc - 1) {
		ap_cli_error("attach takes one PID (try 'allocprof attach --help')");
		return AP_EXIT_USAGE;
	}
	return parse_pid(argv[optind], &o->pid);
}

static void option_error(void *ctx, const char *msg)
{
	(void)ctx;
	ap_cli_error("option: %s", msg);
}

/* The runtime's options: checked with its own table; output absolute. */
static int compose(const struct attach_opts *o, char *out, size_t cap, char *pattern,
		   size_t pcap)
{
	char cwd[PATH_MAX];
	const char *pat = o->output ? o->output : "allocprof.%p.%n.pb.gz";
	if (strchr(pat, ',') ||
	    rt_anchor_pattern(pat, getcwd(cwd, sizeof cwd) ? cwd : NULL, pattern, pcap)) {
		ap_cli_error("bad output pattern '%s'", pat);
		return AP_EXIT_USAGE;
	}
	int n = snprintf(out, cap, "%s%s%soutput=%s%s%s", o->rate ? "rate=" : "",
			 o->rate ? o->rate : "", o->rate ? "," : "", pattern,
			 o->extra[0] ? "," : "", o->extra);
	if (n < 0 || (size_t)n >= cap) {
		ap_cli_error("options too long");
		return AP_EXIT_USAGE;
	}
	rt_options parsed;
	rt_options_default(&parsed);
	return rt_options_parse(&parsed, out, option_error, NULL) ? AP_EXIT_USAGE : 0;
}

/* Call symbol `name` of the object at (path, base) in the target. A
 * runtime entry point answers AP_EBUSY in a thread that was stopped inside
 * the runtime (a sample half taken, or one of the runtime's own threads):
 * the call is made again in another thread, for up to INJECT_SAFE_WAIT_MS. */
static int call_sym(inject_proc *p, const char *path, uintptr_t base,
		    const char *name, const inject_arg *args, int nargs, uint64_t *ret,
		    uint64_t *stopped_ns)
{
	uint64_t off;
	char err[512];
	if (elfdyn_lookup(path, name, &off) != 0) {
		ap_cli_error("%s has no %s%s", path, name,
			     strcmp(name, "dlopen") ? "" : " (glibc older than 2.34?)");
		return AP_EXIT_INPUT;
	}
	bool runtime = strncmp(name, "ap_runtime_", 11) == 0;
	struct timespec nap = { 0, 2000000 };
	for (int tries = 0;; tries++) {
		int rc = inject_call(p, base + off, args, nargs, ret, stopped_ns, err,
				     sizeof err);
		if (rc) {
			ap_cli_error("%s", err);
			return rc;
		}
		if (!runtime || (int)*ret != AP_EBUSY)
			break;
		if (tries >= INJECT_SAFE_WAIT_MS / 2) {
			ap_cli_error("process %d: every thread stopped was inside the "
				     "runtime for %d s; try again", (int)p->pid,
				     INJECT_SAFE_WAIT_MS / 1000);
			return AP_EXIT_INPUT;
		}
		p->avoid[p->navoid < 16 ? p->navoid++ : tries % 16] = p->last_tid;
		nanosleep(&nap, NULL);
	}
	p->navoid = 0;
	return 0;
}

static int load_runtime(inject_proc *p, const char *lib, uint64_t *stopped)
{
	inject_arg a[2] = { { .data = lib, .n = strlen(lib) + 1 }, { .value = 2 /* RTLD_NOW */ } };
	uint64_t h = 0;
	int rc = call_sym(p, p->libc, p->libc_base, "dlopen", a, 2, &h, stopped);
	if (rc)
		return rc;
	if (!h) {
		uint64_t msg = 0;
		char text[512] = "unknown error";
		p->prefer = p->last_tid; /* dlerror's message is the thread's */
		if (call_sym(p, p->libc, p->libc_base, "dlerror", NULL, 0, &msg, NULL) == 0 && msg)
			inject_read_string(p->pid, (uintptr_t)msg, text, sizeof text);
		p->prefer = 0;
		ap_cli_error("process %d could not load the runtime: %s", (int)p->pid, text);
		return AP_EXIT_INPUT;
	}
	char err[512];
	if (inject_rescan(p, RUNTIME_FILE, err, sizeof err) || !p->runtime_base) {
		ap_cli_error("process %d: the runtime is not mapped after dlopen", (int)p->pid);
		return AP_EXIT_INPUT;
	}
	return 0;
}

/* ap_runtime_detach in the target; prints the profile's name. */
static int do_detach(inject_proc *p, bool quiet)
{
	char path[4096] = "";
	inject_arg a[2] = { { .out = path, .n = sizeof path }, { .value = sizeof path } };
	uint64_t r = 0, stopped = 0;
	int rc = call_sym(p, p->runtime, p->runtime_base, "ap_runtime_detach", a, 2, &r,
			  &stopped);
	if (rc)
		return rc;
	if ((int)r != 0) {
		ap_cli_error("process %d: %s", (int)p->pid,
			     (int)r == AP_EUNSUPPORTED ? "not attached"
						       : ap_strerror((int)r));
		return AP_EXIT_INPUT;
	}
	path[sizeof path - 1] = 0;
	if (!quiet)
		fprintf(stderr, "allocprof: detached from %d (stopped %.2f ms), wrote %s\n",
			(int)p->pid, (double)stopped / 1e6, path);
	return 0;
}

static void hold_signals(bool hold)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

/* Wait for the end of the window; false when the process exited. */
static bool wait_window(const struct attach_opts *o)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	hold_signals(false);
	struct timespec tick = { 0, 50000000 };
	uint64_t waited = 0;
	while (!interrupted && (!o->duration_ns || waited < o->duration_ns)) {
		if (!inject_alive(o->pid))
			return false;
		nanosleep(&tick, NULL);
		waited += 50000000;
	}
	hold_signals(true);
	return true;
}

static int attach(const struct attach_opts *o, const char *options, const char *lib,
		  const char *pattern)
{
	inject_proc p;
	char err[512];
	int rc = inject_open(o->pid, RUNTIME_FILE, &p, err, sizeof err);
	if (rc) {
		ap_cli_error("%s", err);
		return rc;
	}
	if (p.runtime_base && p.preloaded) {
		ap_cli_error("process %d already runs under allocprof (LD_PRELOAD): use "
			     "its start_on= signal or HTTP endpoint", (int)o->pid);
		return AP_EXIT_INPUT;
	}
	uint64_t stopped = 0, stopped2 = 0, r = 0;
	if (!p.runtime_base && (rc = load_runtime(&p, lib, &stopped)))
		return rc;
	inject_arg a = { .data = options, .n = strlen(options) + 1 };
	rc = call_sym(&p, p.runtime, p.runtime_base, "ap_runtime_attach", &a, 1, &r,
		      &stopped2);
	if (rc)
		return rc;
	if ((int)r != 0) {
		ap_cli_error("process %d: the runtime refused to attach: %s", (int)o->pid,
			     (int)r == AP_EUNSUPPORTED ? "already attached"
			     : (int)r == AP_EIO ? "it could not start in the process "
						   "(the process's stderr says why)"
						 : ap_strerror((int)r));
		return AP_EXIT_INPUT;
	}
	if (!o->quiet)
		fprintf(stderr, "allocprof: attached to %d (stopped %.2f + %.2f ms); "
			"profiles: %s\n", (int)o->pid, (double)stopped / 1e6,
			(double)stopped2 / 1e6, pattern);
	if (o->no_wait)
		return 0;
	if (!wait_window(o)) {
		if (!o->quiet)
			fprintf(stderr, "allocprof: process %d exited while attached "
				"(its profile at exit is under %s)\n", (int)o->pid, pattern);
		return 0;
	}
	return do_detach(&p, o->quiet);
}

int ap_cmd_attach(int argc, char **argv)
{
	struct attach_opts o;
	memset(&o, 0, sizeof o);
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc < 0 ? AP_EXIT_OK : rc;
	char options[8192], pattern[PATH_MAX], lib[PATH_MAX];
	if ((rc = compose(&o, options, sizeof options, pattern, sizeof pattern)))
		return rc;
	if (runner_find_preload(lib, sizeof lib)) {
		ap_cli_error("cannot find %s", RUNNER_PRELOAD_NAME);
		return AP_EXIT_USAGE;
	}
	hold_signals(true);
	rc = attach(&o, options, lib, pattern);
	hold_signals(false);
	return rc;
}

int ap_cmd_detach(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout, true);
		return AP_EXIT_OK;
	}
	pid_t pid;
	if (argc != 2) {
		usage(stderr, true);
		return AP_EXIT_USAGE;
	}
	int rc = parse_pid(argv[1], &pid);
	if (rc)
		return rc;
	inject_proc p;
	char err[512];
	if ((rc = inject_open(pid, RUNTIME_FILE, &p, err, sizeof err))) {
		ap_cli_error("%s", err);
		return rc;
	}
	if (!p.runtime_base || p.preloaded) {
		ap_cli_error("process %d is not attached", (int)pid);
		return AP_EXIT_INPUT;
	}
	hold_signals(true);
	rc = do_detach(&p, false);
	hold_signals(false);
	return rc;
}
