/*
 * stress_threads.c: 16 threads hammering the allocator with cross-thread
 * frees, for the runtime's integration tests.
 *
 * Each round starts NTHREADS threads. Thread i allocates blocks of mixed
 * sizes and entry points (malloc, calloc, realloc growth, posix_memalign,
 * aligned_alloc; mostly small, some above glibc's mmap threshold), writes a
 * pattern into them and passes them through a bounded mailbox to thread
 * i+1, which checks the pattern and frees them. Some blocks outlive their
 * thread: they are handed to main and freed after the join, when the
 * allocating thread's TLS is gone, and a pthread key destructor frees a
 * block during thread exit. Everything depends only on the thread index,
 * so the output (a checksum) is the same on every run, profiled or not.
 *
 * Usage: stress_threads [ROUNDS] [OPS_PER_THREAD]   (default 4, 20000)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 16
#define MAILBOX 64
#define ORPHANS 32

struct mailbox {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	void *slot[MAILBOX];
	size_t size[MAILBOX];
	int head, count, closed;
};

struct worker {
	int index;
	long ops;
	struct mailbox *in, *out;
	uint64_t checksum;
	void *orphans[ORPHANS];
	size_t orphan_size[ORPHANS];
};

static pthread_key_t exit_key;

static void die(const char *what)
{
	fprintf(stderr, "stress_threads: %s\n", what);
	exit(2);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static unsigned char pattern(size_t size)
{
	return (unsigned char)(size * 131u >> 3);
}

/* Allocate a block of n bytes through one of several entry points. */
static void *allocate(uint64_t r, size_t n)
{
	void *p = NULL;
	switch (r % 8) {
	case 0:
		p = calloc(1, n);
		break;
	case 1:
		if (posix_memalign(&p, 64, n))
			p = NULL;
		break;
	case 2:
		p = aligned_alloc(32, (n + 31) & ~(size_t)31);
		break;
	case 3: { /* grow in two steps */
		void *q = malloc(n / 2 + 1);
		if (!q)
			die("malloc failed");
		memset(q, 1, n / 2 + 1);
		p = realloc(q, n);
		break;
	}
	default:
		p = malloc(n);
	}
	if (!p)
		die("allocation failed");
	memset(p, pattern(n), n);
	return p;
}

static uint64_t consume(void *p, size_t n)
{
	const unsigned char *c = p;
	if (c[0] != pattern(n) || c[n - 1] != pattern(n))
		die("block corrupted");
	free(p);
	return n;
}

/* Free whatever the neighbour sent; block only when wait is set. */
static uint64_t drain(struct mailbox *m, int wait)
{
	uint64_t sum = 0;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (m->count) {
			void *p = m->slot[m->head];
			size_t n = m->size[m->head];
			m->head = (m->head + 1) % MAILBOX;
			m->count--;
			pthread_cond_broadcast(&m->cv);
			pthread_mutex_unlock(&m->lock);
			sum += consume(p, n);
			pthread_mutex_lock(&m->lock);
		}
		if (!wait || m->closed)
			break;
		pthread_cond_wait(&m->cv, &m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return sum;
}

/*
 * Hand a block to the neighbour. While its mailbox is full, keep draining
 * our own, so a ring of full mailboxes cannot deadlock.
 */
static void post(struct worker *w, void *p, size_t n)
{
	struct mailbox *m = w->out;
	pthread_mutex_lock(&m->lock);
	while (m->count == MAILBOX) {
		pthread_mutex_unlock(&m->lock);
		w->checksum += drain(w->in, 0);
		sched_yield();
		pthread_mutex_lock(&m->lock);
	}
	m->slot[(m->head + m->count) % MAILBOX] = p;
	m->size[(m->head + m->count) % MAILBOX] = n;
	m->count++;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->lock);
}

static void close_box(struct mailbox *m)
{
	pthread_mutex_lock(&m->lock);
	m->closed = 1;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->lock);
}

static void free_at_exit(void *p)
{
	free(p);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t s = 0x9e3779b97f4a7c15u ^ (uint64_t)(w->index + 1) * 0x100000001b3u;
	void *mine = malloc(100 + (size_t)w->index);
	if (!mine)
		die("malloc failed");
	pthread_setspecific(exit_key, mine); /* freed by the key destructor */
	for (long i = 0; i < w->ops; i++) {
		uint64_t r = next(&s);
		size_t n = r % 100 < 97 ? 8 + r % 512 : 4096 + r % (300 * 1024);
		void *p = allocate(r >> 20, n);
		if (i < ORPHANS) {
			w->orphans[i] = p;
			w->orphan_size[i] = n;
		} else if (r % 3 == 0) {
			w->checksum += consume(p, n); /* freed by its own thread */
		} else {
			post(w, p, n);
		}
		if (i % 16 == 0)
			w->checksum += drain(w->in, 0);
	}
	close_box(w->out);
	w->checksum += drain(w->in, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 4;
	long ops = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
	if (rounds < 1 || ops < ORPHANS)
		die("usage: stress_threads [ROUNDS>=1] [OPS>=32]");
	if (pthread_key_create(&exit_key, free_at_exit))
		die("pthread_key_create failed");
	uint64_t total = 0;
	static struct mailbox box[NTHREADS];
	static struct worker w[NTHREADS];
	for (long r = 0; r < rounds; r++) {
		pthread_t t[NTHREADS];
		for (int i = 0; i < NTHREADS; i++) {
			memset(&box[i], 0, sizeof box[i]);
			pthread_mutex_init(&box[i].lock, NULL);
			pthread_cond_init(&box[i].cv, NULL);
		}
		for (int i = 0; i < NTHREADS; i++) {
			w[i] = (struct worker){.index = i, .ops = ops,
					       .in = &box[i],
					       .out = &box[(i + 1) % NTHREADS]};
			if (pthread_create(&t[i], NULL, work, &w[i]))
				die("pthread_create failed");
		}
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < NTHREADS; i++) {
			total += w[i].checksum;
			/* freed after the allocating thread has exited */
			for (int k = 0; k < ORPHANS; k++)
				total += consume(w[i].orphans[k], w[i].orphan_size[k]);
			pthread_mutex_destroy(&box[i].lock);
			pthread_cond_destroy(&box[i].cv);
		}
	}
	printf("stress_threads: %d threads x %ld rounds x %ld ops, %llu bytes "
	       "checked\n", NTHREADS, rounds, ops, (unsigned long long)total);
	return 0;
}
