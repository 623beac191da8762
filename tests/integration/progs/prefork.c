/*
 * prefork.c: a pre-fork server in miniature for the fork statistics test
 * (tests/integration/fork_merge_test.sh). The parent allocates in
 * parent_work(), then forks NCHILD children that all run child_work(), the
 * same allocations in every child, and exits once they have. Every process
 * writes its own profile at exit (fork=follow). The true bytes each
 * function allocates are fixed: parent_work PARENT_BYTES, child_work
 * CHILD_BYTES per child; the test checks the merge of all profiles against
 * them. No stdio: only the work functions allocate much.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NCHILD 8
/* 64-byte objects, half freed at once, half kept until exit */
#define OBJ 64
#define PARENT_OBJS 16384 /* 1 MiB */
#define CHILD_OBJS 32768  /* 2 MiB per child */

static void *keep[CHILD_OBJS];

/* One object, freed at once (odd i) or kept until exit (in a child it
 * may replace an inherited block). A macro, not a function: the work
 * functions must stay the sites' first frames. */
#define ONE(i)                                                          \
	do {                                                            \
		char *p_ = malloc(OBJ);                                 \
		if (!p_)                                                \
			_exit(2);                                       \
		p_[0] = (char)(i);                                      \
		if ((i) % 2)                                            \
			free(p_);                                       \
		else                                                    \
			keep[(i)] = p_;                                 \
	} while (0)

__attribute__((noinline)) static void parent_work(void)
{
	for (int i = 0; i < PARENT_OBJS; i++)
		ONE(i);
}

__attribute__((noinline)) static void child_work(void)
{
	for (int i = 0; i < CHILD_OBJS; i++)
		ONE(i);
}

int main(void)
{
	parent_work();
	pid_t pids[NCHILD];
	for (int k = 0; k < NCHILD; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			return 3;
		if (pids[k] == 0) {
			child_work();
			exit(0); /* runs the runtime's exit dump */
		}
	}
	int bad = 0;
	for (int k = 0; k < NCHILD; k++) {
		int st;
		if (waitpid(pids[k], &st, 0) != pids[k] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	}
	return bad;
}
