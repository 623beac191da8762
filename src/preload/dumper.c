/*
 * dumper.c: when profiles get written, and by whom.
 *
 * Dumps never run inside a signal handler or inside malloc (docs/DESIGN.md): the
 * signal handler and the sampling slow path only raise a flag and post a
 * semaphore (sem_post is async-signal-safe); a dedicated dumper thread, with
 * every signal blocked and its guard permanently set, wakes up and writes
 * the file. It exists only when a trigger needs it (signal=, interval=,
 * every_bytes=, peak=). The dump at exit runs in the exiting thread from the
 * runtime's destructor, after the dumper thread has been stopped; explicit
 * ap_runtime_dump calls write synchronously in the caller's thread.
 *
 * After fork the child has no dumper thread; if it keeps profiling
 * (fork=follow) the thread is started again by the child's next sample.
 *
 * The handler of a terminating signal (dump_on=, procs.c) asks for a dump
 * through dumper_dump_for_signal and polls for its completion with
 * nanosleep, bounded, before the signal ends the process; the thread
 * therefore also runs when such a handler is installed. Missed intervals
 * (a stopped process) give one dump, never a burst or a catch-up loop.
 */
#include "runtime_core.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "detect.h"
#include "ehtrim.h"
#include "memtrig.h"
#include "procmem.h"
#include "procs.h"
#include "push.h"
#include "attach.h"
#include "control.h"
#include "tlring.h"

static sem_t wake;
static pthread_t thread;
/* Read without the lock by the sampling path: atomics. */
static atomic_bool running;
static _Atomic long running_pid;
static atomic_bool stop_req, signal_req, bytes_req, peak_req;
/* A terminating signal's request (procs.c) and the dumper's answer. */
static atomic_bool term_req, term_done;
static _Atomic uint64_t next_bytes_mark;
/* Set while the dumper writes the profile of a terminating signal: the
 * interrupted thread may hold the allocator's locks (the signal landed in
 * malloc), so that profile goes without the allocator's statistics rather
 * than wait on them until the handler gives up. */
static atomic_bool for_signal;
/* At exit: the exiting thread had signals blocked (dumper_exit_mask). */
static bool exit_in_handler;

void dumper_exit_mask(uint64_t old_mask)
{
	exit_in_handler = old_mask != 0;
}
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/* The runtime's threads, and whether the main thread ended with
 * pthread_exit (dumper_main_left, below). */
#define HELPERS_MAX 8
#define DUMPER_ORPHAN_POLL_NS 50000000u
static _Atomic long helper_tids[HELPERS_MAX];
static _Atomic bool main_left;

static bool needed(void)
{
	return atomic_load(&main_left) || rt.opt.signal || rt.opt.interval_ns || rt.opt.every_bytes ||
	       rt.opt.peak || procs_signal_dumps_armed() || memtrig_enabled() ||
	       push_enabled() || control_needs_dumper() || series_needs_thread();
}

/*
 * needed()'s answer for dumper_after_sample, which runs on every sample:
 * its nine reasons live on as many cache lines in six files, cold between
 * samples (about 7 misses a sample). All of them are set while the
 * runtime initialises and only switched off later. dumper_needed_changed
 * forgets the answer: at configuration, when procs installs a signal
 * dump's handler, when the thread stops or cannot start, and in a fork
 * child. The timeline dropping its ring does not call it: a stale "yes"
 * costs only the checks below. -1: to be asked again; 0: no thread needed; 1: needed;
 * 2: needed, running in this process, and no trigger watches samples
 * (every_bytes, peak, the timeline's peak snapshots), which with the
 * default options (the signal dumps' thread) leaves a sample nothing to
 * do here.
 */
static _Atomic int needed_memo = -1;

static int needed_memoised(void)
{
	int v = atomic_load_explicit(&needed_memo, memory_order_relaxed);
	if (AP_LIKELY(v >= 0))
		return v;
	int n = needed();
	atomic_store_explicit(&needed_memo, n, memory_order_relaxed);
	return n;
}

void dumper_needed_changed(void)
{
	atomic_store_explicit(&needed_memo, -1, memory_order_relaxed);
}

static void on_signal(int sig)
{
	(void)sig;
	int e = errno;
	atomic_store(&signal_req, true);
	sem_post(&wake);
	errno = e;
}

void dumper_install_handler(int sig, void (*fn)(int), const char *what)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		rt_log("cannot install the handler for %s signal %d: %s", what, sig,
		       strerror(errno));
}

void dumper_configure(void)
{
	dumper_needed_changed();
	sem_init(&wake, 0, 0);
	atomic_store(&next_bytes_mark, rt.opt.every_bytes);
	memtrig_configure();
	push_configure();
	/* peak snapshots ride along with the timeline and with peak dumps */
	series_configure(&rt.table, &rt.a, rt.opt.rate, rt.opt.timeline_ns,
			 rt.opt.timeline_ns || rt.opt.peak, rt.opt.peak_gap_ns,
			 rt.start_realtime_ns, rt.opt.lifetimes);
	if (rt.opt.signal)
		dumper_install_handler(rt.opt.signal, on_signal, "the dump");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Wait for a post or until the monotonic deadline (0 = no deadline). */
static void wait_until(uint64_t deadline)
{
	if (!deadline) {
		while (sem_wait(&wake) != 0 && errno == EINTR)
			;
		return;
	}
	uint64_t now = mono_ns();
	if (deadline <= now)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t abs = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec +
		       (deadline - now);
	ts.tv_sec = (time_t)(abs / 1000000000ULL);
	ts.tv_nsec = (long)(abs % 1000000000ULL);
	while (sem_timedwait(&wake, &ts) != 0 && errno == EINTR)
		;
}

/* The thread's id, for dumper_stop's caller (procs.c waits for it to go). */
static _Atomic long dumper_tid;

/* ---- a main thread that ended with pthread_exit ------------------------ */


void rt_helper_started(void)
{
	long tid = (long)syscall(SYS_gettid);
	for (int i = 0; i < HELPERS_MAX; i++) {
		long none = 0;
		if (atomic_compare_exchange_strong(&helper_tids[i], &none, tid))
			return;
	}
}

void rt_helper_ending(void)
{
	long tid = (long)syscall(SYS_gettid);
	for (int i = 0; i < HELPERS_MAX; i++) {
		long me = tid;
		if (atomic_compare_exchange_strong(&helper_tids[i], &me, 0))
			return;
	}
}

static bool helper_is(long tid)
{
	for (int i = 0; i < HELPERS_MAX; i++)
		if (atomic_load(&helper_tids[i]) == tid)
			return true;
	return false;
}

/* The state letter of thread tid of this process, '?' when unknown. */
static char task_state(long pid, long tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/task/%ld/stat", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	const char *close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : '?';
}

/* The main thread is gone (a zombie until the process ends) and every
 * thread left is one of the runtime's. */
static bool only_helpers_left(void)
{
	long pid = (long)getpid();
	if (task_state(pid, pid) != 'Z')
		return false;
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool only = true;
	char buf[4096];
	long n;
	while (only && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
			off += d->d_reclen;
			char *end;
			long tid = strtol(d->d_name, &end, 10);
			if (d->d_name[0] < '0' || d->d_name[0] > '9' || *end || tid == pid)
				continue;
			if (!helper_is(tid)) {
				only = false;
				break;
			}
		}
	}
	close(fd);
	return only && n >= 0;
}

void dumper_main_left(void)
{
	atomic_store(&main_left, true);
	dumper_needed_changed();
	dumper_start_if_needed();
	dumper_wake();
}

/* What glibc does when a process's last thread ends, which the runtime's
 * threads kept from happening: exit(0), from this thread. Its exit
 * handlers then write the profile at exit (rt_exit_dump), which must not
 * wait for this thread. */
static void exit_for_the_program(void)
{
	pthread_mutex_lock(&start_lock);
	running = false;
	pthread_mutex_unlock(&start_lock);
	dumper_needed_changed();
	rt_helper_ending();
	rt_tls.guard = 0;
	exit(0);
}

static void *dumper_main(void *arg)
{
	(void)arg;
	rt_tls.guard = 1; /* for the thread's whole life */
	atomic_store(&dumper_tid, (long)syscall(SYS_gettid));
	rt_helper_started();
	push_start(); /* inherits this thread's signal mask: all blocked */
	uint64_t interval = rt.opt.interval_ns;
	uint64_t next_interval = interval ? mono_ns() + interval : 0;
	uint64_t last_peak = 0;
	while (!atomic_load(&stop_req)) {
		uint64_t deadline = next_interval;
		bool peak_wait = atomic_load(&peak_req);
		if (peak_wait) {
			uint64_t t = last_peak + rt.opt.peak_gap_ns;
			if (!deadline || t < deadline)
				deadline = t ? t : 1;
		}
		uint64_t more[5] = { memtrig_next(), push_next(), series_deadline(),
				     ehtrim_deadline(),
				     atomic_load(&main_left) ? mono_ns() + DUMPER_ORPHAN_POLL_NS : 0 };
		for (int i = 0; i < 5; i++)
			if (more[i] && (!deadline || more[i] < deadline))
				deadline = more[i];
		wait_until(deadline);
		if (atomic_load(&stop_req))
			break;
		control_poll();
		uint64_t now = mono_ns();
		series_poll(now);
		ehtrim_poll(now);
		bool term = atomic_exchange(&term_req, false);
		bool dump = atomic_exchange(&signal_req, false) || term;
		if (interval && now >= next_interval) {
			dump = true;
			/* One dump however many intervals were missed (a stopped
			 * process): catching up would only repeat it. */
			next_interval = now + interval;
		}
		if (atomic_exchange(&bytes_req, false))
			dump = true;
		if (atomic_load(&peak_req) &&
		    (last_peak == 0 || now - last_peak >= rt.opt.peak_gap_ns)) {
			atomic_store(&peak_req, false);
			last_peak = now;
			dump = true;
		}
		const char *trigger = memtrig_check(now);
		if (dump || trigger) {
			atomic_store(&for_signal, term);
			dumper_dump_marked(NULL, trigger, true);
			atomic_store(&for_signal, false);
		}
		if (push_due(now))
			dumper_dump_marked(NULL, NULL, false);
		if (term)
			atomic_store(&term_done, true);
		if (atomic_load(&main_left) && only_helpers_left())
			exit_for_the_program();
	}
	rt_helper_ending();
	return NULL;
}

void dumper_start_if_needed(void)
{
	if (!needed() || atomic_load(&rt.sandboxed))
		return;
	pthread_mutex_lock(&start_lock);
	if (!(running && running_pid == rt.pid)) {
		atomic_store(&stop_req, false);
		/* The thread must not take the program's signals. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&thread, NULL, dumper_main, NULL) == 0) {
			running = true;
			running_pid = rt.pid;
		} else {
			rt_log("cannot start the dumper thread: signal, interval, "
			       "every_bytes and peak dumps are off");
			rt.opt.signal = 0;
			rt.opt.interval_ns = rt.opt.every_bytes = 0;
			rt.opt.peak = false;
			dumper_needed_changed();
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_mutex_unlock(&start_lock);
}

long dumper_stop(void)
{
	long stopped = 0;
	pthread_mutex_lock(&start_lock);
	if (running && running_pid == rt.pid) {
		atomic_store(&stop_req, true);
		sem_post(&wake);
		pthread_join(thread, NULL);
		running = false;
		stopped = atomic_load(&dumper_tid);
		dumper_needed_changed();
	}
	pthread_mutex_unlock(&start_lock);
	return stopped;
}

void dumper_wake(void)
{
	sem_post(&wake);
}

void dumper_atfork_child(void)
{
	/* The parent's dumper thread does not exist here, nor its others. */
	running = false;
	for (int i = 0; i < HELPERS_MAX; i++)
		atomic_store(&helper_tids[i], 0);
	atomic_store(&main_left, false);
	dumper_needed_changed();
	pthread_mutex_init(&start_lock, NULL);
	sem_destroy(&wake);
	sem_init(&wake, 0, 0);
	atomic_store(&stop_req, false);
	memtrig_atfork_child();
	push_atfork_child();
	series_atfork_child(rt.start_realtime_ns);
}

void dumper_after_sample(const table_totals *after)
{
	if (needed_memoised() != 1)
		return;
	if (AP_UNLIKELY(!running || running_pid != rt.pid))
		dumper_start_if_needed();
	if (rt.opt.every_bytes) {
		uint64_t mark = atomic_load(&next_bytes_mark);
		if (after->alloc_space >= (double)mark) {
			uint64_t next = mark;
			while ((double)next <= after->alloc_space)
				next += rt.opt.every_bytes;
			if (atomic_compare_exchange_strong(&next_bytes_mark, &mark, next) &&
			    !atomic_exchange(&bytes_req, true))
				sem_post(&wake);
		}
	}
	if (rt.opt.peak && after->inuse_space >= after->peak_inuse_space &&
	    !atomic_exchange(&peak_req, true))
		sem_post(&wake);
	if (series_wants_wake(after))
		sem_post(&wake);
	if (running && running_pid == rt.pid && !rt.opt.every_bytes && !rt.opt.peak &&
	    !series_watches_peak()) {
		/* from 1 only: a change since (dumper_needed_changed) wins */
		int one = 1;
		atomic_compare_exchange_strong_explicit(&needed_memo, &one, 2,
							memory_order_relaxed,
							memory_order_relaxed);
	}
}

bool dumper_dump_for_signal(unsigned timeout_ms)
{
	if (!atomic_load(&running) || atomic_load(&running_pid) != rt.pid)
		return false;
	atomic_store(&term_done, false);
	atomic_store(&term_req, true);
	sem_post(&wake);
	struct timespec ms = { 0, 1000000 };
	for (unsigned i = 0; i < timeout_ms; i++) {
		if (atomic_load(&term_done))
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

int dumper_dump_now(const char *path)
{
	return dumper_dump_marked(path, NULL, true);
}

int dumper_dump_marked(const char *path, const char *trigger, bool file)
{
	char name[RT_PATH_CAP];
	if (!procs_check_pid())
		return AP_EUNSUPPORTED; /* vfork child: the parent's memory */
	ehtrim_before_dump();
	ap_memory mem;
	/* before the lock: it waits on the allocator's */
	procmem_read(&mem, !atomic_load(&for_signal) && !exit_in_handler);
	pthread_mutex_lock(&rt.dump_lock);
	bool named = !path && file;
	if (!path && file) {
		int rc = procs_file_name(rt.pattern, rt.dump_seq, name, sizeof name);
		if (rc != 0) {
			pthread_mutex_unlock(&rt.dump_lock);
			rt_log("output pattern '%s' expands to a name that is too long",
			       rt.pattern);
			return rc;
		}
		rt.dump_seq++;
		path = name;
	}
	/* A scratch arena, unmapped after the dump: built in rt.a, whose free
	 * lists keep blocks for reuse, a profile would keep its peak resident
	 * (about 1 KB per stack) for the rest of the process's life. */
	arena scratch;
	arena_init(&scratch);
	dump_input in = { .table = &rt.table,
			  .a = &scratch,
			  .period = rt.opt.rate,
			  .format = rt.opt.format,
			  .start_realtime_ns = rt.start_realtime_ns,
			  .with_mappings = true,
			  .warning = detect_warning(),
			  .memory = &mem,
			  .trigger = trigger,
			  .no_file = !file,
			  .on_written = push_enabled() ? push_enqueue : NULL,
			  .attach = attach_note() };
	int rc = dump_write_file(&in, path ? path : "(push)");
	arena_destroy(&scratch);
	if (rc == 0 && named)
		procs_file_written(path);
	pthread_mutex_unlock(&rt.dump_lock);
	if (rc == 0 && rt.opt.verbose && file)
		rt_log("wrote %s%s%s", path, trigger ? " for " : "", trigger ? trigger : "");
	return rc;
}
