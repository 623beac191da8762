/*
 * demo.c: the program scripts/demo.sh profiles. It has no allocprof
 * dependency; it is an ordinary C program whose allocation sites are easy to
 * recognise in a report:
 *
 *   parse_number / parse_expr  a recursive-descent parser that builds many
 *                              small AST nodes and frees each tree;
 *   cache_get                  an LRU cache of medium (4-24 KiB) buffers;
 *   make_big_array             a few large arrays (1-8 MiB);
 *   submit_job / run_job       a pool of 4 worker threads: jobs are
 *                              allocated by the main thread and freed by the
 *                              workers, results the other way round;
 *   remember_session           a deliberate leak (tokens never freed).
 *
 * Everything is driven by a fixed-seed generator, so the work (and with a
 * fixed profiler seed, the profile) is the same on every run. It prints one
 * checksum line and finishes in about a second.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* xorshift64*: deterministic, good enough to vary sizes and shapes. */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1du;
}

/*
 * Allocation failure check. malloc is called at each site itself (not inside
 * a wrapper) so that the site, not a wrapper, is the allocating function.
 */
static void *checked(void *p, size_t n)
{
	if (!p) {
		fprintf(stderr, "demo: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* ---- parser: many small nodes ------------------------------------------ */

struct node {
	char op; /* 0 = number */
	long value;
	struct node *left, *right;
};

struct parser {
	const char *s;
};

static struct node *parse_expr(struct parser *p);

static struct node *parse_number(struct parser *p)
{
	struct node *n = checked(malloc(sizeof *n), sizeof *n);
	n->op = 0;
	n->left = n->right = NULL;
	n->value = 0;
	while (*p->s >= '0' && *p->s <= '9')
		n->value = n->value * 10 + (*p->s++ - '0');
	return n;
}

static struct node *parse_factor(struct parser *p)
{
	if (*p->s == '(') {
		p->s++;
		struct node *n = parse_expr(p);
		if (*p->s == ')')
			p->s++;
		return n;
	}
	return parse_number(p);
}

static struct node *parse_expr(struct parser *p)
{
	struct node *left = parse_factor(p);
	while (*p->s == '+' || *p->s == '*' || *p->s == '-') {
		struct node *n = checked(malloc(sizeof *n), sizeof *n);
		n->op = *p->s++;
		n->left = left;
		n->right = parse_factor(p);
		left = n;
	}
	return left;
}

static long eval_and_free(struct node *n)
{
	long v;
	if (!n->op)
		v = n->value;
	else {
		long a = eval_and_free(n->left), b = eval_and_free(n->right);
		v = n->op == '+' ? a + b : n->op == '-' ? a - b : (a * b) % 1000003;
	}
	free(n);
	return v;
}

/* Write a random expression of about len characters into buf. */
static size_t gen_expr(char *buf, size_t cap, int depth)
{
	size_t n = 0;
	int terms = 2 + (int)(rng() % 6);
	for (int t = 0; t < terms && n + 32 < cap; t++) {
		if (t)
			buf[n++] = "+*-"[rng() % 3];
		if (depth < 4 && rng() % 4 == 0) {
			buf[n++] = '(';
			n += gen_expr(buf + n, cap - n - 1, depth + 1);
			buf[n++] = ')';
		} else {
			n += (size_t)snprintf(buf + n, cap - n, "%u",
					      (unsigned)(rng() % 1000));
		}
	}
	buf[n] = 0;
	return n;
}

static long run_parser(int rounds)
{
	char text[4096];
	long sum = 0;
	for (int i = 0; i < rounds; i++) {
		gen_expr(text, sizeof text, 0);
		struct parser p = {text};
		sum += eval_and_free(parse_expr(&p));
	}
	return sum;
}

/* ---- cache of medium buffers ------------------------------------------- */

#define CACHE_SLOTS 64

struct cache_entry {
	unsigned key;
	size_t len;
	unsigned char *data;
	uint64_t last_use;
};

static struct cache_entry cache[CACHE_SLOTS];
static uint64_t cache_clock;

static unsigned char *cache_get(unsigned key)
{
	struct cache_entry *victim = &cache[0];
	for (int i = 0; i < CACHE_SLOTS; i++) {
		if (cache[i].data && cache[i].key == key) {
			cache[i].last_use = ++cache_clock;
			return cache[i].data;
		}
		if (cache[i].last_use < victim->last_use)
			victim = &cache[i];
	}
	free(victim->data);
	victim->key = key;
	victim->len = 4096 + (size_t)(rng() % (20 * 1024));
	victim->data = checked(malloc(victim->len), victim->len);
	memset(victim->data, (int)(key & 0xff), victim->len);
	victim->last_use = ++cache_clock;
	return victim->data;
}

static long run_cache(int lookups)
{
	long sum = 0;
	for (int i = 0; i < lookups; i++)
		sum += cache_get((unsigned)(rng() % 256))[0];
	return sum;
}

/* ---- a few big arrays -------------------------------------------------- */

static double *make_big_array(size_t n)
{
	double *a = checked(calloc(n, sizeof *a), n * sizeof *a);
	for (size_t i = 0; i < n; i += 512)
		a[i] = (double)i;
	return a;
}

/* ---- worker pool with cross-thread frees -------------------------------- */

#define NWORKERS 4
#define QUEUE_CAP 256

struct job {
	size_t len;
	unsigned char payload[];
};

struct result {
	struct result *next;
	unsigned long sum;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static struct job *queue[QUEUE_CAP];
static int q_head, q_count, pool_done;
static struct result *results;

static void submit_job(size_t len)
{
	struct job *j = checked(malloc(sizeof *j + len), sizeof *j + len);
	j->len = len;
	for (size_t i = 0; i < len; i++)
		j->payload[i] = (unsigned char)(i * 31);
	pthread_mutex_lock(&pool_lock);
	while (q_count == QUEUE_CAP)
		pthread_cond_wait(&pool_cv, &pool_lock);
	queue[(q_head + q_count++) % QUEUE_CAP] = j;
	pthread_cond_broadcast(&pool_cv);
	pthread_mutex_unlock(&pool_lock);
}

static struct result *run_job(struct job *j)
{
	struct result *r = checked(malloc(sizeof *r), sizeof *r);
	r->sum = 0;
	for (size_t i = 0; i < j->len; i++)
		r->sum += j->payload[i];
	free(j); /* freed on a thread other than the one that allocated it */
	return r;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&pool_lock);
		while (!q_count && !pool_done)
			pthread_cond_wait(&pool_cv, &pool_lock);
		if (!q_count) {
			pthread_mutex_unlock(&pool_lock);
			return NULL;
		}
		struct job *j = queue[q_head];
		q_head = (q_head + 1) % QUEUE_CAP;
		q_count--;
		pthread_cond_broadcast(&pool_cv);
		pthread_mutex_unlock(&pool_lock);
		struct result *r = run_job(j);
		pthread_mutex_lock(&pool_lock);
		r->next = results;
		results = r;
		pthread_mutex_unlock(&pool_lock);
	}
}

static unsigned long run_pool(int njobs)
{
	pthread_t t[NWORKERS];
	for (int i = 0; i < NWORKERS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL)) {
			fprintf(stderr, "demo: cannot create worker thread\n");
			exit(1);
		}
	for (int i = 0; i < njobs; i++)
		submit_job(256 + (size_t)(rng() % 4096));
	pthread_mutex_lock(&pool_lock);
	pool_done = 1;
	pthread_cond_broadcast(&pool_cv);
	pthread_mutex_unlock(&pool_lock);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(t[i], NULL);
	unsigned long sum = 0;
	while (results) { /* results allocated by workers, freed here */
		struct result *r = results;
		results = r->next;
		sum += r->sum;
		free(r);
	}
	return sum;
}

/* ---- a deliberate leak ------------------------------------------------- */

static char *remember_session(unsigned id)
{
	char *token = checked(malloc(512), 512);
	snprintf(token, 512, "session-%08x", id);
	return token; /* the caller drops it: never freed */
}

/* Reachable from a global: live at exit, but not a leak. */
static double *big[4];

int main(void)
{
	long parsed = run_parser(80000);
	long cached = run_cache(300000);
	double bigsum = 0;
	for (int i = 0; i < 4; i++) {
		big[i] = make_big_array((size_t)(1u << 17) << i); /* 1..8 MiB */
		bigsum += big[i][512];
	}
	unsigned long pooled = run_pool(200000);
	unsigned long leaked = 0;
	for (unsigned i = 0; i < 4000; i++)
		leaked += (unsigned char)remember_session(i)[8];
	free(big[0]);
	free(big[1]); /* big[2], big[3] stay live until exit */
	printf("demo: parser %ld cache %ld big %.0f pool %lu leak %lu\n",
	       parsed, cached, bigsum, pooled, leaked);
	return 0;
}
