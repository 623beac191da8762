/*
 * seccomp_threads.c: a hardened service's sandbox, for
 * tests/integration/preload_seccomp_test.sh. The program installs a
 * seccomp filter that kills the process at any of the system calls named
 * on the command line (as systemd's SystemCallFilter= and other sandboxes
 * do, with "kill" as the action) and execs itself under it, as a service
 * manager starts a program inside its filter; the new image starts threads
 * that allocate from varied call stacks, joins them and exits normally. A runtime that makes
 * one of those calls while it samples (libunwind's memory checks used
 * mincore and process_vm_readv on a new thread's first samples) kills it.
 *
 * Usage: seccomp_threads SYSCALL...   (names: process_vm_readv, mincore,
 *        msync, kcmp); the re-exec'd image gets "--filtered" first.
 * Prints "ok" and exits 0; exits 77 where seccomp filters are not
 * available, 2 on a bad name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp_kill.h"

__attribute__((noinline)) static void alloc_at(int depth, size_t n)
{
	if (depth > 0) {
		alloc_at(depth - 1, n);
		__asm__ volatile("");
		return;
	}
	void *volatile p = malloc(n); /* volatile: the pair is not elided */
	free(p);
}

static void *worker(void *arg)
{
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u;
	for (int i = 0; i < 20000; i++) {
		x = x * 1103515245u + 12345u;
		alloc_at((int)(x >> 28), 16 + (x >> 16) % 8000);
	}
	return NULL;
}

static long number_of(const char *name)
{
	if (!strcmp(name, "process_vm_readv"))
		return SYS_process_vm_readv;
	if (!strcmp(name, "mincore"))
		return SYS_mincore;
	if (!strcmp(name, "msync"))
		return SYS_msync;
	if (!strcmp(name, "kcmp"))
		return SYS_kcmp;
	return -1;
}

int main(int argc, char **argv)
{
	enum { MAX = 8 };
	if (argc >= 2 && !strcmp(argv[1], "--filtered")) {
		pthread_t t[6];
		for (int i = 0; i < 6; i++)
			if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
				return 1;
		for (int i = 0; i < 6; i++)
			pthread_join(t[i], NULL);
		worker(NULL);
		printf("ok\n");
		return 0;
	}
	if (argc < 2 || argc - 1 > MAX) {
		fprintf(stderr, "usage: seccomp_threads SYSCALL...\n");
		return 2;
	}
	long nr[MAX];
	int k = argc - 1;
	for (int i = 0; i < k; i++)
		if ((nr[i] = number_of(argv[i + 1])) < 0) {
			fprintf(stderr, "seccomp_threads: unknown system call %s\n", argv[i + 1]);
			return 2;
		}
	if (seccomp_kill(nr, k) != 0) {
		fprintf(stderr, "seccomp_threads: cannot install the filter: %s\n", strerror(errno));
		return 77;
	}
	char *args[MAX + 3];
	args[0] = argv[0];
	args[1] = "--filtered";
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	args[argc + 1] = NULL;
	execv("/proc/self/exe", args);
	fprintf(stderr, "seccomp_threads: cannot exec itself: %s\n", strerror(errno));
	return 1;
}
