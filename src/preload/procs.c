/*
 * procs.c: file names across processes, processes the fork handlers did not
 * see, and profiles on terminating signals (procs.h).
 *
 * Signal handling in brief. The handler runs in whatever thread the kernel
 * picked, perhaps in the middle of malloc or of the runtime itself, so it
 * does only async-signal-safe things: it sets a flag and posts the dumper
 * thread's semaphore (dumper_dump_for_signal), polls with nanosleep until
 * the dumper says the profile is written or PROCS_SIGNAL_WAIT_MS have
 * passed, then puts back the default action with sigaction and re-raises.
 * A thread interrupted inside the runtime (guard set) may hold a lock the
 * dump needs, so it skips the dump rather than wait out the bound.
 */
#include "procs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <linux/kcmp.h>
#include <linux/nsfs.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "boot.h"
#include "detect.h"
#include "dump.h"
#include "http_runtime.h"
#include "outdir.h"
#include "push.h"
#include "runtime_core.h"
#include "unwinder.h"

#define NSIG_MAX 64

/* glibc's own entry, for calls made before dlsym has found the next one. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static void (*_Atomic real_exit)(int);

/* owned[s]: the runtime's handler is installed for s and the program
 * believes the action is shown[s] (its default, or a SIG_DFL it set). */
static atomic_bool owned[NSIG_MAX];
static struct sigaction shown[NSIG_MAX];
static atomic_bool signal_dump_taken;
static atomic_bool any_armed; /* some install() succeeded */

static struct timespec start_coarse, start_fine;
/* The process's own start (its fork), earlier than the runtime's after an
 * exec; tv_sec 0: unknown. */
static struct timespec start_process;
/* Names with this pid in them carry ".gN" (rt_expand_pattern_gen) once an
 * earlier runtime in this process (the program before an exec) was found
 * to have written them; 0 until then. */
static unsigned name_gen;
static dev_t own_dev;
static ino_t own_ino;
static bool own_valid;

static int call_real(int sig, const struct sigaction *act, struct sigaction *old)
{
	int (*f)(int, const struct sigaction *, struct sigaction *) = real_sigaction;
	return f ? f(sig, act, old) : __sigaction(sig, act, old);
}

/* ---- signals ------------------------------------------------------------ */

static bool is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

static void on_terminating(int sig, siginfo_t *si, void *uc)
{
	/* Sent while this thread is inside the runtime (in the middle of a
	 * sample, or of the profile at _exit): held back until it leaves,
	 * then handled here again. Giving up at once lost the profile, the
	 * exit's included, of a pool worker terminated as it was exiting. A
	 * real fault cannot wait. */
	if (!(is_fault(sig) && si && si->si_code > 0) &&
	    rt_sig_defer_if_inside(sig, si, uc))
		return;
	int e = errno;
	if (atomic_load(&owned[sig]) && !rt_tls.guard &&
	    atomic_load(&rt.state) == RT_READY && (long)getpid() == rt.pid &&
	    !atomic_exchange(&signal_dump_taken, true)) {
		/* Anything this thread allocates meanwhile passes through;
		 * other signals wait until the dump is written. */
		uint64_t m = rt_enter();
		dumper_dump_for_signal(PROCS_SIGNAL_WAIT_MS);
		rt_leave(m);
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	atomic_store(&owned[sig], false);
	call_real(sig, &dfl, NULL);
	/* A real fault recurs when the handler returns, now with the default
	 * action; anything else is raised again. Either way it stays pending
	 * (blocked while the handler runs) and ends the process on return. */
	if (!(is_fault(sig) && si && si->si_code > 0))
		raise(sig);
	errno = e;
}

static void install(int sig)
{
	struct sigaction cur;
	if (call_real(sig, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
		return; /* the program (or signal=) handles it, or ignores it */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_terminating;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	shown[sig] = cur;
	atomic_store(&owned[sig], true);
	if (call_real(sig, &sa, NULL) != 0)
		atomic_store(&owned[sig], false);
	else {
		atomic_store(&any_armed, true);
		dumper_needed_changed();
	}
}

bool procs_signal_dumps_armed(void)
{
	/* Read on every sample (dumper.c): one load. Stays set when the
	 * program later takes every such signal over; the idle dumper thread
	 * is harmless then. */
	return atomic_load_explicit(&any_armed, memory_order_relaxed);
}

int procs_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig <= 0 || sig >= NSIG_MAX || !atomic_load(&owned[sig]))
		return rt_sig_action(sig, act, old, call_real);
	struct sigaction before = shown[sig];
	if (act) {
		if (act->sa_handler == SIG_DFL) {
			/* Still the default as far as the program knows. */
			shown[sig] = *act;
		} else {
			/* The program's own handler (or SIG_IGN) replaces ours. */
			atomic_store(&owned[sig], false);
			if (rt_sig_action(sig, act, NULL, call_real) != 0) {
				atomic_store(&owned[sig], true);
				return -1;
			}
		}
	}
	if (old)
		*old = before;
	return 0;
}

void (*procs_signal(int sig, void (*handler)(int), int flags, bool mask_self))(int)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (mask_self && sig > 0 && sig < NSIG_MAX)
		sigaddset(&act.sa_mask, sig);
	if (procs_sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ---- processes ----------------------------------------------------------- */

/* start_process from /proc/self/stat's starttime (field 22, clock ticks
 * since boot): now on the real-time clock minus the process's age on the
 * boot clock. Raw reads: no stdio this early. */
static void find_process_start(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold ')' and ' ' */
	unsigned long hz = (unsigned long)getauxval(AT_CLKTCK);
	if (!p || !hz)
		return;
	/* ") S ppid ...": after the name, field 3 (state) is the first. */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return;
	char *end;
	unsigned long long ticks = strtoull(p + 1, &end, 10);
	struct timespec boot, real;
	if (end == p + 1 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 ||
	    clock_gettime(CLOCK_REALTIME, &real) != 0)
		return;
	int64_t start_ns = (int64_t)(ticks / hz) * 1000000000LL +
			   (int64_t)(ticks % hz) * (1000000000LL / (int64_t)hz);
	int64_t age = (int64_t)boot.tv_sec * 1000000000LL + boot.tv_nsec - start_ns;
	int64_t at = (int64_t)real.tv_sec * 1000000000LL + real.tv_nsec - (age > 0 ? age : 0);
	if (at <= 0)
		return;
	start_process.tv_sec = (time_t)(at / 1000000000LL);
	start_process.tv_nsec = (long)(at % 1000000000LL);
}

void procs_init(void)
{
	clock_gettime(CLOCK_REALTIME_COARSE, &start_coarse); /* first: coarse <= fine */
	clock_gettime(CLOCK_REALTIME, &start_fine);
	find_process_start();
	if (!rt_attached) /* attached: the GOTs are not patched yet */
		detect_init();
	void *f = boot_next_sym("sigaction");
	if (f)
		memcpy(&real_sigaction, &f, sizeof f);
	void (*e)(int) = NULL;
	f = boot_next_sym("_exit");
	if (f)
		memcpy(&e, &f, sizeof f);
	atomic_store(&real_exit, e);
	/* Before the runtime's own handlers go in: those it never wraps. */
	rt_sig_wrap_existing(call_real);
	if (!rt.opt.dump_at_exit)
		return; /* a signal's profile stands in for the exit's */
	for (int s = 1; s < NSIG_MAX; s++)
		if (rt.opt.dump_on & (1ULL << s))
			install(s);
}

void procs_real_exit(int status)
{
	void (*e)(int) = atomic_load(&real_exit);
	if (e)
		e(status);
	for (;;)
		syscall(SYS_exit_group, (long)status);
}

/* Does process pid share this process's memory (vfork, CLONE_VM)? When the
 * kernel cannot say (no kcmp, or refused), assume it does: touching nothing
 * is the safe answer. */
static bool shares_memory_with(long pid)
{
	long r = syscall(SYS_kcmp, (long)getpid(), pid, (long)KCMP_VM, 0L, 0L);
	return r != 1 && r != 2; /* 0: the same; 1, 2: an order, so different */
}

bool procs_check_pid(void)
{
	long now = (long)getpid();
	if (now == rt.pid)
		return true;
	if (shares_memory_with(rt.pid))
		return false;
	rt_adopt_child();
	return true;
}

void procs_shared_exit(void)
{
	if (rt.opt.dump_at_exit)
		dumper_dump_for_signal(PROCS_SIGNAL_WAIT_MS);
}

/* ---- dlclose -------------------------------------------------------------- */

static int (*real_dlclose)(void *);

int procs_dlclose(void *handle)
{
	if (handle && atomic_load(&rt.state) == RT_READY && !rt_tls.guard) {
		uint64_t m = rt_enter(); /* takes the arena's lock */
		dump_retire_object(&rt.a, handle);
		rt_leave(m);
	}
	if (!real_dlclose) {
		void *f = boot_next_sym("dlclose");
		if (!f)
			return -1;
		memcpy(&real_dlclose, &f, sizeof f);
	}
	int rc = real_dlclose(handle);
	/* Code at the object's addresses may be another object's next. */
	unwind_forget_code();
	return rc;
}

/* Fill *fp (a function pointer, NULL until now) with the next definition
 * of name (glibc's); false with errno ENOSYS when there is none. */
static bool next_into(void *fp, const char *name)
{
	void *f;
	memcpy(&f, fp, sizeof f);
	if (f)
		return true;
	f = boot_next_sym(name);
	if (!f) {
		errno = ENOSYS;
		return false;
	}
	memcpy(fp, &f, sizeof f);
	return true;
}

/* ---- chroot ---------------------------------------------------------------- */

int procs_chroot(const char *path)
{
	static int (*real_chroot)(const char *);
	if (!next_into(&real_chroot, "chroot"))
		return -1;
	bool ours = atomic_load(&rt.state) == RT_READY && !rt_tls.guard;
	if (ours) {
		uint64_t m = rt_enter();
		/* Not in a vfork child: the directory would be its
		 * descriptor, remembered in the parent's memory. */
		ours = procs_check_pid();
		if (ours)
			outdir_before_chroot();
		rt_leave(m);
	}
	int rc = real_chroot(path);
	if (ours) {
		int e = errno;
		uint64_t m = rt_enter();
		outdir_after_chroot(rc == 0);
		rt_leave(m);
		errno = e;
	}
	return rc;
}

/* ---- namespaces ------------------------------------------------------------ */

/*
 * unshare(CLONE_NEWUSER) (and of CLONE_THREAD, CLONE_SIGHAND, CLONE_VM),
 * and setns() into a user or a mount namespace, fail with EINVAL in a
 * process of more than one thread. The runtime's dumper thread (on by
 * default, for dump_on=), the HTTP endpoint's and push='s sender would
 * make them fail in every profiled program: rootless containers,
 * sandboxes, unshare -r, nsenter. Around those calls the three are stopped
 * and started again afterwards (the endpoint on a new port when it had
 * asked for any; the sender by the dumper, as at start-up).
 */
/* Until thread tid of this process is gone for the kernel: a joined
 * thread still counts a moment longer (it is released after its tid is
 * cleared, which the join waits for), and until then the call would still
 * fail. At most a second; without /proc, not at all. */
static void wait_gone(long tid)
{
	if (tid <= 0)
		return;
	char path[48];
	snprintf(path, sizeof path, "/proc/self/task/%ld", tid);
	struct stat st;
	for (int i = 0; i < 1000 && stat(path, &st) == 0; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
}

void procs_stop_threads(bool *http_was)
{
	*http_was = http_runtime_running();
	long http_tid = http_runtime_stop();
	long dumper_tid = dumper_stop(); /* it starts push's thread again */
	long push_tid = push_stop();
	wait_gone(http_tid);
	wait_gone(dumper_tid);
	wait_gone(push_tid);
}

void procs_start_threads(bool http_was)
{
	if (atomic_load(&rt.sandboxed))
		return; /* none again in a process that confined itself */
	dumper_start_if_needed();
	if (http_was)
		http_runtime_start(&rt.opt.http, rt.opt.http_portfile, rt.opt.verbose);
}

static bool pause_threads(bool *http_was)
{
	if (atomic_load(&rt.state) != RT_READY || rt_tls.guard)
		return false;
	uint64_t m = rt_enter();
	if (!procs_check_pid()) {
		/* A vfork child (clone(CLONE_VM), as container tools make
		 * before their unshare): it is single-threaded already, and
		 * the threads and their state are the parent's. */
		rt_leave(m);
		return false;
	}
	procs_stop_threads(http_was);
	rt_leave(m);
	return true;
}

static void resume_threads(bool http_was)
{
	int e = errno;
	uint64_t m = rt_enter();
	procs_start_threads(http_was);
	rt_leave(m);
	errno = e;
}

int procs_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		unsigned long a5)
{
	static int (*real_prctl)(int, ...);
	if (!next_into(&real_prctl, "prctl"))
		return -1;
	bool confined = option == PR_SET_SECCOMP && rt_before_sandbox();
	int rc = real_prctl(option, a2, a3, a4, a5);
	if (confined && rc != 0) {
		int e = errno;
		rt_after_sandbox_failed();
		errno = e;
	}
	return rc;
}

int procs_unshare(int flags)
{
	static int (*real_unshare)(int);
	if (!next_into(&real_unshare, "unshare"))
		return -1;
	bool http_was = false;
	bool paused = (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) &&
		      pause_threads(&http_was);
	int rc = real_unshare(flags);
	if (paused)
		resume_threads(http_was);
	return rc;
}

int procs_setns(int fd, int nstype)
{
	static int (*real_setns)(int, int);
	if (!next_into(&real_setns, "setns"))
		return -1;
	/* nstype 0 joins whatever fd is: ask the kernel which type (a
	 * program that switches network namespaces this way, thread by
	 * thread, must not have the runtime's threads stopped each time). */
	int type = nstype;
	if (type == 0) {
		int e = errno;
		type = ioctl(fd, NS_GET_NSTYPE);
		if (type < 0)
			type = CLONE_NEWUSER | CLONE_NEWNS; /* cannot tell: either */
		errno = e;
	}
	bool http_was = false;
	bool paused = (type & (CLONE_NEWUSER | CLONE_NEWNS)) && pause_threads(&http_was);
	int rc = real_setns(fd, nstype);
	if (paused)
		resume_threads(http_was);
	return rc;
}

/* ---- names ----------------------------------------------------------------- */

/* a at or after b? */
static bool ts_ge(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* The modification time of path, a regular file this runtime did not
 * write; false for anything else. */
static bool others_mtime(const char *path, struct timespec *t)
{
	struct stat st;
	if (outdir_stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	if (own_valid && st.st_dev == own_dev && st.st_ino == own_ino)
		return false;
	*t = st.st_mtim;
	return true;
}

/* Was path written after this runtime started, by the time the runtime
 * that wrote it recorded (PROCS_WRITTEN_XATTR) on the same fine clock? A
 * file without it (another tool's, or a file system without user xattrs)
 * answers yes. */
static bool written_after_start(const char *path)
{
	char v[32];
	ssize_t n = outdir_getxattr(path, PROCS_WRITTEN_XATTR, v, sizeof v - 1);
	if (n <= 0)
		return true;
	v[n] = '\0';
	char *end;
	long long ns = strtoll(v, &end, 10);
	if (end == v || *end || ns <= 0)
		return true;
	return ns >= (long long)start_fine.tv_sec * 1000000000LL + start_fine.tv_nsec;
}

/* Another process's file, written since this runtime started? A file's
 * stamp is never ahead of the moment it was written: the kernel stamps with
 * its coarse clock (the time of its last tick), or, on file systems with
 * multigrain timestamps (6.13 on), sometimes with the fine clock, and a
 * coarse stamp there may be raised to a fine time handed out earlier. So a
 * stamp at or after this runtime's fine start proves "after", one before
 * the tick it started in proves "before", and one in between proves
 * nothing: the previous command of a shell loop, which exited a moment
 * before this one started, lands there about one run in four; so does a
 * program under timeout(1) that wrote its file after the wrapper started.
 * There the time the writing runtime recorded on the fine clock decides
 * (written_after_start), and a file without it counts as another's, the
 * safe answer (two processes keep two files). */
static bool written_by_another(const char *path)
{
	struct timespec t;
	if (!others_mtime(path, &t) || !ts_ge(&t, &start_coarse))
		return false;
	return ts_ge(&t, &start_fine) || written_after_start(path);
}

/* A file under this process's own pid that this runtime did not write,
 * written since the process started: an earlier runtime's in this process
 * (the program before an exec). Only names that carry the pid are asked
 * about, so the start's 10 ms grain cannot take a file another process
 * wrote just before the fork for one. The comparison allows 20 ms: the
 * start is truncated to 10 ms, so it may lie after an early write's
 * coarse stamp, which lags the write by up to a kernel tick (10 ms at
 * HZ=100); a program that execs within a few milliseconds of starting
 * then could have its profile replaced (seen once, in a CI run of
 * preload_exec_test under load). Only a file
 * naming this pid, written by another process 20 ms before this one
 * started, could be mistaken for an earlier image's. */
static bool written_by_earlier_image(const char *path)
{
	if (!start_process.tv_sec)
		return false;
	struct timespec from = start_process;
	from.tv_nsec -= 20000000L;
	if (from.tv_nsec < 0) {
		from.tv_nsec += 1000000000L;
		from.tv_sec--;
	}
	struct timespec t;
	return others_mtime(path, &t) && ts_ge(&t, &from); /* a tie: an earlier image's */
}

/* "DIGITS.DIGITS" exactly; the first number into *pid. */
static bool pid_dot_seq(const char *s, long *pid)
{
	char *end;
	if (*s < '0' || *s > '9')
		return false;
	*pid = strtol(s, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	for (end++; *end; end++)
		if (*end < '0' || *end > '9')
			return false;
	return *pid > 0;
}

/*
 * Temporary files of profiles whose writer was killed mid-write (left by a
 * file system without O_TMPFILE, or by a kill between link and rename; see
 * dump.c): "NAME.tmp.PID.N" in the pattern's directory, NAME starting with
 * the pattern's text before its first '%' and ending with its text after
 * the last %-conversion, PID no longer alive. Removed once per run, at the
 * first dump of the process the runtime started in (procs_file_name), so
 * litter never outlives the next profiled run.
 */
static void clean_stale(const char *pattern)
{
	char dir[RT_PATH_CAP];
	const char *slash = strrchr(pattern, '/');
	const char *base = slash ? slash + 1 : pattern;
	size_t dn = slash ? (size_t)(slash - pattern) : 0;
	if (!slash) {
		dir[0] = '.';
		dn = 1;
	} else if (dn == 0) {
		dir[0] = '/';
		dn = 1;
	} else if (dn < sizeof dir) {
		memcpy(dir, pattern, dn);
	} else {
		return;
	}
	dir[dn] = '\0';
	const char *pct = strchr(base, '%');
	size_t pre = pct ? (size_t)(pct - base) : strlen(base);
	const char *suf = base + strlen(base);
	for (const char *q = base; (q = strchr(q, '%')) && q[1]; q += 2)
		suf = q + 2;
	size_t sufn = strlen(suf);
	/* getdents64 into a stack buffer: opendir would malloc, and this runs
	 * in the exit dump, maybe from a handler that interrupted malloc. */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	union {
		char b[4096];
		struct dirent64 align;
	} buf;
	long n;
	while ((n = syscall(SYS_getdents64, fd, buf.b, sizeof buf.b)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(buf.b + off);
			off += e->d_reclen;
			const char *tmp = strstr(e->d_name, ".tmp.");
			long pid;
			if (!tmp || strncmp(e->d_name, base, pre) != 0 ||
			    (size_t)(tmp - e->d_name) < pre + sufn ||
			    memcmp(tmp - sufn, suf, sufn) != 0 || !pid_dot_seq(tmp + 5, &pid))
				continue;
			if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
				unlinkat(fd, e->d_name, 0);
		}
	}
	close(fd);
}

int procs_file_name(const char *pattern, uint64_t seq, char *out, size_t cap)
{
	/* Once per run: the process the runtime started in cleans; its fork
	 * children do not. A pre-fork server's children each dump at exit,
	 * and a scan each would cost O(files) per child, O(children^2) in
	 * all, as the directory fills with their profiles. */
	static bool cleaned;
	if (!cleaned && !rt.forked_child) {
		cleaned = true;
		clean_stale(pattern);
	}
	uint64_t t = (uint64_t)time(NULL);
	bool has_pid = strstr(pattern, "%p") != NULL;
	bool need_pid = rt.forked_child;
	int rc = 0;
	if (!need_pid && !has_pid) {
		rc = rt_expand_pattern(pattern, rt.pid, t, seq, false, out, cap);
		need_pid = rc == 0 && written_by_another(out);
	}
	/* A name with this pid in it that an earlier runtime in this process
	 * wrote (the program before an exec): its files stay, and this
	 * runtime's names carry the next free ".gN". */
	bool own_pid = need_pid || has_pid;
	if (rc == 0 && own_pid) /* else the plain name above stands */
		rc = rt_expand_pattern_gen(pattern, rt.pid, t, seq, need_pid, name_gen, out, cap);
	while (rc == 0 && own_pid && name_gen < 1000 && written_by_earlier_image(out)) {
		name_gen = name_gen ? name_gen + 1 : 2;
		rc = rt_expand_pattern_gen(pattern, rt.pid, t, seq, need_pid, name_gen,
					   out, cap);
	}
	return rc;
}

void procs_file_written(const char *path)
{
	struct stat st;
	own_valid = outdir_stat(path, &st) == 0;
	if (own_valid) {
		own_dev = st.st_dev;
		own_ino = st.st_ino;
	}
}
