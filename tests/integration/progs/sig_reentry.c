/*
 * sig_reentry.c: signal handlers that re-enter the allocator while the
 * interrupted code is inside it, for tests/integration/preload_signals_test.sh.
 *
 * Usage:
 *   sig_reentry free N      a 20 kHz interval timer's handler frees the
 *                           block main last parked in a slot; main mallocs
 *                           and frees in a loop, parking a block now and
 *                           then, until N handler frees happened
 *   sig_reentry exit USEC   SIGINT's handler calls exit(3); main allocates
 *                           forever; a POSIX timer sends the process
 *                           SIGINT USEC microseconds after the handler is
 *                           installed (as Ctrl-C would, with no race
 *                           against start-up)
 *   sig_reentry jump N      a 20 kHz timer's handler siglongjmps back into
 *                           main's loop of mallocs, N times; then the timer
 *                           stops and the program checks, through the
 *                           runtime's ap_runtime_get_totals (looked up with
 *                           dlsym, so it also runs alone), that mallocs are
 *                           still sampled
 * Prints "ok" and exits 0 when done (exit: 3 from the handler).
 *
 * Only one thread, so glibc's allocator takes no lock; still, a handler
 * that frees or jumps while glibc is half-way through updating its heap
 * corrupts it, with or without a runtime. So the free and jump handlers
 * act only when the interrupted instruction is outside libc's text (in the
 * program, in the runtime, in an unwinder); otherwise they let this tick
 * pass. The runtime's own code gets no such courtesy.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static void *_Atomic parked;
static volatile sig_atomic_t freed, jumps;
static sigjmp_buf env;

static uintptr_t libc_lo, libc_hi;

static int libc_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			libc_lo = info->dlpi_addr + ph->p_vaddr;
			libc_hi = libc_lo + ph->p_memsz;
		}
	}
	return 1;
}

/* Did the signal interrupt libc? */
static int in_libc(void *uc)
{
#if defined(__x86_64__)
	uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
	uintptr_t pc = 0;
	(void)uc;
#endif
	return pc - libc_lo < libc_hi - libc_lo;
}

static void arm(long usec)
{
	struct itimerval it = { { 0, usec }, { 0, usec } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static void on_alarm_free(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if (in_libc(uc))
		return;
	void *p = atomic_exchange(&parked, NULL);
	if (p) {
		free(p);
		freed++;
	}
}

static void on_int_exit(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	exit(3);
}

static void on_alarm_jump(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if (in_libc(uc))
		return;
	jumps++;
	siglongjmp(env, 1);
}

static void handle(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

__attribute__((noinline)) static void churn(unsigned *x)
{
	*x = *x * 1103515245u + 12345u;
	void *p = malloc(16 + (*x >> 16) % 4000);
	if (!p)
		abort();
	memset(p, 0, 16);
	free(p);
}

static int run_free(int n)
{
	handle(SIGALRM, on_alarm_free);
	arm(50);
	unsigned x = 1;
	while (freed < n) {
		churn(&x);
		if (!atomic_load(&parked)) {
			void *p = malloc(100);
			void *expect = NULL;
			if (!atomic_compare_exchange_strong(&parked, &expect, p))
				free(p);
		}
	}
	arm(0);
	free(atomic_exchange(&parked, NULL));
	return 0;
}

static int run_exit(long usec)
{
	handle(SIGINT, on_int_exit);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGINT;
	timer_t tm;
	struct itimerspec its = { { 0, 0 }, { usec / 1000000, usec % 1000000 * 1000 } };
	if (timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0 || timer_settime(tm, 0, &its, NULL) != 0) {
		perror("timer");
		return 1;
	}
	unsigned x = 1;
	for (;;)
		churn(&x);
}

typedef int (*totals_fn)(void *);

/* Samples the runtime took so far, or -1 when it is absent (the totals
 * struct starts with five doubles, then uint64_t samples). */
static long samples(void)
{
	totals_fn f;
	void *sym = dlsym(RTLD_DEFAULT, "ap_runtime_get_totals");
	if (!sym)
		return -1;
	memcpy(&f, &sym, sizeof f);
	unsigned char tot[256];
	if (f(tot) != 0)
		return -1;
	uint64_t s;
	memcpy(&s, tot + 5 * sizeof(double), sizeof s);
	return (long)s;
}

static int run_jump(int n)
{
	static volatile unsigned x = 1;
	handle(SIGALRM, on_alarm_jump);
	sigsetjmp(env, 1);
	if (jumps < n) {
		arm(50);
		for (;;) {
			unsigned y = x;
			churn(&y);
			x = y;
		}
	}
	arm(0);
	long before = samples();
	unsigned y = x;
	for (int i = 0; i < 1000; i++)
		churn(&y);
	long after = samples();
	if (before >= 0 && after < before + 1000) {
		fprintf(stderr, "after %d jumps: %ld of 1000 mallocs sampled\n", n,
			after - before);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rc;
	dl_iterate_phdr(libc_cb, NULL);
	if (argc == 3 && strcmp(argv[1], "free") == 0)
		rc = run_free(atoi(argv[2]));
	else if (argc == 3 && strcmp(argv[1], "exit") == 0)
		rc = run_exit(atol(argv[2]));
	else if (argc == 3 && strcmp(argv[1], "jump") == 0)
		rc = run_jump(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: sig_reentry free N | exit USEC | jump N\n");
		return 2;
	}
	if (rc == 0)
		printf("ok\n");
	return rc;
}
