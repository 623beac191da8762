/*
 * xthread_bench.c: a multi-threaded workload whose blocks are freed by a
 * different thread than the one that allocated them, for bench/suites/
 * compare.sh and accuracy.sh. It does not link any profiler; the suites
 * preload one.
 *
 * Usage: xthread_bench OPS PAIRS
 *
 * PAIRS producer/consumer thread pairs share OPS messages. Each producer
 * builds a message from four allocation sites with distinct size profiles
 * (so per-site accuracy can be checked on sites whose sampling behaviour
 * differs: always-small, mid-sized, rare and large, tiny strings) and hands
 * it to its consumer over a single-producer single-consumer ring; the
 * consumer keeps the last WINDOW messages alive, then frees them, so every
 * free crosses threads and the heap holds a moving window of live blocks.
 * The sequence of sizes per site is a fixed function of OPS and PAIRS
 * (xorshift seeded by the producer's index), so every run allocates the same
 * bytes from the same sites: a rate=1 run gives the truth for sampled ones.
 *
 * Prints one line of key=value pairs like malloc_workload_bench: mode,
 * threads, ops, seconds (CLOCK_MONOTONIC around the threads' work),
 * maxrss_kb, checksum.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lib/bench_util.h"

#define RING 1024   /* messages in flight per pair (a power of two) */
#define WINDOW 2048 /* messages a consumer keeps alive before freeing */
#define MAX_PAIRS 32

struct msg {
	unsigned char *payload;
	unsigned char *buffer; /* NULL for most messages */
	char *name;
	size_t payload_len;
};

struct pair {
	struct msg *_Atomic ring[RING];
	_Atomic uint64_t head; /* written by the producer */
	_Atomic uint64_t tail; /* written by the consumer */
	long ops;
	int id;
	uint64_t checksum;
};

#define PROG "xthread_bench"
#define xmalloc(n) bench_xmalloc(PROG, (n))

/* The four sites. noinline keeps each a distinct frame for the profilers. */
__attribute__((noinline)) static struct msg *make_header(void)
{
	struct msg *m = xmalloc(sizeof *m);
	memset(m, 0, sizeof *m);
	return m;
}

__attribute__((noinline)) static unsigned char *make_payload(size_t n)
{
	unsigned char *p = xmalloc(n);
	p[0] = (unsigned char)n;
	p[n - 1] = 1;
	return p;
}

__attribute__((noinline)) static unsigned char *make_buffer(size_t n)
{
	unsigned char *p = xmalloc(n);
	p[0] = 7;
	p[n - 1] = (unsigned char)(n >> 8);
	return p;
}

__attribute__((noinline)) static char *make_name(uint64_t r)
{
	size_t n = 8 + (size_t)(r % 33);
	char *s = xmalloc(n);
	memset(s, 'a' + (int)(r % 26), n - 1);
	s[n - 1] = 0;
	return s;
}

static void *producer(void *arg)
{
	struct pair *p = arg;
	uint64_t s = 0x9e3779b97f4a7c15u * (uint64_t)(p->id + 1) + 12345u;
	for (long i = 0; i < p->ops; i++) {
		uint64_t r = bench_xorshift(&s);
		struct msg *m = make_header();
		m->payload_len = 64 + (size_t)(r % 4033); /* 64..4096 B */
		m->payload = make_payload(m->payload_len);
		if ((r >> 20) % 100 == 0) /* 1%: 16..256 KiB */
			m->buffer = make_buffer(16384 + (size_t)((r >> 27) % 245761));
		m->name = make_name(r >> 40);
		uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);
		while (h - atomic_load_explicit(&p->tail, memory_order_acquire) >= RING)
			sched_yield();
		atomic_store_explicit(&p->ring[h % RING], m, memory_order_relaxed);
		atomic_store_explicit(&p->head, h + 1, memory_order_release);
	}
	return NULL;
}

static void free_msg(struct msg *m, uint64_t *sum)
{
	*sum += m->payload[0] + (uint64_t)m->name[0];
	free(m->payload);
	free(m->buffer);
	free(m->name);
	free(m);
}

static void *consumer(void *arg)
{
	struct pair *p = arg;
	struct msg **window = calloc(WINDOW, sizeof *window);
	if (!window) {
		fprintf(stderr, PROG ": out of memory\n");
		exit(2);
	}
	for (long i = 0; i < p->ops; i++) {
		uint64_t t = atomic_load_explicit(&p->tail, memory_order_relaxed);
		while (atomic_load_explicit(&p->head, memory_order_acquire) == t)
			sched_yield();
		struct msg *m = atomic_load_explicit(&p->ring[t % RING], memory_order_relaxed);
		atomic_store_explicit(&p->tail, t + 1, memory_order_release);
		size_t slot = (size_t)i % WINDOW;
		if (window[slot])
			free_msg(window[slot], &p->checksum);
		window[slot] = m;
	}
	for (size_t k = 0; k < WINDOW; k++)
		if (window[k])
			free_msg(window[k], &p->checksum);
	free(window);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: xthread_bench OPS PAIRS\n");
		return 1;
	}
	long ops = bench_arg_long(PROG, argv[1], 1, 1L << 40, "OPS");
	int pairs = (int)bench_arg_long(PROG, argv[2], 1, MAX_PAIRS, "PAIRS");
	struct pair *ps = calloc((size_t)pairs, sizeof *ps);
	pthread_t th[2 * MAX_PAIRS];
	if (!ps) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	double t0 = bench_now();
	for (int i = 0; i < pairs; i++) {
		ps[i].id = i;
		ps[i].ops = ops / pairs + (i < ops % pairs);
		if (pthread_create(&th[2 * i], NULL, producer, &ps[i]) ||
		    pthread_create(&th[2 * i + 1], NULL, consumer, &ps[i])) {
			fprintf(stderr, PROG ": pthread_create failed\n");
			return 2;
		}
	}
	uint64_t sum = 0;
	for (int i = 0; i < 2 * pairs; i++)
		pthread_join(th[i], NULL);
	double secs = bench_now() - t0;
	for (int i = 0; i < pairs; i++)
		sum += ps[i].checksum;
	free(ps);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("mode=xthread threads=%d ops=%ld seconds=%.6f maxrss_kb=%ld checksum=%llu\n",
	       2 * pairs, ops, secs, ru.ru_maxrss, (unsigned long long)sum);
	return 0;
}
