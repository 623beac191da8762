/*
 * runner.c: what `allocprof run` does besides options (runner.h): finding
 * the runtime, running the program under it with signals forwarded, and
 * finding the profiles it wrote.
 */
#define _GNU_SOURCE
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocprof/fileio.h"
#include "cli_util.h"
#include "elfdyn.h"
#include "profload.h"
#include "symbolize.h"

/* ---- symbolizing what the run wrote ------------------------------------ */

static int symbolize_one(const char *path, bool warn, char *err, size_t errlen)
{
	ap_profile *p = NULL, *sp = NULL;
	const char *one[1] = { path };
	struct stat st;
	int rc = stat(path, &st) == 0 ? hv_load_profiles(one, 1, &p, err, errlen) : AP_EIO;
	if (rc == AP_EIO && !err[0])
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	sym_options so;
	sym_options_default(&so);
	so.progress = so.warn = warn;
	so.require_main = false; /* names for what can be found */
	if (!rc)
		rc = sym_symbolize_profile(p, &so, &sp, NULL, err, errlen);
	unsigned char *buf = NULL;
	size_t len = 0;
	if (!rc && (rc = ap_pprof_encode(sp, true, NULL, &buf, &len)) != 0)
		snprintf(err, errlen, "%s: cannot encode: %s", path, ap_strerror(rc));
	if (!rc && (rc = ap_file_write_atomic(path, buf, len, st.st_mode & 07777)) != 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	free(buf);
	ap_profile_destroy(sp);
	ap_profile_destroy(p);
	return rc;
}

size_t runner_symbolize_files(char *const *paths, size_t n, bool warn)
{
	size_t left = 0;
	for (size_t i = 0; i < n; i++) {
		char err[1024] = "";
		if (symbolize_one(paths[i], warn, err, sizeof err) != 0) {
			ap_cli_error("not symbolized: %s", err[0] ? err : paths[i]);
			left++;
		}
	}
	return left;
}

/* ---- locating the runtime ---------------------------------------------- */

int runner_find_preload(char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			if ((size_t)snprintf(out, cap, "%s/%s", exe,
					     RUNNER_PRELOAD_NAME) < cap &&
			    access(out, R_OK) == 0)
				return 0;
#ifdef AP_INSTALL_RELLIBDIR
			/* An installed tree moved as a whole (--prefix at
			 * install time, a package unpacked elsewhere):
			 * PREFIX/bin/allocprof beside PREFIX/lib. */
			if ((size_t)snprintf(out, cap, "%s/../%s/%s", exe,
					     AP_INSTALL_RELLIBDIR,
					     RUNNER_PRELOAD_NAME) < cap &&
			    access(out, R_OK) == 0)
				return 0;
#endif
		}
	}
#ifdef AP_INSTALL_LIBDIR
	if ((size_t)snprintf(out, cap, "%s/%s", AP_INSTALL_LIBDIR,
			     RUNNER_PRELOAD_NAME) < cap &&
	    access(out, R_OK) == 0)
		return 0;
#endif
	return -1;
}

/* ---- finding the profiles a run wrote ----------------------------------- */

int runner_pattern_glob(const char *pattern, char *out, size_t cap)
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


void runner_files_free(runner_files *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->paths[i]);
	free(s->paths);
	free(s->mtimes);
	memset(s, 0, sizeof *s);
}

int runner_files_scan(const char *globpat, runner_files *s)
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
		runner_files_free(s);
		return -1;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct stat st;
		if (stat(g.gl_pathv[i], &st) || !S_ISREG(st.st_mode))
			continue;
		s->paths[s->n] = strdup(g.gl_pathv[i]);
		if (!s->paths[s->n]) {
			globfree(&g);
			runner_files_free(s);
			return -1;
		}
		s->mtimes[s->n++] = st.st_mtim;
	}
	globfree(&g);
	return 0;
}

void runner_files_subtract(runner_files *after, const runner_files *before)
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

/* lib in front of LD_PRELOAD (in the child, before exec). */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *v;
	if (asprintf(&v, "%s%s%s", lib, old && *old ? " " : "",
		     old && *old ? old : "") < 0)
		return -1;
	int rc = setenv("LD_PRELOAD", v, 1);
	free(v);
	return rc;
}

/* program as execvp finds it, into out (cap bytes); false when not found. */
static bool find_program(const char *program, char *out, size_t cap)
{
	if (strchr(program, '/'))
		return snprintf(out, cap, "%s", program) < (int)cap;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		int len = (int)(end - p);
		/* an empty entry is the current directory */
		if (snprintf(out, cap, "%.*s%s%s", len, p, len ? "/" : "", program) <
			    (int)cap &&
		    access(out, X_OK) == 0)
			return true;
		if (!*end)
			return false;
		p = end;
	}
}

const char *runner_no_profile_reason(const char *program)
{
	char path[PATH_MAX];
	struct stat st;
	if (!program || !find_program(program, path, sizeof path) || stat(path, &st))
		return NULL;
	if (elfdyn_has_interp(path) == 0)
		return "is statically linked: the dynamic loader never runs, so "
		       "LD_PRELOAD cannot load the runtime into it";
	/* the loader's secure mode: it then preloads only from system
	 * directories, and only libraries that are set-user-ID themselves */
	if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	    ((st.st_mode & S_ISGID) && st.st_gid != getegid()))
		return "is set-user-ID or set-group-ID: the dynamic loader "
		       "ignores LD_PRELOAD's paths for it";
	if (elfdyn_is_go(path) == 1)
		return "is a Go program, which exits without running exit "
		       "handlers: add -e interval=1s for periodic profiles";
	return NULL;
}

size_t runner_survivors(pid_t *out, size_t cap)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	size_t n = 0;
	pid_t me = getpid();
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char buf[512];
		if (ap_cli_read_proc((pid_t)pid, "stat", buf, sizeof buf) <= 0)
			continue;
		/* "pid (comm) state ppid ...": comm may hold spaces and ')' */
		char *rp = strrchr(buf, ')');
		char state;
		long ppid;
		if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2 ||
		    ppid != (long)me || state == 'Z')
			continue;
		if (n < cap)
			out[n] = (pid_t)pid;
		n++;
	}
	closedir(d);
	return n;
}

int runner_run_child(char **argv, const char *lib, const char *options,
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
	/* The program's orphans (a daemon's forks, a script's background
	 * jobs) become ours, not init's: when the program exits, the ones
	 * still running are named (runner_survivors). */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
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
	/* Orphans that end meanwhile are reaped here, not left as zombies. */
	do
		w = waitpid(-1, &st, 0);
	while ((w < 0 && errno == EINTR) || (w > 0 && w != pid));
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

