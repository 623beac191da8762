/*
 * proc_events.c: processes and signals a profiler must survive without
 * losing or mixing up profiles (tests/integration/preload_procs_test.sh).
 * Each mode first keeps a 1 MiB block from keep_marker_block, so a
 * profile that has this program's samples names that function.
 *
 *   proc_events exit        print "done" and exit 0
 *   proc_events daemon      print "ready", then wait for signals forever
 *                           (SIGTERM/SIGINT/SIGHUP left at their default)
 *   proc_events own         print the SIGTERM action it finds ("default"
 *                           or "other"), install its own handler, print
 *                           "ready" and wait; the handler prints
 *                           "own handler" and exits 7
 *   proc_events clone       a raw clone(SIGCHLD) child (no fork handlers)
 *                           keeps a block, prints "child PID" and exit()s;
 *                           the parent waits for it and exits 0
 *   proc_events vfork STOP  a vfork child calls exit(0) (as some programs
 *                           do), then the parent prints "ready" and waits
 *                           until the file STOP exists (at most 60 s)
 *   proc_events fork STOP   like vfork, with a fork child that keeps a
 *                           block and exit()s, writing its own profile
 *   proc_events crash       a crash reporter: its SIGSEGV handler writes
 *                           "crash handler" and leaves through _exit(3);
 *                           then the program raises SIGSEGV
 *   proc_events crash_exit  the same, the handler leaving through exit(3)
 *                           (atexit handlers and destructors run)
 *   proc_events masked_exit every signal blocked (a daemon that waits for
 *                           them with sigwait or a signalfd), then
 *                           "masked exit" and _exit(5): no handler runs
 *   proc_events masked_crash, masked_crash_exit
 *                           the same with a SIGSEGV handler installed (a
 *                           daemon with a crash reporter), leaving through
 *                           _exit(5) and exit(5)
 *   proc_events vfork_exit STOP, proc_events fork_exit STOP
 *                           the same, the child leaving through _exit (a
 *                           failed exec's, a pre-fork worker's end); the
 *                           fork child prints "child PID"
 *   proc_events ignore      like daemon, with SIGTERM ignored: a kill
 *                           does nothing (the test then sends SIGKILL)
 *   proc_events bg STOP     a fork child keeps a block and runs on until
 *                           the file STOP exists (at most 60 s), then
 *                           exit()s; the parent prints "child PID" and
 *                           exits 0 at once (a daemon's start)
 *   proc_events dropuid UID a fork child switches to group and user UID
 *                           (as a server's workers drop privileges), keeps
 *                           a block and exit()s; the parent waits for it,
 *                           prints "child PID" and exits 0 (run as root)
 *
 * Output is the same profiled or not.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept[4];

__attribute__((noinline)) static void keep_marker_block(int slot)
{
	kept[slot] = malloc(1 << 20);
	if (!kept[slot])
		exit(2);
	memset(kept[slot], 1, 1 << 20);
}

static void wait_forever(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* What a handler may do: write a line, then _exit(status). */
static void say_and_exit(const char *line, int status)
{
	ssize_t w = write(1, line, strlen(line));
	(void)w;
	_exit(status);
}

static void own_handler(int sig)
{
	(void)sig;
	say_and_exit("own handler\n", 7);
}

static bool crash_via_exit;

static void crash_handler(int sig)
{
	(void)sig;
	if (crash_via_exit) {
		ssize_t w = write(1, "crash handler\n", 14);
		(void)w;
		exit(3);
	}
	say_and_exit("crash handler\n", 3);
}

static int install_crash_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = crash_handler;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSEGV, &sa, NULL);
}

static int clone_child(void *arg)
{
	(void)arg;
	keep_marker_block(1);
	printf("child %ld\n", (long)getpid());
	fflush(stdout);
	exit(0);
}

/* Wait for child c: 0 once it exited 0, 3 when it was never started
 * (c < 0), 4 when it failed. */
static int reap(pid_t c)
{
	if (c < 0)
		return 3;
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 4;
	return 0;
}

int main(int argc, char **argv)
{
	keep_marker_block(0);
	if (argc == 2 && !strcmp(argv[1], "exit")) {
		printf("done\n");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "daemon"))
		wait_forever();
	if (argc == 2 && !strcmp(argv[1], "ignore")) {
		signal(SIGTERM, SIG_IGN);
		wait_forever();
	}
	if (argc == 2 && !strcmp(argv[1], "own")) {
		struct sigaction cur;
		sigaction(SIGTERM, NULL, &cur);
		printf("%s\n", cur.sa_handler == SIG_DFL ? "default" : "other");
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = own_handler;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		wait_forever();
	}
	if (argc == 2 && !strcmp(argv[1], "clone")) {
		size_t sz = 1 << 20;
		char *stack = malloc(sz);
		if (!stack)
			return 2;
		fflush(stdout);
		pid_t c = clone(clone_child, stack + sz, SIGCHLD, NULL);
		int rc = reap(c);
		if (rc)
			return rc;
		printf("parent done\n");
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "crash") || !strcmp(argv[1], "crash_exit"))) {
		crash_via_exit = !strcmp(argv[1], "crash_exit");
		if (install_crash_handler() != 0)
			return 2;
		fflush(stdout);
		raise(SIGSEGV);
		return 4;
	}
	if (argc == 2 && (!strcmp(argv[1], "masked_exit") || !strcmp(argv[1], "masked_crash") ||
			  !strcmp(argv[1], "masked_crash_exit"))) {
		if (strcmp(argv[1], "masked_exit") != 0) {
			if (install_crash_handler() != 0)
				return 2;
		}
		sigset_t all;
		sigfillset(&all);
		if (sigprocmask(SIG_BLOCK, &all, NULL) != 0)
			return 2;
		if (!strcmp(argv[1], "masked_crash_exit")) {
			printf("masked exit\n");
			exit(5);
		}
		say_and_exit("masked exit\n", 5);
	}
	if (argc == 3 && (!strcmp(argv[1], "vfork") || !strcmp(argv[1], "fork") ||
			  !strcmp(argv[1], "vfork_exit") || !strcmp(argv[1], "fork_exit"))) {
		bool quick = strchr(argv[1], '_') != NULL;
		fflush(stdout);
		pid_t c;
		if (argv[1][0] == 'v') {
			c = vfork();
			if (c == 0) {
				if (quick)
					_exit(0);
				exit(0); /* runs exit handlers in the parent's memory */
			}
		} else {
			c = fork();
			if (c == 0) {
				keep_marker_block(1);
				if (quick)
					_exit(0);
				exit(0);
			}
		}
		int rc = reap(c);
		if (rc)
			return rc;
		if (quick && c > 0 && argv[1][0] == 'f')
			printf("child %ld\n", (long)c);
		printf("ready\n");
		fflush(stdout);
		struct stat sb;
		for (int i = 0; i < 600 && stat(argv[2], &sb) != 0; i++)
			usleep(100000);
		printf("parent done\n");
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "bg")) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			keep_marker_block(1);
			struct stat sb;
			for (int i = 0; i < 600 && stat(argv[2], &sb) != 0; i++)
				usleep(100000);
			exit(0);
		}
		if (c < 0)
			return 3;
		printf("child %ld\n", (long)c);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "dropuid")) {
		fflush(stdout);
		unsigned id = (unsigned)strtoul(argv[2], NULL, 10);
		pid_t c = fork();
		if (c == 0) {
			if (setgroups(0, NULL) != 0 || setgid((gid_t)id) != 0 ||
			    setuid((uid_t)id) != 0)
				_exit(5);
			keep_marker_block(1);
			exit(0);
		}
		int rc = reap(c);
		if (rc)
			return rc;
		printf("child %ld\n", (long)c);
		return 0;
	}
	fprintf(stderr, "usage: proc_events exit|daemon|own|crash|crash_exit|masked_exit|masked_crash|masked_crash_exit|clone|ignore|vfork STOP|fork STOP|"
			"vfork_exit STOP|fork_exit STOP|bg STOP|dropuid UID\n");
	return 1;
}
