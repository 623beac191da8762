/*
 * getattr_threads.c: threads that ask for their own attributes first
 * thing, as Java's virtual machine (and Rust's standard library, and V8)
 * starts every thread: pthread_getattr_np(pthread_self()), which in glibc
 * allocates while holding the thread's own lock. Then each allocates
 * from thread_work. The main thread asks too (glibc reads
 * /proc/self/maps for it, with stdio).
 *
 *   getattr_threads     prints "ok" and, per function, "FUNCTION BYTES"
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define BLOCK 1000

static void *volatile keep[THREADS];

static size_t own_stack_size(void)
{
	pthread_attr_t attr;
	size_t size = 0;
	void *addr;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return 0;
	if (pthread_attr_getstack(&attr, &addr, &size) != 0)
		size = 0;
	pthread_attr_destroy(&attr);
	return size;
}

__attribute__((noinline)) static void thread_work(int i)
{
	keep[i] = malloc(BLOCK);
	if (keep[i])
		memset(keep[i], i, BLOCK);
}

static void *thread_main(void *arg)
{
	int i = (int)(intptr_t)arg;
	if (own_stack_size() == 0)
		return (void *)1;
	thread_work(i);
	return NULL;
}

int main(void)
{
	if (own_stack_size() == 0) {
		fprintf(stderr, "pthread_getattr_np failed on the main thread\n");
		return 1;
	}
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i) != 0)
			return 1;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		if (pthread_join(t[i], &r) != 0 || r != NULL || !keep[i]) {
			fprintf(stderr, "thread %d failed\n", i);
			return 1;
		}
	}
	printf("ok\nthread_work %d\n", THREADS * BLOCK);
	return 0;
}
