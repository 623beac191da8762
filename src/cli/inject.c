/*
 * inject.c: remote calls into another process with ptrace (inject.h).
 */
#define _GNU_SOURCE
#include "inject.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "elfdyn.h"

#if defined(__x86_64__) && defined(__linux__)
#include <sys/ptrace.h>
#include <sys/user.h>
#define INJECT_SUPPORTED 1
#else
#define INJECT_SUPPORTED 0
#endif

enum { EXIT_REFUSED = 2 };

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool path_has(const char *path, const char *part)
{
	const char *base = strrchr(path, '/');
	return strstr(base ? base + 1 : path, part) != NULL;
}

/* Objects in whose code a stopped thread may hold a lock the call needs. */
static bool unsafe_object(const char *path)
{
	static const char *const parts[] = { "libc.so", "ld-linux", "libstdc++",
					     "libgcc_s", "jemalloc", "tcmalloc",
					     "mimalloc", "libpthread", "libdl.so",
					     "liballocprof_preload" };
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (path_has(path, parts[i]))
			return true;
	return false;
}

/* Does the target's environment have LD_PRELOAD naming the runtime? */
static bool env_preloads(pid_t pid, const char *runtime_name)
{
	static char buf[65536];
	long got = ap_cli_read_proc(pid, "environ", buf, sizeof buf);
	size_t n = got > 0 ? (size_t)got : 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (strncmp(buf + i, "LD_PRELOAD=", 11) == 0 && strstr(buf + i, runtime_name))
			return true;
	return false;
}

typedef struct scan_state {
	bool musl, libc_found;
} scan_state;

static void scan_line(inject_proc *p, const char *runtime_name, const char *line,
		      scan_state *s)
{
	unsigned long lo, hi, off;
	char perms[8];
	int pos = 0;
	if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 ||
	    pos == 0)
		return;
	const char *path = line + pos;
	if (path[0] != '/')
		return;
	/* musl's loader is its libc: mapped as ld-musl-ARCH.so.1, or through
	 * that link as /usr/lib/ARCH-linux-musl/libc.so (Debian) */
	if (path_has(path, "ld-musl") || strstr(path, "-linux-musl/"))
		s->musl = true;
	if (off == 0 && path_has(path, "libc.so.6") && !p->libc_base) {
		snprintf(p->libc, sizeof p->libc, "%s", path);
		p->libc_base = lo;
		s->libc_found = true;
	}
	if (off == 0 && path_has(path, runtime_name) && !p->runtime_base) {
		snprintf(p->runtime, sizeof p->runtime, "%s", path);
		p->runtime_base = lo;
	}
	if (perms[2] == 'x' && path_has(path, "ld-linux"))
		p->loader = (inject_range){ lo, hi };
	if (perms[2] == 'x' && unsafe_object(path) && p->nunsafe < INJECT_MAX_UNSAFE)
		p->unsafe[p->nunsafe++] = (inject_range){ lo, hi };
}

int inject_rescan(inject_proc *p, const char *runtime_name, char *err, size_t errlen)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)p->pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "process %d: %s", (int)p->pid,
			 errno == ENOENT ? "no such process" : strerror(errno));
		return EXIT_REFUSED;
	}
	p->libc_base = p->runtime_base = 0;
	p->libc[0] = p->runtime[0] = 0;
	p->nunsafe = 0;
	scan_state s = { false, false };
	char line[4096 + 128];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		scan_line(p, runtime_name, line, &s);
	}
	fclose(f);
	if (s.musl) {
		snprintf(err, errlen, "process %d uses musl libc: attach supports glibc only",
			 (int)p->pid);
		return EXIT_REFUSED;
	}
	if (!s.libc_found) {
		snprintf(err, errlen, "process %d has no libc.so.6 mapped (statically "
			 "linked, or not glibc): cannot attach", (int)p->pid);
		return EXIT_REFUSED;
	}
	return 0;
}

static int check_machine(pid_t pid, char *err, size_t errlen)
{
	char exe[64];
	snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
	int m = elfdyn_machine(exe);
	if (m < 0) {
		snprintf(err, errlen, "process %d: cannot read its executable (%s)",
			 (int)pid, errno == ENOENT ? "no such process" : strerror(errno));
		return EXIT_REFUSED;
	}
	if (m != EM_X86_64) {
		snprintf(err, errlen, "process %d is not an x86_64 program (ELF machine "
			 "%d): attach supports Linux x86_64 only", (int)pid, m);
		return EXIT_REFUSED;
	}
	return 0;
}

int inject_open(pid_t pid, const char *runtime_name, inject_proc *p, char *err,
		size_t errlen)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	if (!INJECT_SUPPORTED) {
		snprintf(err, errlen, "attach is supported on Linux x86_64 only");
		return EXIT_REFUSED;
	}
	if (pid <= 0 || kill(pid, 0) != 0) {
		if (pid > 0 && errno == EPERM)
			snprintf(err, errlen, "process %d belongs to another user: not "
				 "permitted (run as that user or root)", (int)pid);
		else
			snprintf(err, errlen, "process %d: no such process", (int)pid);
		return EXIT_REFUSED;
	}
	int rc = check_machine(pid, err, errlen);
	if (rc == 0)
		rc = inject_rescan(p, runtime_name, err, errlen);
	/* the caller decides (a preloaded runtime has its own controls) */
	if (rc == 0 && p->runtime_base)
		p->preloaded = env_preloads(pid, runtime_name);
	return rc;
}

bool inject_alive(pid_t pid)
{
	char buf[512];
	if (ap_cli_read_proc(pid, "stat", buf, sizeof buf) < 0)
		return false;
	const char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X' && p[2] != 0;
}

#if INJECT_SUPPORTED

static int wait_stop(pid_t tid, int *status, uint64_t timeout_ms)
{
	uint64_t end = mono_ns() + timeout_ms * 1000000ULL;
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (mono_ns() > end)
			return -2;
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
}

/* Seize and stop tid; 0 with regs filled, or -1 (errno). */
static int seize(pid_t tid, struct user_regs_struct *regs)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0)
		return -1;
	int st;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 || wait_stop(tid, &st, 2000) != 0 ||
	    !WIFSTOPPED(st)) {
		int e = errno;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		errno = e ? e : ESRCH;
		return -1;
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, regs) != 0) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return -1;
	}
	return 0;
}

static bool is_restart(long long rax)
{
	return rax == -512 || rax == -513 || rax == -514 || rax == -516;
}

static bool in_ranges(const inject_proc *p, uintptr_t pc)
{
	for (int i = 0; i < p->nunsafe; i++)
		if (pc >= p->unsafe[i].lo && pc < p->unsafe[i].hi)
			return true;
	return false;
}

static bool safe_point(const inject_proc *p, const struct user_regs_struct *r)
{
	long long nr = (long long)r->orig_rax;
	bool loader = r->rip >= p->loader.lo && r->rip < p->loader.hi;
	if (nr >= 0 && is_restart((long long)r->rax)) {
		switch (nr) {
		case 202: /* futex */
		case 9: case 10: case 11: case 12: case 25: case 28:
			/* mmap mprotect munmap brk mremap madvise */
			return false;
		default:
			return !loader;
		}
	}
	return !in_ranges(p, (uintptr_t)r->rip);
}

/* The restart the kernel would have done, done by hand: the thread goes
 * back to its system call when it resumes. */
static void fix_restart(struct user_regs_struct *r)
{
	long long rax = (long long)r->rax;
	if ((long long)r->orig_rax < 0 || !is_restart(rax))
		return;
	r->rax = rax == -516 ? 219 /* restart_syscall */ : r->orig_rax;
	r->rip -= 2;
	r->orig_rax = (unsigned long long)-1;
}

static bool avoided(const inject_proc *p, pid_t t)
{
	for (int i = 0; i < p->navoid; i++)
		if (p->avoid[i] == t)
			return true;
	return false;
}

/* The target's threads in the order to try them: p->prefer first, then
 * the main thread, then the others; threads in p->avoid left out unless
 * that would leave none. */
static int list_tasks(const inject_proc *p, pid_t *out, int cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)p->pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	pid_t all[256];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 256) {
		pid_t t = (pid_t)atoi(e->d_name);
		if (t > 0)
			all[n++] = t;
	}
	closedir(d);
	bool keep_avoided = true; /* when every thread is avoided, try them all */
	for (int i = 0; i < n && keep_avoided; i++)
		keep_avoided = avoided(p, all[i]);
	int m = 0;
	for (int rank = 0; rank < 3; rank++)
		for (int i = 0; i < n && m < cap; i++) {
			pid_t t = all[i];
			int r = t == p->prefer ? 0 : t == p->pid ? 1 : 2;
			if (r == rank && (keep_avoided || !avoided(p, t)))
				out[m++] = t;
		}
	return m;
}

/* Stop a thread at a safe point: its tid, its registers. */
static int stop_safe(const inject_proc *p, pid_t *tid, struct user_regs_struct *regs,
		     char *err, size_t errlen)
{
	uint64_t end = mono_ns() + INJECT_SAFE_WAIT_MS * 1000000ULL;
	pid_t tasks[256];
	do {
		int n = list_tasks(p, tasks, 256);
		if (n < 0) {
			snprintf(err, errlen, "process %d exited", (int)p->pid);
			return EXIT_REFUSED;
		}
		for (int i = 0; i < n; i++) {
			if (seize(tasks[i], regs) != 0) {
				if (errno == EPERM) {
					snprintf(err, errlen, "ptrace of process %d not "
						 "permitted (%s)", (int)p->pid,
						 "Yama ptrace_scope, missing CAP_SYS_PTRACE, "
						 "another user's process, or traced already");
					return EXIT_REFUSED;
				}
				continue; /* the thread just exited */
			}
			if (safe_point(p, regs)) {
				*tid = tasks[i];
				return 0;
			}
			ptrace(PTRACE_DETACH, tasks[i], NULL, NULL);
		}
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	} while (mono_ns() < end);
	snprintf(err, errlen, "process %d: no thread reached a safe point in %d ms "
		 "(all inside libc, the loader or the allocator)", (int)p->pid,
		 INJECT_SAFE_WAIT_MS);
	return EXIT_REFUSED;
}

/*
 * The thread's x87/SSE/AVX (and later) state, which PTRACE_GETREGS does
 * not cover: the whole XSAVE area when the kernel offers it, else the
 * x87/SSE part. The called code (libc's string functions, the loader)
 * writes vector registers; a thread stopped between computing a value in
 * one and storing it would otherwise resume with the call's value.
 */
typedef struct xstate {
	unsigned type; /* NT_X86_XSTATE or NT_PRFPREG */
	size_t len;
	_Alignas(64) unsigned char buf[32768];
} xstate;

static int xstate_get(pid_t tid, xstate *x)
{
	struct iovec io = { x->buf, sizeof x->buf };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_X86_XSTATE, &io) == 0) {
		x->type = NT_X86_XSTATE;
		x->len = io.iov_len;
		return 0;
	}
	io.iov_len = sizeof(struct user_fpregs_struct);
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRFPREG, &io) == 0) {
		x->type = NT_PRFPREG;
		x->len = io.iov_len;
		return 0;
	}
	return -1;
}

static int xstate_set(pid_t tid, xstate *x)
{
	struct iovec io = { x->buf, x->len };
	return ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)x->type, &io);
}

static int put(pid_t pid, uintptr_t addr, const void *data, size_t n)
{
	struct iovec l = { (void *)data, n }, r = { (void *)addr, n };
	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int get(pid_t pid, uintptr_t addr, void *data, size_t n)
{
	struct iovec l = { data, n }, r = { (void *)addr, n };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

int inject_read_string(pid_t pid, uintptr_t addr, char *out, size_t cap)
{
	for (size_t i = 0; i + 1 < cap; i++) {
		if (get(pid, addr + i, out + i, 1) != 0)
			return -1;
		if (!out[i])
			return 0;
	}
	out[cap - 1] = 0;
	return 0;
}

/* Run the prepared call; remembers signals that arrived meanwhile. */
static int run_call(pid_t tid, uint64_t *ret, int *pending, int *npending, char *err,
		    size_t errlen)
{
	if (ptrace(PTRACE_CONT, tid, NULL, NULL) != 0) {
		snprintf(err, errlen, "cannot resume thread %d: %s", (int)tid, strerror(errno));
		return EXIT_REFUSED;
	}
	for (;;) {
		int st, w = wait_stop(tid, &st, INJECT_CALL_TIMEOUT_MS);
		if (w == -2) {
			snprintf(err, errlen, "the call in thread %d did not return in %d s",
				 (int)tid, INJECT_CALL_TIMEOUT_MS / 1000);
			return EXIT_REFUSED;
		}
		if (w != 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			snprintf(err, errlen, "the process exited during the attach");
			return EXIT_REFUSED;
		}
		int sig = WSTOPSIG(st);
		struct user_regs_struct r;
		if (sig == SIGSEGV && (st >> 16) == 0 &&
		    ptrace(PTRACE_GETREGS, tid, NULL, &r) == 0 && r.rip == 0) {
			*ret = r.rax;
			return 0;
		}
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGABRT) {
			snprintf(err, errlen, "the call in thread %d faulted (signal %d)",
				 (int)tid, sig);
			return EXIT_REFUSED;
		}
		if ((st >> 16) == 0 && sig != SIGSTOP && sig != SIGTRAP && *npending < 16)
			pending[(*npending)++] = sig;
		ptrace(PTRACE_CONT, tid, NULL, NULL);
	}
}

/* Copy the arguments' data below the stack pointer; set up the registers. */
static int prepare(pid_t tid, const struct user_regs_struct *saved, uintptr_t fn,
		   const inject_arg *args, int nargs, uintptr_t *where,
		   struct user_regs_struct *r)
{
	*r = *saved;
	uintptr_t sp = (saved->rsp - 8192) & ~(uintptr_t)15; /* far below the red zone */
	unsigned long long *regs[3] = { &r->rdi, &r->rsi, &r->rdx };
	for (int i = 0; i < nargs && i < 3; i++) {
		*regs[i] = args[i].value;
		if (args[i].data || args[i].out) {
			sp = (sp - args[i].n - 16) & ~(uintptr_t)15;
			if (args[i].data && put(tid, sp, args[i].data, args[i].n) != 0)
				return -1;
			where[i] = sp;
			*regs[i] = sp;
		}
	}
	sp -= 8; /* return address 0: the call ends in a SIGSEGV at rip 0 */
	uint64_t zero = 0;
	if (put(tid, sp, &zero, sizeof zero) != 0)
		return -1;
	r->rsp = sp;
	r->rip = fn;
	r->rax = 0;
	r->orig_rax = (unsigned long long)-1; /* no syscall restart on resume */
	return ptrace(PTRACE_SETREGS, tid, NULL, r);
}

int inject_call(inject_proc *p, uintptr_t fn, const inject_arg *args, int nargs,
		uint64_t *ret, uint64_t *stopped_ns, char *err, size_t errlen)
{
	pid_t tid;
	struct user_regs_struct saved, r;
	static xstate fp;
	int rc = stop_safe(p, &tid, &saved, err, errlen);
	if (rc)
		return rc;
	p->last_tid = tid;
	uint64_t t0 = mono_ns();
	if (xstate_get(tid, &fp) != 0) {
		snprintf(err, errlen, "cannot read the vector registers of thread %d: %s",
			 (int)tid, strerror(errno));
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return EXIT_REFUSED;
	}
	uintptr_t where[3] = { 0, 0, 0 };
	int pending[16], npending = 0;
	if (prepare(tid, &saved, fn, args, nargs, where, &r) != 0) {
		snprintf(err, errlen, "cannot set up the call in thread %d: %s", (int)tid,
			 strerror(errno));
		rc = EXIT_REFUSED;
	} else {
		rc = run_call(tid, ret, pending, &npending, err, errlen);
	}
	for (int i = 0; rc == 0 && i < nargs && i < 3; i++)
		if (args[i].out && get(tid, where[i], args[i].out, args[i].n) != 0)
			rc = EXIT_REFUSED;
	fix_restart(&saved);
	if (xstate_set(tid, &fp) != 0 && rc == 0) {
		snprintf(err, errlen, "cannot restore the vector registers of thread %d: %s",
			 (int)tid, strerror(errno));
		rc = EXIT_REFUSED;
	}
	ptrace(PTRACE_SETREGS, tid, NULL, &saved);
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	if (stopped_ns)
		*stopped_ns = mono_ns() - t0;
	for (int i = 0; i < npending; i++)
		syscall(SYS_tgkill, p->pid, tid, pending[i]);
	return rc;
}

#else

int inject_call(inject_proc *p, uintptr_t fn, const inject_arg *args, int nargs,
		uint64_t *ret, uint64_t *stopped_ns, char *err, size_t errlen)
{
	(void)p; (void)fn; (void)args; (void)nargs; (void)ret; (void)stopped_ns;
	snprintf(err, errlen, "attach is supported on Linux x86_64 only");
	return EXIT_REFUSED;
}

int inject_read_string(pid_t pid, uintptr_t addr, char *out, size_t cap)
{
	(void)pid; (void)addr; (void)out; (void)cap;
	return -1;
}

#endif
