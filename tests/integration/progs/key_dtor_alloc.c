/*
 * key_dtor_alloc.c: threads whose thread-specific data destructor
 * allocates. The key is made after the runtime's own (so with a higher
 * index), so glibc runs its destructor after the runtime's, which has
 * given the thread's capture buffers back by then.
 *
 *   key_dtor_alloc [THREADS]   runs THREADS threads (default 2000) one
 *                              after another; prints "ok", how much the
 *                              process's address space grew in kB
 *                              ("vmsize KB"), and "dtor_alloc BYTES".
 */
#include <pthread.h>

#include "proc_status.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DTOR_BLOCK 64

static pthread_key_t key;
static void *volatile sink;

__attribute__((noinline)) static void dtor_alloc(void)
{
	sink = malloc(DTOR_BLOCK);
	free(sink);
}

static void dtor(void *v)
{
	free(v);
	dtor_alloc();
}

static void *run(void *a)
{
	(void)a;
	if (pthread_setspecific(key, malloc(32)) != 0)
		return (void *)1;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	if (pthread_key_create(&key, dtor) != 0)
		return 1;
	long before = proc_status_kb("VmSize:");
	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *r;
		if (pthread_create(&t, NULL, run, NULL) != 0 || pthread_join(t, &r) != 0 || r)
			return 1;
	}
	printf("ok\nvmsize %ld\ndtor_alloc %d\n", proc_status_kb("VmSize:") - before, n * DTOR_BLOCK);
	return 0;
}
