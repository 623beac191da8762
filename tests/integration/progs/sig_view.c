/*
 * sig_view.c: the program's view of its signal handlers and their
 * delivery, for tests/integration/preload_signals_test.sh (the runtime
 * wraps every handler in a trampoline, src/preload/sigmask.c).
 *
 * Usage:
 *   sig_view view       installs handlers of each kind (plain, SA_SIGINFO,
 *                       flags, sa_mask, SA_RESETHAND, signal()) and checks
 *                       that sigaction and signal report them back exactly
 *                       as set, and that each runs with its own arguments
 *   sig_view queue N    a second thread queues N real-time signals with
 *                       values 0..N-1 to the main thread (each after the
 *                       previous one arrived) while main mallocs and frees;
 *                       the handler must see every value, in order, with
 *                       si_code SI_QUEUE
 *   sig_view count N    installs a SIGUSR1 handler, then N malloc(64) +
 *                       free pairs (the test counts the system calls)
 * Prints "ok" and exits 0, or one line on stderr and exits 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got_plain, got_info, got_reset;
static atomic_long next_value, bad;
static void *volatile sink;

static void on_plain(int sig) { got_plain = sig; }
static void on_reset(int sig) { got_reset = sig; }

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si && si->si_code == SI_QUEUE && si->si_value.sival_int == 77)
		got_info = sig;
}

static void on_queued(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	long want = atomic_load(&next_value);
	if (si->si_code != SI_QUEUE || si->si_value.sival_int != want)
		atomic_fetch_add(&bad, 1);
	atomic_store(&next_value, want + 1);
}

static int die(const char *what)
{
	fprintf(stderr, "sig_view: %s\n", what);
	return 1;
}

/* Flags as the program set them (glibc adds SA_RESTORER on the way in). */
#define SHOWN(f) ((f) & ~0x04000000)

static int check(int sig, const struct sigaction *set)
{
	struct sigaction got;
	if (sigaction(sig, NULL, &got) != 0)
		return 1;
	return got.sa_handler != set->sa_handler ||
	       SHOWN(got.sa_flags) != SHOWN(set->sa_flags) ||
	       sigismember(&got.sa_mask, SIGUSR2) != sigismember(&set->sa_mask, SIGUSR2) ||
	       sigismember(&got.sa_mask, SIGHUP) != sigismember(&set->sa_mask, SIGHUP);
}

static int view(void)
{
	struct sigaction a, b, c;
	memset(&a, 0, sizeof a);
	a.sa_handler = on_plain;
	a.sa_flags = SA_RESTART;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, SIGUSR2);
	memset(&b, 0, sizeof b);
	b.sa_sigaction = on_info;
	b.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&b.sa_mask);
	sigaddset(&b.sa_mask, SIGHUP);
	memset(&c, 0, sizeof c);
	c.sa_handler = on_reset;
	c.sa_flags = SA_RESETHAND;
	sigemptyset(&c.sa_mask);
	if (sigaction(SIGUSR1, &a, NULL) || sigaction(SIGRTMIN + 2, &b, NULL) ||
	    sigaction(SIGWINCH, &c, NULL))
		return die("sigaction failed");
	if (check(SIGUSR1, &a) || check(SIGRTMIN + 2, &b) || check(SIGWINCH, &c))
		return die("sigaction reports another action than the one set");
	struct sigaction prev;
	if (sigaction(SIGUSR1, &b, &prev) || check(SIGUSR1, &b) ||
	    prev.sa_handler != on_plain || sigaction(SIGUSR1, &a, NULL))
		return die("replacing a handler reports the wrong previous one");
	if (signal(SIGUSR2, on_plain) != SIG_DFL || signal(SIGUSR2, SIG_IGN) != on_plain ||
	    signal(SIGUSR2, SIG_DFL) != SIG_IGN)
		return die("signal() returns the wrong previous handler");
	raise(SIGUSR1);
	if (got_plain != SIGUSR1)
		return die("plain handler did not run");
	union sigval v = { .sival_int = 77 };
	sigqueue(getpid(), SIGRTMIN + 2, v);
	if (got_info != SIGRTMIN + 2)
		return die("SA_SIGINFO handler did not get its siginfo");
	raise(SIGWINCH);
	if (got_reset != SIGWINCH || sigaction(SIGWINCH, NULL, &prev) ||
	    prev.sa_handler != SIG_DFL)
		return die("SA_RESETHAND handler did not run once and reset");
	return 0;
}

static long total;
static pthread_t main_thread;

static void *sender(void *arg)
{
	(void)arg;
	for (long i = 0; i < total; i++) {
		union sigval v = { .sival_int = (int)i };
		pthread_sigqueue(main_thread, SIGRTMIN + 1, v);
		while (atomic_load(&next_value) <= i)
			usleep(10);
	}
	return NULL;
}

static int queue(long n)
{
	struct sigaction a;
	memset(&a, 0, sizeof a);
	a.sa_sigaction = on_queued;
	a.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&a.sa_mask);
	if (sigaction(SIGRTMIN + 1, &a, NULL))
		return die("sigaction failed");
	total = n;
	main_thread = pthread_self();
	pthread_t t;
	if (pthread_create(&t, NULL, sender, NULL))
		return die("pthread_create failed");
	while (atomic_load(&next_value) < n) {
		sink = malloc(64);
		free(sink);
	}
	pthread_join(t, NULL);
	if (atomic_load(&bad))
		return die("a queued signal arrived with the wrong siginfo or order");
	return 0;
}

static int count(long n)
{
	if (signal(SIGUSR1, on_plain) == SIG_ERR)
		return die("signal failed");
	for (long i = 0; i < n; i++) {
		sink = malloc(64);
		free(sink);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rc;
	if (argc == 2 && !strcmp(argv[1], "view"))
		rc = view();
	else if (argc == 3 && !strcmp(argv[1], "queue"))
		rc = queue(atol(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "count"))
		rc = count(atol(argv[2]));
	else
		return die("usage: sig_view view | queue N | count N");
	if (rc == 0)
		puts("ok");
	return rc;
}
