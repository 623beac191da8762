/*
 * dormant.c: allocations before and after sampling is turned on in a
 * runtime started with rate=off (tests/integration/preload_dormant_test.sh).
 *
 * Usage: dormant MODE [WAIT_MS]
 *   MODE signal    raise SIGUSR2 itself (the runtime's start_on=SIGUSR2)
 *   MODE wait      let someone else start sampling (an HTTP POST)
 *   MODE waitstop  as wait, then after printing, wait until sampling is
 *                  off again and make AFTER_N more in after_stop()
 *   MODE thread    as signal, but a second thread makes the allocations
 *                  (its counter parked while dormant must be re-armed)
 * Then: wait (at most WAIT_MS, default 20000) until ap_runtime_get_totals
 * reports a rate other than 0, make AFTER_N allocations of AFTER_SIZE bytes
 * in after_start(), print "after N BYTES" and exit 0. Before that,
 * before_start() makes BEFORE_N allocations that must not be in the
 * profile. Every block is kept until exit. Exit 3: sampling never turned
 * on; 4: the runtime is not there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdatomic.h>
#include <stdint.h>

/* The runtime's API (include/allocprof/runtime.h), weak: NULL unpreloaded. */
typedef struct ap_runtime_totals {
	double alloc_bytes, alloc_objects, inuse_bytes, inuse_objects;
	double peak_inuse_bytes;
	uint64_t samples, rate;
} ap_runtime_totals;
__attribute__((weak)) int ap_runtime_get_totals(ap_runtime_totals *out);

#define BEFORE_N 100
#define BEFORE_SIZE 1000
#define AFTER_N 37
#define AFTER_SIZE 777

static void *keep[BEFORE_N + 2 * AFTER_N];

__attribute__((noinline)) static void before_start(void)
{
	for (int i = 0; i < BEFORE_N; i++)
		keep[i] = malloc(BEFORE_SIZE);
}

__attribute__((noinline)) static void after_start(void)
{
	for (int i = 0; i < AFTER_N; i++)
		keep[BEFORE_N + i] = malloc(AFTER_SIZE);
}

__attribute__((noinline)) static void after_stop(void)
{
	for (int i = 0; i < AFTER_N; i++)
		keep[BEFORE_N + AFTER_N + i] = malloc(AFTER_SIZE);
}

static long wait_ms = 20000;

static int wait_on(int on)
{
	struct timespec ms = { 0, 1000000 };
	for (long i = 0; i < wait_ms; i++) {
		ap_runtime_totals t;
		if (ap_runtime_get_totals(&t) == 0 && (t.rate != 0) == on)
			return 0;
		nanosleep(&ms, NULL);
	}
	return -1;
}

static atomic_int worker_state; /* 1: before_start done; 2: finished */
static int worker_rc;

static void *worker(void *arg)
{
	(void)arg;
	before_start();
	atomic_store(&worker_state, 1);
	worker_rc = wait_on(1) == 0 ? 0 : 3;
	if (worker_rc == 0)
		after_start();
	atomic_store(&worker_state, 2);
	return NULL;
}

/* The thread mode: the worker allocates, this thread sends the signal. */
static int thread_mode(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 2;
	struct timespec ms = { 0, 1000000 };
	while (atomic_load(&worker_state) == 0)
		nanosleep(&ms, NULL);
	raise(SIGUSR2);
	pthread_join(t, NULL);
	if (worker_rc == 0)
		printf("after %d %d\n", AFTER_N, AFTER_N * AFTER_SIZE);
	return worker_rc;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!ap_runtime_get_totals)
		return 4;
	if (argc > 2)
		wait_ms = atol(argv[2]);
	if (strcmp(argv[1], "thread") == 0)
		return thread_mode();
	before_start();
	ap_runtime_totals t;
	if (ap_runtime_get_totals(&t) != 0 || t.rate != 0 || t.samples != 0) {
		fprintf(stderr, "dormant: sampling on before the start\n");
		return 5;
	}
	if (strcmp(argv[1], "signal") == 0)
		raise(SIGUSR2);
	else
		printf("ready\n");
	fflush(stdout);
	if (wait_on(1) != 0)
		return 3;
	after_start();
	printf("after %d %d\n", AFTER_N, AFTER_N * AFTER_SIZE);
	fflush(stdout);
	if (strcmp(argv[1], "waitstop") == 0) {
		if (wait_on(0) != 0)
			return 3;
		after_stop();
		printf("stopped\n");
	}
	for (int i = 0; i < BEFORE_N + 2 * AFTER_N; i++)
		free(keep[i]);
	return 0;
}
