/*
 * config.c: the ALLOCPROF_OPTIONS table and dump file name patterns
 * (config.h). Only the signal key needs a custom parser; every other key is
 * one row of a generic type.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "allocprof/common.h"
#include "allocprof/sampler.h"
#include "unwinder.h"

/* The values of unwinder= (unwinder.h names them; defined here so the
 * table links without the unwinders themselves). */
const char *const unwinder_names[] = { "libunwind", "libgcc", "fp", NULL };
static const char *const format_names[] = { "pprof", "heap_v2", NULL };
static const char *const fork_names[] = { "follow", "stop", NULL };

/* Signals a user may reasonably dedicate to dumps. Fatal and job-control
 * signals are refused: taking them over would change the program. */
static const struct {
	const char *name;
	int sig;
} signal_names[] = { { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
		     { "HUP", SIGHUP },   { "PROF", SIGPROF },
		     { "URG", SIGURG },   { "WINCH", SIGWINCH } };

static bool signal_allowed(long n)
{
	if (n >= SIGRTMIN && n <= SIGRTMAX)
		return true;
	for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (signal_names[i].sig == n)
			return true;
	return false;
}

static int parse_signal(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	static const char what[] =
		"a signal name or number (USR1, SIGUSR2, HUP, PROF, URG, WINCH, "
		"RTMIN..RTMAX; 0 = none)";
	uint64_t num;
	if (ap_options_parse_u64(v, n, &num) == 0) {
		if (num == 0 || (num < 1000 && signal_allowed((long)num))) {
			*(int *)dst = (int)num;
			return 0;
		}
		snprintf(err, errlen, "%s", what);
		return AP_EINVAL;
	}
	if (n > 3 && strncmp(v, "SIG", 3) == 0) {
		v += 3;
		n -= 3;
	}
	for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++) {
		if (strlen(signal_names[i].name) == n &&
		    memcmp(signal_names[i].name, v, n) == 0) {
			*(int *)dst = signal_names[i].sig;
			return 0;
		}
	}
	snprintf(err, errlen, "%s", what);
	return AP_EINVAL;
}

/* interval=: 0 (never) or at least RT_INTERVAL_MIN_NS. A value that rounds
 * to 0 ns but is not written as zero ("0.0000000001s") is refused rather
 * than taken to mean never. */
static int parse_interval(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	uint64_t ns;
	bool nonzero_digit = false;
	for (size_t i = 0; i < n; i++)
		if (v[i] >= '1' && v[i] <= '9')
			nonzero_digit = true;
	if (ap_options_parse_duration_ns(v, n, &ns) != 0 ||
	    (ns == 0 && nonzero_digit) || (ns != 0 && ns < RT_INTERVAL_MIN_NS)) {
		snprintf(err, errlen, "0 (never) or a duration of at least 1ms");
		return AP_EINVAL;
	}
	*(uint64_t *)dst = ns;
	return 0;
}

/* rate=: bytes as AP_OPT_SIZE, or off (dormant until started, control.h). */
static int parse_rate(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	uint64_t r;
	if (n == 3 && memcmp(v, "off", 3) == 0) {
		*(uint64_t *)dst = 0;
		return 0;
	}
	if (ap_options_parse_size(v, n, &r) != 0 || r < 1 || r > AP_SAMPLER_RATE_MAX) {
		snprintf(err, errlen, "a size from 1 to 2^52 bytes (K/M/G suffixes), or off");
		return AP_EINVAL;
	}
	*(uint64_t *)dst = r;
	return 0;
}

/* dump_on=: terminating signals joined by '+' (',' separates options). */
static const struct {
	const char *name;
	int sig;
} dump_on_names[] = { { "term", SIGTERM }, { "int", SIGINT },   { "hup", SIGHUP },
		      { "quit", SIGQUIT }, { "segv", SIGSEGV }, { "abrt", SIGABRT },
		      { "bus", SIGBUS },   { "fpe", SIGFPE },   { "ill", SIGILL } };

static int parse_dump_on(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	uint64_t mask = 0;
	if (!(n == 4 && memcmp(v, "none", 4) == 0)) {
		size_t i = 0;
		while (i <= n) {
			size_t j = i;
			while (j < n && v[j] != '+')
				j++;
			size_t k = 0, nk = sizeof dump_on_names / sizeof dump_on_names[0];
			for (; k < nk; k++)
				if (strlen(dump_on_names[k].name) == j - i &&
				    memcmp(dump_on_names[k].name, v + i, j - i) == 0)
					break;
			if (k == nk) {
				snprintf(err, errlen, "none or signals joined by '+' among "
					 "term int hup quit segv abrt bus fpe ill");
				return AP_EINVAL;
			}
			mask |= 1ULL << dump_on_names[k].sig;
			i = j + 1;
		}
	}
	*(uint64_t *)dst = mask;
	return 0;
}

#define OFF(f) offsetof(rt_options, f)

static const ap_option_spec specs[] = {
	{ "rate", AP_OPT_CUSTOM, OFF(rate), 0, 0, NULL, 0, parse_rate,
	  "mean bytes between samples (1 = record every allocation); off = "
	  "dormant until start_on, HTTP or allocprof attach starts it" },
	{ "output", AP_OPT_STRING, OFF(output), 0, 0, NULL, RT_PATH_CAP, NULL,
	  "file name pattern: %p pid, %t time, %n sequence, %% percent" },
	{ "seed", AP_OPT_U64, OFF(seed), 0, 0, NULL, 0, NULL,
	  "random seed (0 = random; fixed seeds make runs reproducible)" },
	{ "dump_at_exit", AP_OPT_BOOL, OFF(dump_at_exit), 0, 0, NULL, 0, NULL,
	  "write a profile when the program exits or execs another" },
	{ "exec_note", AP_OPT_BOOL, OFF(exec_note), 0, 0, NULL, 0, NULL,
	  "say on stderr when the program execs another whose environment "
	  "drops the runtime (allocprof run sets it)" },
	{ "seccomp_keep", AP_OPT_BOOL, OFF(seccomp_keep), 0, 0, NULL, 0, NULL,
	  "go on profiling after the program installs a seccomp filter with "
	  "prctl (its filter must allow the dumps' system calls); off: the "
	  "profile so far is written then, and nothing more" },
	{ "unwind_trim", AP_OPT_BOOL, OFF(unwind_trim), 0, 0, NULL, 0, NULL,
	  "give back the pages of unwind tables the libunwind unwinder read "
	  "(every 64 lookups): a program with much code keeps its resident "
	  "size" },
	{ "signal", AP_OPT_CUSTOM, OFF(signal), 0, 0, NULL, 0, parse_signal,
	  "dump when this signal arrives (e.g. SIGUSR2 or 12)" },
	{ "interval", AP_OPT_CUSTOM, OFF(interval_ns), 0, 0, NULL, 0, parse_interval,
	  "dump every this long (30, 1.5s, 500ms, 2m; at least 1ms); 0 = never" },
	{ "dump_on", AP_OPT_CUSTOM, OFF(dump_on), 0, 0, NULL, 0, parse_dump_on,
	  "dump when these signals end the program, joined by '+' (default "
	  "term+int+hup; also quit segv abrt bus fpe ill; none)" },
	{ "every_bytes", AP_OPT_SIZE, OFF(every_bytes), 0, 0, NULL, 0, NULL,
	  "dump each time this many more bytes were allocated (estimate)" },
	{ "peak", AP_OPT_BOOL, OFF(peak), 0, 0, NULL, 0, NULL,
	  "dump at each new in-use peak, at most once per peak_gap" },
	{ "peak_gap", AP_OPT_DURATION, OFF(peak_gap_ns), 0, 0, NULL, 0, NULL,
	  "minimum time between two peak dumps (default 1s)" },
	{ "timeline", AP_OPT_CUSTOM, OFF(timeline_ns), 0, 0, NULL, 0, parse_interval,
	  "record live bytes per site this often into a bounded series written "
	  "with each profile (1s, 500ms; at least 1ms); 0 = off (default)" },
	{ "lifetimes", AP_OPT_BOOL, OFF(lifetimes), 0, 0, NULL, 0, NULL,
	  "keep per-site lifetimes of sampled blocks for report --lifetimes "
	  "(default 1)" },
	{ "max_depth", AP_OPT_U64, OFF(max_depth), 1, UNWIND_DEPTH_MAX, NULL, 0,
	  NULL, "deepest stack recorded, in frames" },
	{ "unwinder", AP_OPT_ENUM, OFF(unwinder), 0, 0, unwinder_names, 0, NULL,
	  "stack unwinder: libunwind, libgcc or fp (frame pointers)" },
	{ "format", AP_OPT_ENUM, OFF(format), 0, 0, format_names, 0, NULL,
	  "profile format: pprof (gzip'd protobuf) or heap_v2 (jeprof text)" },
	{ "fork", AP_OPT_ENUM, OFF(fork_mode), 0, 0, fork_names, 0, NULL,
	  "in a forked child: follow (own file, pid in its name) or stop" },
	{ "range", AP_OPT_BOOL, OFF(range), 0, 0, NULL, 0, NULL,
	  "1 = serve sampled blocks (thread rate >= 16 KiB) from allocprof's own "
	  "address range; 0 (default) = every block stays the allocator's" },
	{ "range_max", AP_OPT_SIZE, OFF(range_max), 0, 0, NULL, 0, NULL,
	  "sampled blocks this large or larger stay with the allocator "
	  "(default 64k); 0 = serve every size from the range" },
	{ "verbose", AP_OPT_BOOL, OFF(verbose), 0, 0, NULL, 0, NULL,
	  "print what the runtime does (dumps, settings, its memory at exit) on stderr" },
	{ "http", AP_OPT_CUSTOM, OFF(http), 0, 0, NULL, 0, http_parse_listen,
	  "serve /debug/pprof/heap, /allocs and /metrics on [ADDR:]PORT "
	  "(127.0.0.1 unless an address is given; 0 = any free port; off)" },
	{ "http_public", AP_OPT_BOOL, OFF(http_public), 0, 0, NULL, 0, NULL,
	  "allow http= on an address other than loopback (exposes heap contents)" },
	{ "http_portfile", AP_OPT_STRING, OFF(http_portfile), 0, 0, NULL,
	  RT_PATH_CAP, NULL,
	  "write the endpoint's ADDR:PORT to this file (%p pid, %t time)" },
	{ "sample_table", AP_OPT_STRING, OFF(sample_table), 0, 0, NULL,
	  RT_PATH_CAP, NULL,
	  "per-size-class rates from this file (allocprof tune -o); its base "
	  "rate replaces rate=" },
	{ "rss_limit", AP_OPT_CUSTOM, OFF(rss_limit), 0, 0, NULL, 0, rt_parse_limit,
	  "dump once when resident memory crosses this (bytes, or N% of the "
	  "cgroup's limit); checked every 100ms; 0 = off" },
	{ "psi_limit", AP_OPT_U64, OFF(psi_limit), 0, 100, NULL, 0, NULL,
	  "dump once when memory pressure (PSI some avg10, %) reaches this; 0 = off" },
	{ "push", AP_OPT_CUSTOM, OFF(push), 0, 0, NULL, 0, rt_parse_push_url,
	  "POST each profile to http://ADDR[:PORT][/PATH] (Pyroscope /ingest "
	  "form; plain http, loopback unless push_public=1); off" },
	{ "push_interval", AP_OPT_CUSTOM, OFF(push_interval_ns), 0, 0, NULL, 0,
	  parse_interval, "also push a profile (not written to disk) this often "
	  "(at least 1ms); 0 = never" },
	{ "push_public", AP_OPT_BOOL, OFF(push_public), 0, 0, NULL, 0, NULL,
	  "allow push= to an address other than loopback (sends heap contents)" },
	{ "push_name", AP_OPT_STRING, OFF(push_name), 0, 0, NULL, 128, NULL,
	  "application name pushed profiles carry (default allocprof.PROGRAM)" },
	{ "start_on", AP_OPT_CUSTOM, OFF(start_on), 0, 0, NULL, 0, parse_signal,
	  "dormant until this signal arrives (e.g. SIGUSR2), then sample at rate=" },
	{ "help", AP_OPT_BOOL, OFF(help), 0, 0, NULL, 0, NULL,
	  "print this list of options on stderr" },
};

const ap_option_spec *rt_option_specs(size_t *n)
{
	*n = sizeof specs / sizeof specs[0];
	return specs;
}

void rt_options_default(rt_options *o)
{
	memset(o, 0, sizeof *o);
	o->rate = AP_SAMPLER_DEFAULT_RATE;
	o->dump_at_exit = true;
	o->unwind_trim = true;
	o->peak_gap_ns = 1000000000ULL;
	o->lifetimes = true;
	o->max_depth = 64;
	o->unwinder = UNWINDER_LIBUNWIND;
	o->format = RT_FORMAT_PPROF;
	o->fork_mode = RT_FORK_FOLLOW;
	o->range = false;
	o->range_max = RT_RANGE_MAX_DEFAULT;
	o->dump_on = RT_DUMP_ON_DEFAULT;
}

int rt_options_parse(rt_options *o, const char *text, ap_option_error_fn on_error,
		     void *ctx)
{
	return ap_options_parse(text, specs, sizeof specs / sizeof specs[0], o,
				on_error, ctx);
}

const char *rt_output_pattern(const rt_options *o)
{
	if (o->output[0])
		return o->output;
	return o->format == RT_FORMAT_HEAPV2 ? "allocprof.%p.%n.heap"
					     : "allocprof.%p.%n.pb.gz";
}

int rt_anchor_pattern(const char *pattern, const char *cwd, char *out, size_t cap)
{
	if (!pattern || !out || cap == 0)
		return AP_EINVAL;
	int n;
	if (pattern[0] == '/' || !cwd || !cwd[0])
		n = snprintf(out, cap, "%s", pattern);
	else
		n = snprintf(out, cap, "%s%s%s", cwd,
			     cwd[strlen(cwd) - 1] == '/' ? "" : "/", pattern);
	return n < 0 || (size_t)n >= cap ? AP_ERANGE : 0;
}

/* Append (s, n) to out at *len; false when it does not fit (NUL included). */
static bool put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (n >= cap - *len)
		return false;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
	return true;
}

static bool put_u64(char *out, size_t cap, size_t *len, uint64_t v)
{
	char buf[24];
	int k = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return put(out, cap, len, buf, (size_t)k);
}

int rt_expand_pattern(const char *pattern, long pid, uint64_t time_s,
		      uint64_t seq, bool need_pid, char *out, size_t cap)
{
	return rt_expand_pattern_gen(pattern, pid, time_s, seq, need_pid, 0, out, cap);
}

int rt_expand_pattern_gen(const char *pattern, long pid, uint64_t time_s,
			  uint64_t seq, bool need_pid, unsigned gen, char *out,
			  size_t cap)
{
	if (!pattern || !out || cap == 0)
		return AP_EINVAL;
	size_t len = 0;
	out[0] = '\0';
	bool has_pid = strstr(pattern, "%p") != NULL;
	/* Where ".PID" goes when the child needs one: before the first '.' of
	 * the base name, or at the end. */
	const char *base = strrchr(pattern, '/');
	base = base ? base + 1 : pattern;
	const char *dot = strchr(base, '.');
	if (dot == base) /* a hidden file: its leading dot is not an extension */
		dot = strchr(base + 1, '.');
	for (const char *p = pattern;; p++) {
		if (need_pid && !has_pid && (p == dot || (!dot && *p == '\0'))) {
			if (!put(out, cap, &len, ".", 1) ||
			    !put_u64(out, cap, &len, (uint64_t)pid))
				return AP_ERANGE;
		}
		if (gen && (p == dot || (!dot && *p == '\0'))) {
			if (!put(out, cap, &len, ".g", 2) || !put_u64(out, cap, &len, gen))
				return AP_ERANGE;
		}
		if (*p == '\0')
			break;
		bool ok = true;
		if (p[0] == '%' && p[1]) {
			switch (p[1]) {
			case 'p': ok = put_u64(out, cap, &len, (uint64_t)pid); p++; break;
			case 't': ok = put_u64(out, cap, &len, time_s); p++; break;
			case 'n': ok = put_u64(out, cap, &len, seq); p++; break;
			case '%': ok = put(out, cap, &len, "%", 1); p++; break;
			default: ok = put(out, cap, &len, p, 1); break;
			}
		} else {
			ok = put(out, cap, &len, p, 1);
		}
		if (!ok)
			return AP_ERANGE;
	}
	return 0;
}
