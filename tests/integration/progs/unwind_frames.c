/*
 * unwind_frames.c: stacks of functions without frame pointers, some with
 * frames of varying size, for preload_unwind_frames_test.sh. Built with
 * -O2 -fomit-frame-pointer (tests/integration/CMakeLists.txt), so every
 * sample is unwound by libunwind and the runtime's cache of frame rules.
 *
 * Usage: unwind_frames N [jit|fork|coro]
 *
 * N times: a chain main -> vla_level -> fixed_level -> vla_level -> ...
 * -> leaf of 1 to 6 pairs (depth i % 6 + 1), then leaf mallocs and frees
 * one block. vla_level keeps a variable-length array whose size changes
 * from call to call (its frame follows %rbp: a rule learned from one call
 * must not fix its size), fixed_level a fixed frame (a rule by %rsp), and
 * both run from a thread too (a second stack, a second tail). Prints
 * "mallocs N" and exits 0.
 *
 * With "jit": N times main -> run_jit -> jit_level -> STUB -> leaf, where
 * STUB is machine code written at run time into an anonymous mapping (no
 * symbol, no unwind information; it sets up a frame pointer and calls
 * leaf), as a JIT compiler's code would be.
 *
 * With "fork": a second thread, which has allocated nothing, forks; the
 * child (that thread, on its stack, now the child's main thread) runs the
 * N chains from it, prints "mallocs N" and exit()s; the parent waits for
 * it and exits with its status.
 *
 * With "coro": the N chains run from coro_entry on a 64 KiB ucontext
 * coroutine stack (makecontext), whose extent the runtime does not know.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) void *leaf(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

void *vla_level(int depth, size_t n);

__attribute__((noinline)) void *fixed_level(int depth, size_t n)
{
	volatile unsigned local[8];
	local[depth & 7] = (unsigned)n;
	void *p = vla_level(depth - 1, n + 3);
	sink += local[depth & 7];
	return p;
}

__attribute__((noinline)) void *vla_level(int depth, size_t n)
{
	volatile char buf[(n * 37) % 1000 + 8];
	buf[0] = (char)n;
	void *p = depth > 0 ? fixed_level(depth, n + 1) : leaf(16 + n % 200);
	sink += (unsigned)buf[0];
	return p;
}

static long run(long n)
{
	long done = 0;
	for (long i = 0; i < n; i++) {
		free(vla_level((int)(i % 6) + 1, (size_t)i));
		done++;
	}
	return done;
}

static void *thread_main(void *arg)
{
	return (void *)run((long)arg);
}

__attribute__((noinline)) static void *fork_thread_main(void *arg)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		printf("mallocs %ld\n", run((long)arg));
		exit(0);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return (void *)1;
	return (void *)(long)WEXITSTATUS(st);
}

static ucontext_t coro_main_ctx, coro_ctx;
static long coro_n, coro_done;

__attribute__((noinline)) static void coro_entry(void)
{
	coro_done = run(coro_n);
}

static int run_coro(long n)
{
	size_t sz = 64 * 1024;
	char *st = malloc(sz);
	if (!st || getcontext(&coro_ctx) != 0)
		return 1;
	coro_ctx.uc_stack.ss_sp = st;
	coro_ctx.uc_stack.ss_size = sz;
	coro_ctx.uc_link = &coro_main_ctx;
	coro_n = n;
	makecontext(&coro_ctx, coro_entry, 0);
	if (swapcontext(&coro_main_ctx, &coro_ctx) != 0)
		return 1;
	free(st);
	printf("mallocs %ld\n", coro_done);
	return 0;
}

typedef void *(*stub_fn)(size_t);

/* push %rbp; mov %rsp,%rbp; movabs $target,%rax; call *%rax; pop %rbp; ret */
static stub_fn make_stub(void *(*target)(size_t))
{
#if defined(__x86_64__)
	unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,
				 0xff, 0xd0, 0x5d, 0xc3 };
	uint64_t a;
	memcpy(&a, &target, sizeof a);
	memcpy(code + 6, &a, sizeof a);
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	memcpy(m, code, sizeof code);
	if (mprotect(m, (size_t)pg, PROT_READ | PROT_EXEC) != 0)
		return NULL;
	stub_fn f;
	memcpy(&f, &m, sizeof f);
	return f;
#else
	(void)target;
	return NULL;
#endif
}

__attribute__((noinline)) void *jit_level(stub_fn f, size_t n)
{
	volatile unsigned local = (unsigned)n;
	void *p = f(16 + n % 100);
	sink += local;
	return p;
}

__attribute__((noinline)) static long run_jit(long n)
{
	stub_fn f = make_stub(leaf);
	if (!f)
		return -1;
	long done = 0;
	for (long i = 0; i < n; i++) {
		free(jit_level(f, (size_t)i));
		done++;
	}
	return done;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[2], "jit") == 0) {
		long done = run_jit(atol(argv[1]));
		if (done < 0)
			return 77;
		printf("mallocs %ld\n", done);
		return 0;
	}
	if (argc == 3 && strcmp(argv[2], "coro") == 0)
		return run_coro(atol(argv[1]));
	if (argc == 3 && strcmp(argv[2], "fork") == 0) {
		pthread_t t;
		void *r;
		if (pthread_create(&t, NULL, fork_thread_main, (void *)atol(argv[1])) != 0 ||
		    pthread_join(t, &r) != 0)
			return 1;
		return (int)(long)r;
	}
	if (argc != 2)
		return 2;
	long n = atol(argv[1]);
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, (void *)n) != 0)
		return 1;
	long done = run(n);
	void *r;
	pthread_join(t, &r);
	printf("mallocs %ld\n", done + (long)r);
	return 0;
}
