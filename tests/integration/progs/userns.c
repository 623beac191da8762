/*
 * userns.c: the namespace calls that need a single-threaded process, for
 * tests/integration/preload_userns_test.sh. unshare(CLONE_NEWUSER) and
 * setns() into a user or mount namespace fail with EINVAL in a process
 * with more than one thread, so a runtime that keeps a thread of its own
 * would break them (rootless containers, sandboxes, unshare -r, nsenter).
 * Each mode allocates before and after the call, in before_ns() and
 * after_ns(), 400 and 600 blocks of 2048 bytes.
 *
 *   userns unshare     unshare(CLONE_NEWUSER), then its ids mapped as
 *                      `unshare -r` maps them
 *   userns setns_user  a child unshares its user namespace (mapped as
 *                      above) and waits; the
 *                      program joins it with setns(fd, CLONE_NEWUSER)
 *   userns vfork_unshare  a vfork child calls unshare(CLONE_NEWUSER) and
 *                      leaves by _exit; the parent goes on
 *   userns setns_mnt   setns() into its own mount namespace, by
 *                      /proc/self/ns/mnt, with nstype 0 (any type)
 *   userns setns_net   the same with its network namespace, which a
 *                      multi-threaded process may join: the runtime's
 *                      threads need not stop
 *
 * Prints "ok" and exits 0; exits 77 when the call fails for want of
 * privilege (EPERM, or user namespaces disabled: ENOSPC), 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "churn.h"

__attribute__((noinline)) static void before_ns(void) { CHURN(400, 2048); }
__attribute__((noinline)) static void after_ns(void) { CHURN(600, 2048); }

/* Map this process's ids in its new user namespace as `unshare -r` does,
 * so that it can still create files (the profile among them). */
static int map_self(uid_t uid, gid_t gid)
{
	char line[64];
	const char *files[] = { "/proc/self/setgroups", "/proc/self/uid_map",
				"/proc/self/gid_map" };
	for (int i = 0; i < 3; i++) {
		int fd = open(files[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		int n = i == 0 ? snprintf(line, sizeof line, "deny")
			       : snprintf(line, sizeof line, "0 %ld 1",
					  i == 1 ? (long)uid : (long)gid);
		ssize_t w = write(fd, line, (size_t)n);
		close(fd);
		if (w != n)
			return -1;
	}
	return 0;
}

static int failed(const char *what)
{
	int e = errno;
	fprintf(stderr, "userns: %s: %s\n", what, strerror(e));
	return e == EPERM || e == ENOSPC ? 77 : 1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: userns unshare|setns_user|vfork_unshare|setns_mnt|setns_net\n");
		return 2;
	}
	before_ns();
	if (!strcmp(argv[1], "unshare")) {
		uid_t uid = getuid();
		gid_t gid = getgid();
		if (unshare(CLONE_NEWUSER) != 0)
			return failed("unshare(CLONE_NEWUSER)");
		if (map_self(uid, gid) != 0)
			return failed("map the ids");
	} else if (!strcmp(argv[1], "setns_user")) {
		int p[2];
		if (pipe(p) != 0)
			return 1;
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (c == 0) {
			uid_t uid = getuid();
			gid_t gid = getgid();
			char ok = unshare(CLONE_NEWUSER) == 0 && map_self(uid, gid) == 0 ? 'y' : 'n';
			if (write(p[1], &ok, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		char ok = 'n';
		if (read(p[0], &ok, 1) != 1 || ok != 'y') {
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
			errno = EPERM;
			return failed("the child's unshare(CLONE_NEWUSER)");
		}
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld/ns/user", (long)c);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		int rc = fd >= 0 ? setns(fd, CLONE_NEWUSER) : -1;
		int e = errno;
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
		errno = e;
		if (rc != 0)
			return failed("setns(CLONE_NEWUSER)");
	} else if (!strcmp(argv[1], "vfork_unshare")) {
		/* As container tools do: a child sharing the parent's memory
		 * unshares (it is single-threaded), then ends. */
		pid_t c = vfork();
		if (c < 0)
			return 1;
		if (c == 0)
			_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno == EPERM ? 77 : 1);
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
			return 1;
		if (WEXITSTATUS(st) != 0) {
			errno = WEXITSTATUS(st) == 77 ? EPERM : EINVAL;
			return failed("the vfork child's unshare(CLONE_NEWUSER)");
		}
	} else if (!strcmp(argv[1], "setns_mnt") || !strcmp(argv[1], "setns_net")) {
		bool mnt = !strcmp(argv[1], "setns_mnt");
		int fd = open(mnt ? "/proc/self/ns/mnt" : "/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, 0) != 0)
			return failed(mnt ? "setns(mnt)" : "setns(net)");
		close(fd);
	} else {
		return 2;
	}
	after_ns();
	printf("ok\n");
	return 0;
}
