/*
 * seccomp_kill.h: a seccomp filter that kills the process at any of a list
 * of system calls (as systemd's SystemCallFilter= and sandboxes do, with
 * "kill" as the action), for progs/seccomp_threads.c and
 * progs/self_sandbox.c. Header-only: each program is one file.
 */
#ifndef AP_TEST_SECCOMP_KILL_H
#define AP_TEST_SECCOMP_KILL_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

#if defined(__x86_64__)
#define SECCOMP_KILL_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_KILL_ARCH AUDIT_ARCH_AARCH64
#endif

#define SECCOMP_KILL_MAX 16

/* Install, with prctl, a filter killing at the k system calls nr[]. 0, or
 * -1 with errno (ENOSYS where this architecture is not known here). */
static inline int seccomp_kill(const long *nr, int k)
{
#ifndef SECCOMP_KILL_ARCH
	(void)nr;
	(void)k;
	errno = ENOSYS;
	return -1;
#else
	if (k < 0 || k > SECCOMP_KILL_MAX) {
		errno = EINVAL;
		return -1;
	}
	/* arch check, load nr, one test per call, allow; the kill follows. */
	struct sock_filter f[6 + SECCOMP_KILL_MAX];
	int n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_KILL_ARCH, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < k; i++) /* equal: past the k - i - 1 others and the allow */
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr[i],
						      (unsigned char)(k - i), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	struct sock_fprog prog = { (unsigned short)n, f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#endif
}

#endif
