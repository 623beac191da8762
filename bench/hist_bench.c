/*
 * hist_bench.c: cost of recording into ap_hist, measured against the
 * practical limit, a plain counts[i]++ over the same value stream.
 *
 *   hist_bench time ROUNDS   wall-clock ns per record; every round runs all
 *                            variants back to back (side by side), and the
 *                            medians over rounds are printed as JSON
 *   hist_bench count MODE N  N records of one variant and nothing else, for
 *                            instruction counts under callgrind (the suite
 *                            subtracts two N to cancel the setup)
 *   hist_bench memory        bytes held at sigbits 5 for values spread over
 *                            1e3..1e10
 *
 * Variants: limit_index (counts[i]++ with i precomputed), limit_key
 * (counts[key(v)]++ on a dense array, key computed inline: a histogram
 * with no lazy allocation, no min/max/sum), limit_call (the same behind an
 * out-of-line call, as any library's record function is), recorder
 * (per-thread recorder, ap_hist_recorder_add: a call into the library),
 * recorder_inline (the same through ap_hist_recorder_add_inline, compiled
 * into the loop), batch (ap_hist_recorder_add_many over the stream), shared
 * (atomic path, one thread), shared2 (atomic path, two threads on the same
 * histogram, ns per record per thread), recorder2 (two threads, one
 * recorder each, inline path).
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocprof/hist_inline.h"
#include "hist_internal.h"

#define SIGBITS 5
#define STREAM (1u << 14) /* 128 KiB of values: stays in L2 */
#define REPS 512          /* 8M records per measurement */

static uint64_t stream[STREAM];
static uint32_t index_of[STREAM];
static uint64_t dense[(65 - SIGBITS) << SIGBITS];

/* Allocation-size-like values: lognormal, median 256, sigma 1.5. */
static void make_stream(void)
{
	uint64_t x = 0x853c49e6748fea9bu;
	for (unsigned i = 0; i < STREAM; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		double u1 = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
		x = x * 6364136223846793005u + 1442695040888963407u;
		double u2 = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
		double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
		stream[i] = (uint64_t)exp(log(256.0) + 1.5 * z);
		index_of[i] = hist_key(SIGBITS, stream[i]);
	}
}

/* CPU time of the calling thread: on this shared machine wall time would
 * also count the time other jobs hold the core. */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void run_limit_index(uint64_t reps)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			dense[index_of[i]]++;
}

static void run_limit_key(uint64_t reps)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			dense[hist_key(SIGBITS, stream[i])]++;
}

/* The call must stay a real call, as into a library (GCC's noipa also
 * stops it from seeing through the call; clang has only noinline). */
#if defined(__clang__)
#define NOT_INLINED __attribute__((noinline))
#else
#define NOT_INLINED __attribute__((noipa))
#endif
static NOT_INLINED int limit_record(uint64_t *counts, uint64_t v)
{
	counts[hist_key(SIGBITS, v)]++;
	return 0;
}

static void run_limit_call(uint64_t reps)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			limit_record(dense, stream[i]);
}

static void run_recorder(ap_hist_recorder *rec, uint64_t reps, unsigned off)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			ap_hist_recorder_add(rec, stream[(i + off) % STREAM]);
}

static void run_recorder_inline(ap_hist_recorder *rec, uint64_t reps,
				unsigned off)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			ap_hist_recorder_add_inline(rec, stream[(i + off) % STREAM]);
}

static void run_batch(ap_hist_recorder *rec, uint64_t reps)
{
	for (uint64_t r = 0; r < reps; r++)
		ap_hist_recorder_add_many(rec, stream, STREAM);
}

static void run_shared(ap_hist *h, uint64_t reps, unsigned off)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			ap_hist_add(h, stream[(i + off) % STREAM]);
}

struct worker {
	ap_hist *h;
	bool use_recorder;
	unsigned off;
	pthread_barrier_t *start;
	double ns, wall0, wall1;
};

static double wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Fraction of the 2-thread run during which both threads were running
 * their loops (wall clock): how much contention the figure can contain. */
static double last_overlap;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	ap_hist_recorder *rec = NULL;
	if (w->use_recorder && ap_hist_recorder_get(w->h, &rec))
		abort();
	pthread_barrier_wait(w->start);
	w->wall0 = wall_ns();
	double t0 = now_ns();
	if (rec)
		run_recorder_inline(rec, REPS, w->off);
	else
		run_shared(w->h, REPS, w->off);
	w->ns = now_ns() - t0;
	w->wall1 = wall_ns();
	ap_hist_recorder_release(rec);
	return NULL;
}

/* Two threads at once; ns per record per thread (the slower thread). */
static double two_threads(bool use_recorder)
{
	ap_hist *h;
	if (ap_hist_create(&h, SIGBITS, NULL))
		abort();
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, 2);
	struct worker w[2] = {
		{.h = h, .use_recorder = use_recorder, .off = 0, .start = &start},
		{.h = h, .use_recorder = use_recorder, .off = STREAM / 2,
		 .start = &start}};
	pthread_t t;
	pthread_create(&t, NULL, worker_main, &w[1]);
	worker_main(&w[0]);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&start);
	ap_hist_destroy(h);
	double ns = w[0].ns > w[1].ns ? w[0].ns : w[1].ns;
	double a = fmax(w[0].wall0, w[1].wall0), b = fmin(w[0].wall1, w[1].wall1);
	double span = fmax(w[0].wall1, w[1].wall1) - fmin(w[0].wall0, w[1].wall0);
	last_overlap = b > a && span > 0 ? (b - a) / span : 0;
	return ns / ((double)REPS * STREAM);
}

enum {
	LIMIT_INDEX, LIMIT_KEY, LIMIT_CALL, RECORDER, RECORDER_INLINE, BATCH,
	SHARED, SHARED2, RECORDER2, NV
};
static const char *const names[NV] = {
	"limit_index", "limit_key", "limit_call", "recorder", "recorder_inline",
	"batch", "shared", "shared2", "recorder2"};

static double measure(int v)
{
	if (v == SHARED2 || v == RECORDER2)
		return two_threads(v == RECORDER2);
	ap_hist *h;
	ap_hist_recorder *rec;
	if (ap_hist_create(&h, SIGBITS, NULL) || ap_hist_recorder_get(h, &rec))
		abort();
	/* Warm up: install the chunks, fault in the pages. */
	run_recorder(rec, 1, 0);
	run_shared(h, 1, 0);
	double t0 = now_ns();
	switch (v) {
	case LIMIT_INDEX: run_limit_index(REPS); break;
	case LIMIT_KEY: run_limit_key(REPS); break;
	case LIMIT_CALL: run_limit_call(REPS); break;
	case RECORDER: run_recorder(rec, REPS, 0); break;
	case RECORDER_INLINE: run_recorder_inline(rec, REPS, 0); break;
	case BATCH: run_batch(rec, REPS); break;
	default: run_shared(h, REPS, 0); break;
	}
	double ns = (now_ns() - t0) / ((double)REPS * STREAM);
	ap_hist_destroy(h);
	return ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *x, int n)
{
	qsort(x, (size_t)n, sizeof *x, cmp_double);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static int cmd_time(int rounds)
{
	enum { NR = 8 };
	double ns[NV][64], ratio[NR][64], overlap[64];
	for (int r = 0; r < rounds; r++) {
		for (int v = 0; v < NV; v++) {
			ns[v][r] = measure(v);
			if (v == SHARED2)
				overlap[r] = last_overlap;
		}
		/* Ratios within one round: both sides saw the same machine. */
		ratio[0][r] = ns[RECORDER][r] / ns[LIMIT_INDEX][r];
		ratio[1][r] = ns[RECORDER][r] / ns[LIMIT_KEY][r];
		ratio[2][r] = ns[SHARED][r] / ns[LIMIT_INDEX][r];
		ratio[3][r] = ns[SHARED2][r] / ns[SHARED][r];
		ratio[4][r] = ns[RECORDER][r] / ns[LIMIT_CALL][r];
		ratio[5][r] = ns[BATCH][r] / ns[LIMIT_KEY][r];
		ratio[6][r] = ns[RECORDER_INLINE][r] / ns[LIMIT_KEY][r];
		ratio[7][r] = ns[RECORDER_INLINE][r] / ns[LIMIT_INDEX][r];
	}
	printf("{\"rounds\":%d,\"records_per_run\":%u", rounds, REPS * STREAM);
	for (int v = 0; v < NV; v++)
		printf(",\"%s_ns\":%.3f", names[v], median(ns[v], rounds));
	static const char *const rn[NR] = {
		"recorder_over_limit_index", "recorder_over_limit_key",
		"shared_over_limit_index", "shared2_over_shared",
		"recorder_over_limit_call", "batch_over_limit_key",
		"recorder_inline_over_limit_key",
		"recorder_inline_over_limit_index"};
	for (int i = 0; i < NR; i++)
		printf(",\"%s\":%.3f", rn[i], median(ratio[i], rounds));
	printf(",\"shared2_overlap\":%.3f", median(overlap, rounds));
	uint64_t sink = 0;
	for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++)
		sink += dense[i];
	printf(",\"sink\":%llu}\n", (unsigned long long)sink);
	return 0;
}

static int cmd_count(const char *mode, uint64_t n)
{
	ap_hist *h;
	ap_hist_recorder *rec;
	if (ap_hist_create(&h, SIGBITS, NULL) || ap_hist_recorder_get(h, &rec))
		return 1;
	uint64_t sink = 0;
	if (!strcmp(mode, "recorder"))
		for (uint64_t i = 0; i < n; i++)
			ap_hist_recorder_add(rec, stream[i % STREAM]);
	else if (!strcmp(mode, "recorder_inline"))
		for (uint64_t i = 0; i < n; i++)
			ap_hist_recorder_add_inline(rec, stream[i % STREAM]);
	else if (!strcmp(mode, "batch"))
		for (uint64_t i = 0; i < n; i += STREAM)
			ap_hist_recorder_add_many(rec, stream,
						  n - i < STREAM ? n - i : STREAM);
	else if (!strcmp(mode, "shared"))
		for (uint64_t i = 0; i < n; i++)
			ap_hist_add(h, stream[i % STREAM]);
	else if (!strcmp(mode, "limit_call"))
		for (uint64_t i = 0; i < n; i++)
			limit_record(dense, stream[i % STREAM]);
	else if (!strcmp(mode, "limit_key"))
		for (uint64_t i = 0; i < n; i++)
			dense[hist_key(SIGBITS, stream[i % STREAM])]++;
	else
		for (uint64_t i = 0; i < n; i++)
			dense[index_of[i % STREAM]]++;
	for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++)
		sink += dense[i];
	ap_hist_destroy(h);
	return sink == UINT64_MAX; /* keep the loop observable */
}

static int cmd_memory(void)
{
	ap_hist *h;
	if (ap_hist_create(&h, SIGBITS, NULL))
		return 1;
	for (double v = 1e3; v <= 1e10; v *= 1.001)
		ap_hist_add(h, (uint64_t)v);
	printf("{\"sigbits\":%d,\"range\":\"1e3..1e10\",\"bytes\":%zu}\n",
	       SIGBITS, ap_hist_memory(h));
	ap_hist_destroy(h);
	return 0;
}

int main(int argc, char **argv)
{
	make_stream();
	if (argc == 3 && !strcmp(argv[1], "time")) {
		int rounds = atoi(argv[2]);
		return cmd_time(rounds < 1 ? 1 : rounds > 64 ? 64 : rounds);
	}
	if (argc == 4 && !strcmp(argv[1], "count"))
		return cmd_count(argv[2], strtoull(argv[3], NULL, 10));
	if (argc == 2 && !strcmp(argv[1], "memory"))
		return cmd_memory();
	fprintf(stderr, "usage: hist_bench time ROUNDS | count MODE N | memory\n");
	return 2;
}
