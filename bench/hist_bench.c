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
 * (ap_hist_add, one thread: a per-thread recorder bound behind the call),
 * shared2 (ap_hist_add from two threads on the same histogram, ns per
 * record per thread), recorder2 (two threads, one recorder each, inline
 * path), and two peers written here (below): hg64 and hg64_2 (one and two
 * threads), hdr and hdr_atomic.
 *
 * The peers are this file's own minimal re-implementations of the
 * RECORDING paths of two libraries that are not Debian packages (neither
 * is vendored or copied; each is written from its public description),
 * so that they run in the same binary on the same values:
 *   hg64 (BIND's histogram, [R5]): the key is the log-linear key from the
 *     top bits (the same as ap_hist's), the counters of one exponent are a
 *     chunk allocated lazily and installed with compare-and-swap, and the
 *     record is one relaxed atomic fetch-add on the key's counter. No sum,
 *     min or max.
 *   HdrHistogram_c: the counts index from the leading-zero count of
 *     (v | sub-bucket mask) and the sub-bucket (v shifted by the bucket
 *     index), a range check, then counts[i] += 1, total_count += 1 and the
 *     min/max update, non-atomically as hdr_record_value does; hdr_atomic
 *     does the same with atomic adds and compare-and-swap loops for
 *     min/max, as hdr_record_value_atomic does. One flat array sized up
 *     front for a value range (here 1..2^36); 32 sub-buckets per
 *     half-octave, the precision of sigbits 5 (HdrHistogram_c derives it
 *     from significant figures; the recording code is the same at any).
 * Both are called out of line, as a library's record function is.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* ---- hg64-style recording path (see the top of this file) ------------ */

struct hg64_like {
	unsigned sigbits;
	_Atomic(_Atomic uint64_t *) chunk[64];
};

static struct hg64_like hg64;

/* The rare case out of line and as a tail call, so that the record itself
 * needs no stack frame (as lean as the recording path can be made). */
static NOT_INLINED void hg64_add_new_chunk(struct hg64_like *hg, uint32_t key)
{
	unsigned c = key >> hg->sigbits;
	_Atomic uint64_t *mem = calloc((size_t)1 << hg->sigbits, sizeof *mem);
	_Atomic uint64_t *old = NULL;
	if (!mem)
		abort();
	if (!atomic_compare_exchange_strong_explicit(&hg->chunk[c], &old, mem,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		free(mem);
		mem = old;
	}
	atomic_fetch_add_explicit(&mem[key & ((1u << hg->sigbits) - 1)], 1,
				  memory_order_relaxed);
}

static NOT_INLINED void hg64_add(struct hg64_like *hg, uint64_t v)
{
	unsigned s = hg->sigbits;
	uint32_t key = hist_key(s, v);
	_Atomic uint64_t *ch =
		atomic_load_explicit(&hg->chunk[key >> s], memory_order_acquire);
	if (__builtin_expect(!ch, 0)) {
		hg64_add_new_chunk(hg, key);
		return;
	}
	atomic_fetch_add_explicit(&ch[key & ((1u << s) - 1)], 1,
				  memory_order_relaxed);
}

static void hg64_clear(struct hg64_like *hg)
{
	for (unsigned c = 0; c < 64; c++) {
		free(atomic_load(&hg->chunk[c]));
		atomic_store(&hg->chunk[c], NULL);
	}
	hg->sigbits = SIGBITS;
}

static void run_hg64(uint64_t reps, unsigned off)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			hg64_add(&hg64, stream[(i + off) % STREAM]);
}

/* ---- HdrHistogram-style recording path (see the top of this file) ---- */

#define HDR_HALF_MAG 5  /* sub_bucket_half_count = 32 */
#define HDR_BUCKETS 31  /* covers 1..2^36 at unit magnitude 0 */
struct hdr_like {
	int64_t sub_bucket_mask; /* (sub_bucket_count - 1) << unit_magnitude */
	int32_t unit_magnitude, sub_bucket_half_count_magnitude;
	int32_t sub_bucket_half_count, counts_len;
	int64_t min_value, max_value, total_count;
	int64_t counts[(HDR_BUCKETS + 1) << HDR_HALF_MAG];
};

static struct hdr_like hdr;

static void hdr_clear(struct hdr_like *hh)
{
	memset(hh, 0, sizeof *hh);
	hh->unit_magnitude = 0;
	hh->sub_bucket_half_count_magnitude = HDR_HALF_MAG;
	hh->sub_bucket_half_count = 1 << HDR_HALF_MAG;
	hh->sub_bucket_mask = ((int64_t)2 << HDR_HALF_MAG) - 1;
	hh->counts_len = (HDR_BUCKETS + 1) << HDR_HALF_MAG;
	hh->min_value = INT64_MAX;
}

static inline int32_t hdr_index(const struct hdr_like *hh, int64_t v)
{
	int32_t pow2ceiling =
		64 - __builtin_clzll((uint64_t)(v | hh->sub_bucket_mask));
	int32_t bucket = pow2ceiling - hh->unit_magnitude -
			 (hh->sub_bucket_half_count_magnitude + 1);
	int32_t sub = (int32_t)(v >> (bucket + hh->unit_magnitude));
	return ((bucket + 1) << hh->sub_bucket_half_count_magnitude) +
	       (sub - hh->sub_bucket_half_count);
}

static NOT_INLINED bool hdr_record(struct hdr_like *hh, int64_t v)
{
	if (v < 0)
		return false;
	int32_t i = hdr_index(hh, v);
	if (i < 0 || i >= hh->counts_len)
		return false;
	hh->counts[i] += 1;
	hh->total_count += 1;
	if (v < hh->min_value && v != 0)
		hh->min_value = v;
	if (v > hh->max_value)
		hh->max_value = v;
	return true;
}

static NOT_INLINED bool hdr_record_atomic(struct hdr_like *hh, int64_t v)
{
	if (v < 0)
		return false;
	int32_t i = hdr_index(hh, v);
	if (i < 0 || i >= hh->counts_len)
		return false;
	__atomic_add_fetch(&hh->counts[i], 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&hh->total_count, 1, __ATOMIC_SEQ_CST);
	int64_t m = __atomic_load_n(&hh->min_value, __ATOMIC_SEQ_CST);
	while (v != 0 && v < m &&
	       !__atomic_compare_exchange_n(&hh->min_value, &m, v, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
	}
	m = __atomic_load_n(&hh->max_value, __ATOMIC_SEQ_CST);
	while (v > m &&
	       !__atomic_compare_exchange_n(&hh->max_value, &m, v, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
	}
	return true;
}

static void run_hdr(uint64_t reps, bool atomic)
{
	for (uint64_t r = 0; r < reps; r++)
		for (unsigned i = 0; i < STREAM; i++)
			if (atomic)
				hdr_record_atomic(&hdr, (int64_t)stream[i]);
			else
				hdr_record(&hdr, (int64_t)stream[i]);
}

/* ---- ap_hist ------------------------------------------------------------ */

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

enum two_mode { TWO_SHARED, TWO_RECORDER, TWO_HG64 };

struct worker {
	ap_hist *h;
	enum two_mode mode;
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
	if (w->mode == TWO_RECORDER && ap_hist_recorder_get(w->h, &rec))
		abort();
	/* Warm up as the one-thread runs do: bind the thread's recorder of
	 * the shared path, install the chunks. */
	if (w->mode == TWO_SHARED)
		run_shared(w->h, 1, w->off);
	pthread_barrier_wait(w->start);
	w->wall0 = wall_ns();
	double t0 = now_ns();
	if (rec)
		run_recorder_inline(rec, REPS, w->off);
	else if (w->mode == TWO_HG64)
		run_hg64(REPS, w->off);
	else
		run_shared(w->h, REPS, w->off);
	w->ns = now_ns() - t0;
	w->wall1 = wall_ns();
	ap_hist_recorder_release(rec);
	return NULL;
}

/* Two threads at once; ns per record per thread (the slower thread). */
static double two_threads(enum two_mode mode)
{
	ap_hist *h;
	if (ap_hist_create(&h, SIGBITS, NULL))
		abort();
	hg64_clear(&hg64);
	run_hg64(1, 0);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, 2);
	struct worker w[2] = {
		{.h = h, .mode = mode, .off = 0, .start = &start},
		{.h = h, .mode = mode, .off = STREAM / 2,
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
	SHARED, SHARED2, RECORDER2, HG64, HG64_2, HDR, HDR_ATOMIC, NV
};
static const char *const names[NV] = {
	"limit_index", "limit_key", "limit_call", "recorder", "recorder_inline",
	"batch", "shared", "shared2", "recorder2", "hg64", "hg64_2", "hdr",
	"hdr_atomic"};

static double measure(int v)
{
	if (v == SHARED2)
		return two_threads(TWO_SHARED);
	if (v == RECORDER2)
		return two_threads(TWO_RECORDER);
	if (v == HG64_2)
		return two_threads(TWO_HG64);
	ap_hist *h;
	ap_hist_recorder *rec;
	if (ap_hist_create(&h, SIGBITS, NULL) || ap_hist_recorder_get(h, &rec))
		abort();
	/* Warm up: install the chunks, fault in the pages. */
	run_recorder(rec, 1, 0);
	run_shared(h, 1, 0);
	hg64_clear(&hg64);
	run_hg64(1, 0);
	hdr_clear(&hdr);
	run_hdr(1, false);
	double t0 = now_ns();
	switch (v) {
	case LIMIT_INDEX: run_limit_index(REPS); break;
	case LIMIT_KEY: run_limit_key(REPS); break;
	case LIMIT_CALL: run_limit_call(REPS); break;
	case RECORDER: run_recorder(rec, REPS, 0); break;
	case RECORDER_INLINE: run_recorder_inline(rec, REPS, 0); break;
	case BATCH: run_batch(rec, REPS); break;
	case HG64: run_hg64(REPS, 0); break;
	case HDR: run_hdr(REPS, false); break;
	case HDR_ATOMIC: run_hdr(REPS, true); break;
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
	enum { NR = 12 };
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
		ratio[8][r] = ns[SHARED][r] / ns[HG64][r];
		ratio[9][r] = ns[SHARED2][r] / ns[HG64_2][r];
		ratio[10][r] = ns[RECORDER][r] / ns[HDR][r];
		ratio[11][r] = ns[SHARED][r] / ns[HDR_ATOMIC][r];
	}
	printf("{\"rounds\":%d,\"records_per_run\":%u", rounds, REPS * STREAM);
	for (int v = 0; v < NV; v++)
		printf(",\"%s_ns\":%.3f", names[v], median(ns[v], rounds));
	static const char *const rn[NR] = {
		"recorder_over_limit_index", "recorder_over_limit_key",
		"shared_over_limit_index", "shared2_over_shared",
		"recorder_over_limit_call", "batch_over_limit_key",
		"recorder_inline_over_limit_key",
		"recorder_inline_over_limit_index", "shared_over_hg64",
		"shared2_over_hg64_2", "recorder_over_hdr",
		"shared_over_hdr_atomic"};
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
	hg64_clear(&hg64);
	hdr_clear(&hdr);
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
	else if (!strcmp(mode, "hg64"))
		for (uint64_t i = 0; i < n; i++)
			hg64_add(&hg64, stream[i % STREAM]);
	else if (!strcmp(mode, "hdr"))
		for (uint64_t i = 0; i < n; i++)
			hdr_record(&hdr, (int64_t)stream[i % STREAM]);
	else if (!strcmp(mode, "hdr_atomic"))
		for (uint64_t i = 0; i < n; i++)
			hdr_record_atomic(&hdr, (int64_t)stream[i % STREAM]);
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
