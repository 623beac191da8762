/*
 * exec_forms.c: every member of the exec family, for preload_exec_test.sh.
 * The runtime interposes them all (src/preload/interpose_exec.c); the
 * program's output must be the same profiled or not.
 *
 * Usage: exec_forms | exec_forms reexec [MS] | exec_forms timer_reexec
 *
 * For each form a fork child execs /bin/echo or /bin/sh with arguments
 * (and an environment where the form takes one) that name the form, and
 * the parent waits for it. execl also runs with 100 arguments (more than
 * the runtime gathers on its stack), and once with a path that does not
 * exist: it must fail with ENOENT and leave the program running as before.
 * Prints one line per form, then "done"; exits 0.
 *
 * reexec: keeps a 1 MiB block from before_exec_block, waits MS ms (default
 * 0: interval dumps can run meanwhile), then execs itself as "exec_forms
 * after", which keeps one from after_exec_block, prints "after" and exits 0.
 *
 * timer_reexec: a server that re-execs itself from a signal handler. Two
 * threads allocate and free without pause; a timer's SIGALRM, 20 ms on,
 * runs a handler that execs "exec_forms after", so the handler has most
 * likely interrupted malloc, which may hold the allocator's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define A10(x) x "0", x "1", x "2", x "3", x "4", x "5", x "6", x "7", x "8", x "9"
#define A100 A10("a"), A10("b"), A10("c"), A10("d"), A10("e"), A10("f"), A10("g"), \
	     A10("h"), A10("i"), A10("j")

static void run(const char *form)
{
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		exit(2);
	if (c > 0) {
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("%s: child failed\n", form);
			exit(3);
		}
		return;
	}
	char *const echo_argv[] = { "echo", (char *)form, "x y", NULL };
	char *const sh_argv[] = { "sh", "-c", "echo \"$0\" \"$AP_FORM\"", (char *)form, NULL };
	char *const env[] = { "AP_FORM=own environment", "PATH=/usr/bin:/bin", NULL };
	if (!strcmp(form, "execl"))
		execl("/bin/echo", "echo", form, "x y", (char *)NULL);
	else if (!strcmp(form, "execl100"))
		execl("/bin/echo", "echo", form, A100, (char *)NULL);
	else if (!strcmp(form, "execlp"))
		execlp("echo", "echo", form, "x y", (char *)NULL);
	else if (!strcmp(form, "execle"))
		execle("/bin/sh", "sh", "-c", "echo \"$0\" \"$AP_FORM\"", form, (char *)NULL, env);
	else if (!strcmp(form, "execv"))
		execv("/bin/echo", echo_argv);
	else if (!strcmp(form, "execvp"))
		execvp("echo", echo_argv);
	else if (!strcmp(form, "execvpe"))
		execvpe("sh", sh_argv, env);
	else if (!strcmp(form, "execve"))
		execve("/bin/sh", sh_argv, env);
	else if (!strcmp(form, "fexecve")) {
		int fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			fexecve(fd, sh_argv, env);
	} else if (!strcmp(form, "execveat")) {
		int dir = open("/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir >= 0)
			execveat(dir, "sh", sh_argv, env, 0);
	}
	_exit(4);
}

static void *volatile kept; /* volatile: stores the compiler must keep */

__attribute__((noinline)) static void before_exec_block(void)
{
	kept = malloc(1 << 20);
	if (kept)
		memset(kept, 1, 1 << 20);
}

__attribute__((noinline)) static void after_exec_block(void)
{
	kept = malloc(1 << 20);
	if (kept)
		memset(kept, 2, 1 << 20);
}

static char *self_path;

static void reexec_on_alarm(int sig)
{
	(void)sig;
	execl(self_path, self_path, "after", (char *)NULL);
	_exit(6);
}

__attribute__((noreturn)) static void churn_forever(void)
{
	void *keep[64] = { 0 };
	for (unsigned i = 0;; i++) {
		free(keep[i & 63]);
		keep[i & 63] = malloc(64 + i % 5000);
	}
}

static void *churn_thread(void *arg)
{
	(void)arg;
	churn_forever();
	return NULL;
}

static int timer_reexec(const char *self)
{
	self_path = (char *)(uintptr_t)self;
	pthread_t t;
	if (pthread_create(&t, NULL, churn_thread, NULL) != 0)
		return 1;
	signal(SIGALRM, reexec_on_alarm);
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	if (setitimer(ITIMER_REAL, &it, NULL) != 0)
		return 1;
	churn_forever();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "timer_reexec"))
		return timer_reexec(argv[0]);
	if (argc >= 2 && !strcmp(argv[1], "reexec")) {
		before_exec_block();
		if (argc == 3)
			usleep((useconds_t)atoi(argv[2]) * 1000);
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "after", (char *)NULL);
		return 5;
	}
	if (argc == 2 && !strcmp(argv[1], "after")) {
		after_exec_block();
		printf("after\n");
		return 0;
	}
	static const char *const forms[] = { "execl", "execl100", "execlp", "execle", "execv",
					     "execvp", "execvpe", "execve", "fexecve", "execveat" };
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
		run(forms[i]);
	/* A failed exec returns; the program goes on. */
	char *keep = malloc(1 << 20);
	if (!keep)
		return 2;
	memset(keep, 1, 1 << 20);
	errno = 0;
	int rc = execl("/nonexistent/program", "program", (char *)NULL);
	printf("failed exec: %d %s\n", rc, errno == ENOENT ? "ENOENT" : strerror(errno));
	free(keep);
	printf("done\n");
	return 0;
}
