/*
 * seccomp_threads.c: a hardened service's sandbox, for
 * tests/integration/preload_seccomp_test.sh. The program installs a
 * seccomp filter that kills the process at any of the system calls named
 * on the command line (as systemd's SystemCallFilter= and other sandboxes
 * do, with "kill" as the action), then starts threads that allocate from
 * varied call stacks, joins them and exits normally. A runtime that makes
 * one of those calls while it samples (libunwind's memory checks used
 * mincore and process_vm_readv on a new thread's first samples) kills it.
 *
 * Usage: seccomp_threads SYSCALL...   (names: process_vm_readv, mincore,
 *        msync, kcmp)
 * Prints "ok" and exits 0; exits 77 where seccomp filters are not
 * available, 2 on a bad name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

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
#ifndef ARCH
	(void)argc;
	(void)argv;
	return 77;
#else
	enum { MAX = 8 };
	if (argc < 2 || argc - 1 > MAX) {
		fprintf(stderr, "usage: seccomp_threads SYSCALL...\n");
		return 2;
	}
	/* arch check, load nr, one test per name, allow; the kills follow. */
	struct sock_filter f[4 + 2 * MAX];
	int n = 0, k = argc - 1;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < k; i++) {
		long nr = number_of(argv[i + 1]);
		if (nr < 0) {
			fprintf(stderr, "seccomp_threads: unknown system call %s\n", argv[i + 1]);
			return 2;
		}
		/* Equal: jump to the kill after the allow (k - i - 1 tests
		 * and the allow ahead). */
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr,
						      (unsigned char)(k - i), 0);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	struct sock_fprog prog = { (unsigned short)n, f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		fprintf(stderr, "seccomp_threads: cannot install the filter: %s\n", strerror(errno));
		return 77;
	}
	pthread_t t[6];
	for (int i = 0; i < 6; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	worker(NULL);
	printf("ok\n");
	return 0;
#endif
}
