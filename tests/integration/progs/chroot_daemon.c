/*
 * chroot_daemon.c: a daemon that confines itself, for
 * tests/integration/preload_chroot_test.sh. It allocates in
 * before_chroot(), chroot()s into JAIL (an empty directory) and chdir("/"),
 * allocates in after_chroot(), forks a child that allocates in
 * in_child() and exits, waits for it, and exits. Every block is 4096
 * bytes and freed at once; the counts are fixed: 300, 500 and 200.
 *
 * Usage: chroot_daemon JAIL
 * Prints "pid PID" (the parent's) and "child PID", exits 0; exits 77 when
 * chroot is not permitted (not root), 1 on another failure.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "churn.h"

__attribute__((noinline)) static void before_chroot(void) { CHURN(300, 4096); }
__attribute__((noinline)) static void after_chroot(void) { CHURN(500, 4096); }
__attribute__((noinline)) static void in_child(void) { CHURN(200, 4096); }

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: chroot_daemon JAIL\n");
		return 2;
	}
	before_chroot();
	if (chroot(argv[1]) != 0) {
		fprintf(stderr, "chroot %s: %s\n", argv[1], strerror(errno));
		return errno == EPERM ? 77 : 1;
	}
	if (chdir("/") != 0)
		return 1;
	after_chroot();
	printf("pid %ld\n", (long)getpid());
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		in_child();
		printf("child %ld\n", (long)getpid());
		exit(0);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	return 0;
}
