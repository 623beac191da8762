/*
 * procs.h: the runtime across processes and terminating signals.
 *
 * Three things every profiled process needs besides sampling, kept out of
 * runtime.c (the sampling core):
 *
 * - Names. A pattern without %p names one file, but exec'd programs, fork
 *   and clone children and wrappers (timeout, env, make) all inherit it. A
 *   process never replaces a file another process wrote after this one
 *   started: its own pid is inserted instead (rt_expand_pattern's need_pid).
 *   Nor one an earlier runtime of this process wrote (the program before
 *   an exec, same pid): ".gN" is inserted then (rt_expand_pattern_gen).
 * - Processes the fork handlers did not see. A raw clone(SIGCHLD) child is
 *   a copy of the parent whose pthread_atfork handlers never ran; a vfork
 *   child shares the parent's memory. The runtime checks getpid() against
 *   its cached pid before it dumps or stops anything: a copy is adopted as a
 *   fork child (own pid, own files), a process sharing the parent's memory
 *   touches nothing (its exit must not stop the parent's HTTP endpoint or
 *   write under the parent's name).
 * - Terminating signals (dump_on=). For each listed signal the program has
 *   left at its default action, the runtime installs a handler that asks
 *   the dumper thread for a profile, waits for it at most
 *   PROCS_SIGNAL_WAIT_MS, restores the default action and re-raises, so the
 *   process still dies of that signal (status 143 for SIGTERM). The
 *   program keeps seeing the default action: sigaction and signal are
 *   interposed (interpose_signal.c), so a query reports SIG_DFL and any
 *   handler the program installs later simply replaces the runtime's.
 *   The dump never runs in the handler.
 */
#ifndef AP_PRELOAD_PROCS_H
#define AP_PRELOAD_PROCS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest a terminating signal waits for its profile before the process
 * dies anyway (container runtimes allow 10 s between SIGTERM and SIGKILL). */
#define PROCS_SIGNAL_WAIT_MS 5000

/* At initialisation (guard set, after dumper_configure): remember the start
 * time for the name rule, check that the program's malloc is the runtime's
 * (detect.h), resolve the real sigaction, install the dump_on handlers. */
void procs_init(void);

/* End the process as the next _exit does (resolved by procs_init; before
 * that, or without one, the exit_group system call itself). */
__attribute__((noreturn)) void procs_real_exit(int status);

/* Whether a handler of the runtime is installed for a dump_on signal (the
 * dumper thread is then needed). */
bool procs_signal_dumps_armed(void);

/*
 * Before a dump or at exit: is this still the process the runtime's state
 * belongs to? Adopts a copy made without the fork handlers (rt_adopt_child)
 * and returns true; returns false in a process that shares the memory of
 * the one the runtime started in (vfork child): do nothing then.
 */
bool procs_check_pid(void);

/*
 * At exit in a process sharing the profiled one's memory (a vfork child
 * calling exit): its exit ran the parent's exit handlers and library
 * destructors, which will not run again when the parent exits. Ask the
 * parent's dumper thread for its profile now (bounded wait), under the
 * parent's name; touch nothing else.
 */
void procs_shared_exit(void);

/*
 * The file name for dump number seq of pattern (or the port file's, with
 * seq 0): rt_expand_pattern, with the pid inserted when this is a fork
 * child or when the plain name would replace a file another process wrote
 * since this one started. 0 or AP_ERANGE. Call under the dump lock.
 */
int procs_file_name(const char *pattern, uint64_t seq, char *out, size_t cap);
/* The extended attribute a profile the runtime writes carries: when it was
 * written, CLOCK_REALTIME in decimal nanoseconds. procs_file_name reads it
 * when a file's stamp cannot say whether it was written before this
 * runtime started. */
#define PROCS_WRITTEN_XATTR "user.allocprof.written"
/* After writing path: remember it as this process's own. */
void procs_file_written(const char *path);

/* The interposed dlclose (interpose_signal.c): remember the object's
 * mappings for later profiles (dump_retire_object), then unload it. */
int procs_dlclose(void *handle);
/* The interposed chroot (interpose_signal.c): keep the output directory
 * reachable (outdir.h), then the real call. */
int procs_chroot(const char *path);
/* The interposed unshare and setns (interpose_signal.c): the runtime's
 * threads stopped around the calls that need a single-threaded process. */
int procs_unshare(int flags);
/* The interposed prctl (interpose_signal.c): PR_SET_SECCOMP goes through
 * rt_before_sandbox first. */
int procs_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		unsigned long a5);
/* Stop the runtime's threads (dumper, HTTP endpoint, push's sender) and
 * wait until the kernel no longer has them; start them again, unless the
 * process confined itself. Under rt_enter, in the runtime's own process. */
void procs_stop_threads(bool *http_was);
void procs_start_threads(bool http_was);
int procs_setns(int fd, int nstype);

/* The interposed sigaction and signal (interpose_signal.c). */
int procs_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void (*procs_signal(int sig, void (*handler)(int), int flags, bool mask_self))(int);

#endif
