/*
 * runner.h: the machinery behind `allocprof run`: finding
 * liballocprof_preload.so, running a program under it (LD_PRELOAD and
 * ALLOCPROF_OPTIONS set in the child only, SIGINT/SIGTERM/SIGHUP sent to
 * allocprof forwarded), and telling which profiles the run wrote by
 * globbing the output pattern before and after.
 */
#ifndef ALLOCPROF_CLI_RUNNER_H
#define ALLOCPROF_CLI_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define RUNNER_PRELOAD_NAME "liballocprof_preload.so"

/*
 * The runtime's path into out: beside this executable, in the install tree
 * relative to it, or in the configured install prefix. 0, or -1 when none
 * is readable.
 */
int runner_find_preload(char *out, size_t cap);

/*
 * The glob matching every file name the runtime can make from pattern:
 * %p, %t and %n (and any other conversion) become *, %% a literal %, and
 * glob's own metacharacters are escaped. 0, or -1 when out is too small.
 */
int runner_pattern_glob(const char *pattern, char *out, size_t cap);

/* Regular files matching a glob, with their modification times. */
typedef struct runner_files {
	char **paths;
	struct timespec *mtimes;
	size_t n;
} runner_files;
/* Fill s with the files matching globpat (none is fine). 0 or -1. */
int runner_files_scan(const char *globpat, runner_files *s);
/* Remove from after the files that are unchanged since before. */
void runner_files_subtract(runner_files *after, const runner_files *before);
void runner_files_free(runner_files *s);

/*
 * Symbolize each of the n pprof profiles in place (symbolize.h: function
 * names, files and lines from the binaries on this machine, so pprof and
 * every reader show names without them): same name and mode, replaced
 * atomically. A profile that cannot be read, symbolized or written stays
 * as it was, with one line on stderr; warn adds symbolize.h's warnings
 * (missing files, build-ID mismatches). Returns how many stayed.
 */
size_t runner_symbolize_files(char *const *paths, size_t n, bool warn);

/*
 * Why program (a command name is looked up in PATH as execvp does) can
 * have written no profile by the time it exits: statically linked, or
 * set-user-ID or set-group-ID for someone else, where the dynamic loader
 * does not preload the runtime; or written in Go, whose runtime ends the
 * process without the exit handlers that write the exit profile. A
 * static phrase ("is statically linked: ..."), or NULL when nothing says.
 */
const char *runner_no_profile_reason(const char *program);

/*
 * Start argv[0] with the runtime lib preloaded and ALLOCPROF_OPTIONS set to
 * options, and wait for it. Returns the exit status to pass on (the
 * program's; 128+N after signal N; 127 not found, 126 not executable, each
 * reported on stderr); *started tells whether the program ran at all,
 * *signo the signal that killed it (0 if none).
 */
int runner_run_child(char **argv, const char *lib, const char *options,
		     bool *started, int *signo);

/*
 * After runner_run_child: the processes the program left running (a
 * daemon it forked, background jobs), which became this process's
 * children since runner_run_child makes it their subreaper. Fills up to
 * cap pids; returns how many there are.
 */
size_t runner_survivors(pid_t *out, size_t cap);

#endif
