/*
 * self_sandbox.c: a program that confines itself with seccomp, as sshd's
 * pre-authentication child does, for tests/integration/preload_seccomp_test.sh.
 * It allocates in before_filter() (300 blocks of 4096 bytes), installs with
 * prctl(PR_SET_SECCOMP) a filter that kills the process at any call that
 * names or lists files (open, openat, link, linkat, rename, renameat,
 * renameat2, unlink, unlinkat, getdents64, fsetxattr), allocates in
 * after_filter() (500 blocks) and exits through exit(). A runtime that
 * dumps at exit as usual is killed there (status 159, SIGSYS).
 *
 * Usage: self_sandbox [permissive]
 * "permissive": the filter kills at kcmp only, which a dump does not use.
 * Prints "ok" and exits 0; exits 77 where seccomp filters are not
 * available.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "churn.h"
#include "seccomp_kill.h"

__attribute__((noinline)) static void before_filter(void) { CHURN(300, 4096); }
__attribute__((noinline)) static void after_filter(void) { CHURN(500, 4096); }

int main(int argc, char **argv)
{
	static const long kcmp_only[] = { SYS_kcmp };
	const bool permissive = argc > 1 && !strcmp(argv[1], "permissive");
	static const long killed[] = {
#ifdef SYS_open
		SYS_open,
#endif
#ifdef SYS_link
		SYS_link,
#endif
#ifdef SYS_rename
		SYS_rename,
#endif
#ifdef SYS_unlink
		SYS_unlink,
#endif
#ifdef SYS_renameat
		SYS_renameat,
#endif
		SYS_openat,     SYS_linkat,   SYS_renameat2, SYS_unlinkat,
		SYS_getdents64, SYS_fsetxattr,
	};
	before_filter();
	if ((permissive ? seccomp_kill(kcmp_only, 1)
			: seccomp_kill(killed, (int)(sizeof killed / sizeof killed[0]))) != 0) {
		fprintf(stderr, "self_sandbox: cannot install the filter: %s\n", strerror(errno));
		return 77;
	}
	after_filter();
	printf("ok\n");
	exit(0);
}
