/*
 * main_pthread_exit.c: a main thread that ends with pthread_exit while
 * its workers go on; the process ends, with status 0, when the last of
 * them does. Each worker allocates from worker_alloc, keeps some blocks
 * and ends after a different pause.
 *
 *   main_pthread_exit      prints "ok" and "worker_alloc BYTES"
 */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define ALLOCS 1000

static void *volatile keep[WORKERS][ALLOCS / 10];

__attribute__((noinline)) static void *worker_alloc(size_t n)
{
	return malloc(n);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < ALLOCS; i++) {
		void *p = worker_alloc(1000 + (size_t)id);
		if (!p)
			abort();
		if (i % 10 == 0)
			keep[id][i / 10] = p;
		else
			free(p);
	}
	struct timespec pause = { 0, 50000000L * (id + 1) };
	nanosleep(&pause, NULL);
	return NULL;
}

int main(void)
{
	long total = 0;
	for (long i = 0; i < WORKERS; i++)
		total += ALLOCS * (1000 + i);
	/* Printed first: the process ends in a worker's thread. */
	printf("ok\nworker_alloc %ld\n", total);
	fflush(stdout);
	for (long i = 0; i < WORKERS; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, (void *)i) != 0 || pthread_detach(t) != 0)
			return 1;
	}
	pthread_exit(NULL);
}
