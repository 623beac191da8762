/*
 * small_stack.c: allocations on small stacks, where a runtime that needs
 * much stack on its sampling path would overflow (tests/integration/
 * preload_stack_test.sh).
 *
 * Usage:
 *   small_stack altstack N      N times raise SIGUSR1, whose handler runs on
 *                               an 8 KiB alternate signal stack (the
 *                               traditional SIGSTKSZ) and mallocs and frees
 *   small_stack coro BYTES N    a ucontext coroutine on a BYTES-byte stack
 *                               (mmap'd, a PROT_NONE guard page below, so an
 *                               overflow is a SIGSEGV rather than silent
 *                               corruption) mallocs and frees, N rounds
 *   small_stack measure N       N mallocs/frees in a coroutine on a 256 KiB
 *                               stack painted with a pattern; prints
 *                               "stack BYTES": the deepest byte touched,
 *                               counted from the stack's top
 *   small_stack measure-main N  the same on the thread's own stack: prints
 *                               "stack BYTES" used below the caller's frame
 * Each prints "ok" at the end and exits 0.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define ALT_BYTES 8192
#define PAINT 0xA5

static volatile sig_atomic_t handled;
static ucontext_t main_ctx, coro_ctx;
static int coro_rounds;

/* A few allocations of different sizes, kept alive across each other so
 * the compiler cannot drop them. */
__attribute__((noinline)) static void churn(void)
{
	void *p[4];
	static const size_t sizes[4] = { 24, 200, 3000, 70000 };
	for (int i = 0; i < 4; i++) {
		p[i] = malloc(sizes[i]);
		if (!p[i])
			abort();
		memset(p[i], i, 16);
	}
	for (int i = 0; i < 4; i++)
		free(p[i]);
}

static void on_usr1(int sig)
{
	(void)sig;
	churn();
	handled++;
}

static int run_altstack(int n)
{
	static char alt[ALT_BYTES];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };
	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < n; i++)
		raise(SIGUSR1);
	return handled == n ? 0 : 1;
}

static void coro_main(void)
{
	for (int i = 0; i < coro_rounds; i++) {
		churn();
		swapcontext(&coro_ctx, &main_ctx);
	}
}

/* Run coro_main on a stack of `bytes` (plus a guard page below it);
 * *base gets the stack's lowest byte. */
static int run_coro_on(size_t bytes, int n, unsigned char **base, int paint)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = page + ((bytes + page - 1) & ~(page - 1));
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	mprotect(m, page, PROT_NONE);
	/* The stack is the top `bytes` of the mapping, right below its end. */
	unsigned char *stk = m + len - bytes;
	if (paint)
		memset(stk, PAINT, bytes);
	*base = stk;
	getcontext(&coro_ctx);
	coro_ctx.uc_stack.ss_sp = stk;
	coro_ctx.uc_stack.ss_size = bytes;
	coro_ctx.uc_link = &main_ctx;
	coro_rounds = n;
	makecontext(&coro_ctx, coro_main, 0);
	for (int i = 0; i <= n; i++)
		swapcontext(&main_ctx, &coro_ctx);
	return 0;
}

#define MAIN_PAINT ((size_t)64 * 1024)
static unsigned char *main_base;

/* Paint MAIN_PAINT bytes of stack below this frame; the next call from the
 * same caller runs its frames over them. */
__attribute__((noinline)) static void paint_below(void)
{
	volatile unsigned char area[MAIN_PAINT];
	for (size_t i = 0; i < MAIN_PAINT; i++)
		area[i] = PAINT;
	main_base = (unsigned char *)area;
}

__attribute__((noinline)) static void churn_n(int n)
{
	for (int i = 0; i < n; i++)
		churn();
}

static size_t measure_main(int n)
{
	churn_n(1); /* the allocator's first-use paths are not the measure */
	paint_below();
	churn_n(n);
	size_t i = 0;
	while (i < MAIN_PAINT && main_base[i] == PAINT)
		i++;
	return MAIN_PAINT - i;
}

int main(int argc, char **argv)
{
	int rc = 2;
	unsigned char *base = NULL;
	if (argc == 3 && strcmp(argv[1], "altstack") == 0) {
		rc = run_altstack(atoi(argv[2]));
	} else if (argc == 4 && strcmp(argv[1], "coro") == 0) {
		rc = run_coro_on((size_t)atol(argv[2]), atoi(argv[3]), &base, 0);
	} else if (argc == 3 && strcmp(argv[1], "measure") == 0) {
		size_t bytes = (size_t)256 * 1024;
		churn(); /* warm the allocator (and the runtime) up first */
		rc = run_coro_on(bytes, atoi(argv[2]), &base, 1);
		size_t i = 0;
		while (i < bytes && base[i] == PAINT)
			i++;
		printf("stack %zu\n", bytes - i);
	} else if (argc == 3 && strcmp(argv[1], "measure-main") == 0) {
		printf("stack %zu\n", measure_main(atoi(argv[2])));
		rc = 0;
	} else {
		fprintf(stderr, "usage: small_stack altstack N | coro BYTES N | measure[-main] N\n");
		return 2;
	}
	if (rc == 0)
		printf("ok\n");
	return rc;
}
