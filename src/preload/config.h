/*
 * config.h: the runtime's options (ALLOCPROF_OPTIONS) and dump file names.
 *
 * One table (config.c) names every key, its type, bounds and help line; the
 * generic parser in src/lib/options.c applies it. Adding a key = one row
 * plus a field here (http=ADDR:PORT is an AP_OPT_CUSTOM parsed by http.c).
 */
#ifndef AP_PRELOAD_CONFIG_H
#define AP_PRELOAD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#include "allocprof/options.h"
#include "config_extra.h"
#include "http.h"

#define RT_PATH_CAP 1024

/* The shortest interval= accepted: below it the dumper would do nothing
 * but write profiles. */
#define RT_INTERVAL_MIN_NS 1000000ULL

/* dump_on= names (config.c): the terminating signals that may write a
 * profile when the program leaves them at their default action. */
#define RT_DUMP_ON_DEFAULT \
	((1ULL << SIGTERM) | (1ULL << SIGINT) | (1ULL << SIGHUP))

typedef enum { RT_FORMAT_PPROF = 0, RT_FORMAT_HEAPV2 = 1 } rt_format;
typedef enum { RT_FORK_FOLLOW = 0, RT_FORK_STOP = 1 } rt_fork_mode;

/*
 * range_max's default: sampled blocks of 64 KiB or more stay with the
 * allocator underneath, in the sampled set. A block that size is at least
 * 16 pages: from the region it would cost page faults on first use, a
 * mincore or madvise at its free, and warm-cache budget, where the
 * allocator reuses its own warm memory for it (malloc_workload_bench
 * mixed, 10M operations: 3600 mincore and 740 madvise calls at 4 and 7.5 us
 * each, 20 ms of the 45 ms its 14,000 samples cost, went to under 10 of
 * each). And
 * it is 8 times free's filter window (two pages), so the pointers the
 * filter sends to the slow path for nothing (blocks starting in the
 * window where a live sampled block starts) span at most 1/8 of the
 * sampled blocks' bytes.
 */
#define RT_RANGE_MAX_DEFAULT ((uint64_t)64 << 10)

typedef struct rt_options {
	uint64_t rate;          /* mean sampling interval R, bytes; 0 =
				   rate=off, dormant until started (control.h) */
	char output[RT_PATH_CAP]; /* pattern; "" = default for the format */
	uint64_t seed;          /* 0 = random */
	bool dump_at_exit;
	bool exec_note;         /* say when an exec leaves the runtime behind */
	bool seccomp_keep;      /* go on profiling after the program installs
				   a seccomp filter (rt_before_sandbox) */
	bool unwind_trim;       /* give back the unwind tables' pages (ehtrim.h) */
	int signal;             /* dump on this signal; 0 = none */
	uint64_t interval_ns;   /* periodic dumps; 0 = none, else at least
				   RT_INTERVAL_MIN_NS */
	uint64_t every_bytes;   /* dump each time this many more bytes (HT
				   estimate) were allocated; 0 = none */
	bool peak;              /* dump at new in-use peaks (rate-limited) */
	uint64_t peak_gap_ns;   /* minimum time between two peak dumps */
	uint64_t timeline_ns;   /* timeline cadence (tlring.h); 0 = off */
	bool lifetimes;         /* per-site lifetime bins (lifebins.h) */
	uint64_t max_depth;
	int unwinder;           /* unwinder_kind */
	int format;             /* rt_format */
	int fork_mode;          /* rt_fork_mode */
	bool range;             /* 1: serve sampled blocks from allocprof's own
				   address range (design 2, region.h); off by default */
	uint64_t range_max;     /* ... those below this many bytes (0: all) */
	bool verbose;
	bool help;              /* print the option table on stderr at start */
	uint64_t dump_on;       /* bit 1<<SIG: dump when SIG would end the
				   program by its default action */
	http_listen http;       /* HTTP endpoint (http.h); off by default */
	bool http_public;       /* allow http= on a non-loopback address */
	char http_portfile[RT_PATH_CAP]; /* where to write the bound ADDR:PORT */
	char sample_table[RT_PATH_CAP]; /* per-class rates (allocprof tune -o) */
	rt_limit rss_limit;     /* dump when RSS crosses it (memtrig.h) */
	uint64_t psi_limit;     /* dump when memory "some avg10" reaches this
				   percentage; 0 = off */
	rt_push_url push;       /* POST each dump there (push.h) */
	uint64_t push_interval_ns; /* also a pushed-only profile this often */
	bool push_public;       /* allow push= to a non-loopback address */
	char push_name[128];    /* Pyroscope application name; "" = allocprof.PROG */
	int start_on;           /* start sampling on this signal; 0 = none */
} rt_options;

/* Defaults: rate 524288, pprof, dump at exit, depth 64, fork=follow. */
void rt_options_default(rt_options *o);

/* The option table (for documentation and tests). */
const ap_option_spec *rt_option_specs(size_t *n);

/* Parse text into o; problems go to on_error. Returns their number. */
int rt_options_parse(rt_options *o, const char *text, ap_option_error_fn on_error,
		     void *ctx);

/* The pattern in effect: o->output or the format's default. */
const char *rt_output_pattern(const rt_options *o);

/*
 * Anchor a relative pattern at directory cwd ("a.pb.gz" -> "/dir/a.pb.gz"),
 * so dumps land where the program started even if it changes directory
 * later. Absolute patterns, or a NULL/empty cwd, are copied unchanged.
 * 0, or AP_ERANGE when the result does not fit in cap bytes.
 */
int rt_anchor_pattern(const char *pattern, const char *cwd, char *out, size_t cap);

/*
 * Expand a file name pattern: %p = pid, %t = time (seconds since the
 * epoch), %n = sequence number, %% = '%'; other '%x' stay as written. When
 * need_pid is set and the pattern has no %p (a fork child that keeps
 * profiling), ".PID" is inserted before the file name's first '.' (or
 * appended) so parent and child never write the same file.
 * 0, or AP_ERANGE when the result does not fit in cap bytes.
 */
int rt_expand_pattern(const char *pattern, long pid, uint64_t time_s,
		      uint64_t seq, bool need_pid, char *out, size_t cap);
/* The same, with ".gGEN" inserted there too when gen > 0 (after ".PID"):
 * the names of a later runtime in the same process (procs_file_name). */
int rt_expand_pattern_gen(const char *pattern, long pid, uint64_t time_s,
			  uint64_t seq, bool need_pid, unsigned gen, char *out,
			  size_t cap);

#endif
