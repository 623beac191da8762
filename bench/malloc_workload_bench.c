/*
 * malloc_workload_bench.c: the allocation-heavy program bench/suites/
 * runtime.sh runs with and without liballocprof_preload.so to measure the
 * runtime's overhead. It does not link the runtime; the suite preloads it.
 *
 * Modes (first argument):
 *   mixed OPS [THREADS]  each thread keeps a ring of 4096 live blocks and
 *                        replaces one per operation: 90% of sizes 16-256 B,
 *                        9.9% 256 B-8 KiB, 0.1% 8-512 KiB (the large ones
 *                        dominate sampled bytes, the small ones the call
 *                        count): the shape of a typical server heap. Each
 *                        new block gets its first and last byte written
 *                        (a page fault for each page the allocator had not
 *                        touched yet).
 *   pairs OPS            OPS times malloc(32) + free: the cost of one
 *                        non-sampled malloc/free pair (run under callgrind).
 *   deep OPS DEPTH       OPS times: recurse DEPTH frames, malloc(64), free;
 *                        with rate=1 every malloc is a sample taken with a
 *                        DEPTH-deep stack: the cost per sample.
 *   deepfp OPS DEPTH     the same through functions built with frame
 *                        pointers (deep's are built without).
 *
 * Prints one line of key=value pairs: mode, threads, ops, seconds (the
 * timed loop only, CLOCK_MONOTONIC), maxrss_kb (getrusage, whole process,
 * so it includes the runtime's own memory), checksum (keeps the work alive),
 * samples (the runtime's count of recorded samples; -1 when it is absent),
 * cpu_seconds (CPU time of the timed loop, all threads), loop_faults
 * (minor page faults of the whole process during the timed loop: on a VM
 * each costs microseconds, so a change in their number is a cost).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define RING 4096

struct job {
	long ops;
	int seed;
	uint64_t checksum;
};

/* CPU time of the whole process (every thread), seconds: unlike the
 * wall clock, it does not grow while the machine runs other programs. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "malloc_workload_bench: out of memory\n");
		exit(2);
	}
	return p;
}

static size_t mixed_size(uint64_t r)
{
	unsigned pick = (unsigned)(r % 1000);
	r >>= 10;
	if (pick < 900)
		return 16 + r % 241;
	if (pick < 999)
		return 256 + r % (8192 - 256);
	return 8192 + r % (512 * 1024 - 8192);
}

static void *mixed_worker(void *arg)
{
	struct job *j = arg;
	uint64_t s = 0x2545f4914f6cdd1du + (uint64_t)j->seed * 0x9e3779b97f4a7c15u;
	unsigned char **ring = calloc(RING, sizeof *ring);
	if (!ring) {
		fprintf(stderr, "malloc_workload_bench: out of memory\n");
		exit(2);
	}
	for (long i = 0; i < j->ops; i++) {
		size_t slot = (size_t)i % RING;
		free(ring[slot]);
		size_t n = mixed_size(xorshift(&s));
		ring[slot] = xmalloc(n);
		ring[slot][0] = (unsigned char)i;
		ring[slot][n - 1] = (unsigned char)n;
		j->checksum += ring[slot][0];
	}
	for (size_t k = 0; k < RING; k++)
		free(ring[k]);
	free(ring);
	return NULL;
}

static uint64_t run_mixed(long ops, int threads)
{
	pthread_t t[64];
	struct job jobs[64];
	uint64_t sum = 0;
	for (int i = 0; i < threads; i++) {
		jobs[i] = (struct job){.ops = ops / threads, .seed = i + 1};
		if (pthread_create(&t[i], NULL, mixed_worker, &jobs[i])) {
			fprintf(stderr, "malloc_workload_bench: pthread_create failed\n");
			exit(2);
		}
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += jobs[i].checksum;
	}
	return sum;
}

static uint64_t run_pairs(long ops)
{
	uint64_t sum = 0;
	for (long i = 0; i < ops; i++) {
		unsigned char *volatile p = xmalloc(32);
		p[0] = (unsigned char)i;
		sum += p[0];
		free(p);
	}
	return sum;
}

/* One level of descend: recurse (self) until depth reaches 0, then
 * malloc(64) and free it. Not inlined and not a tail call, so every level
 * is a real frame. */
#define DESCEND_BODY(self)                                        \
	if (depth <= 0) {                                         \
		unsigned char *volatile p = xmalloc(64);          \
		p[0] = (unsigned char)i;                          \
		uint64_t v = p[0];                                \
		free(p);                                          \
		return v;                                         \
	}                                                         \
	uint64_t v = self(depth - 1, i);                          \
	__asm__ volatile("" : "+r"(v));                           \
	return v + 1

__attribute__((noinline)) static uint64_t descend(int depth, long i)
{
	DESCEND_BODY(descend);
}

/* The same built with frame pointers, as distributions that enable them
 * build programs: the fp unwinder sees every level, and the libunwind
 * unwinder's frame-pointer fast path takes them (deep's levels, without
 * frame pointers, are libunwind's alone). GCC only: bench/run's build. */
#ifdef __clang__
#define KEEP_FRAME_POINTER /* clang has no per-function switch */
#else
#define KEEP_FRAME_POINTER __attribute__((optimize("no-omit-frame-pointer")))
#endif
__attribute__((noinline)) KEEP_FRAME_POINTER static uint64_t descend_fp(int depth, long i)
{
	DESCEND_BODY(descend_fp);
}

static uint64_t run_deep(long ops, int depth, bool fp)
{
	uint64_t sum = 0;
	for (long i = 0; i < ops; i++)
		sum += fp ? descend_fp(depth, i) : descend(depth, i);
	return sum;
}

static long arg_long(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end || v < lo || v > hi) {
		fprintf(stderr, "malloc_workload_bench: bad %s '%s' (%ld..%ld)\n",
			what, s, lo, hi);
		exit(1);
	}
	return v;
}

/* Samples the runtime recorded so far, through ap_runtime_get_totals
 * looked up at run time (the program does not link the runtime), or -1
 * when it is not preloaded. The totals start with five doubles. */
static long runtime_samples(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "ap_runtime_get_totals");
	if (!sym)
		return -1;
	int (*get)(void *);
	memcpy(&get, &sym, sizeof get);
	_Alignas(8) unsigned char tot[256];
	if (get(tot) != 0)
		return -1;
	uint64_t n;
	memcpy(&n, tot + 5 * sizeof(double), sizeof n);
	return (long)n;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: malloc_workload_bench mixed OPS [THREADS] | "
				"pairs OPS | deep OPS DEPTH | deepfp OPS DEPTH\n");
		return 1;
	}
	const char *mode = argv[1];
	long ops = arg_long(argv[2], 1, 1L << 40, "OPS");
	long threads = 1;
	uint64_t sum;
	struct rusage ru0;
	getrusage(RUSAGE_SELF, &ru0);
	double t0 = now(), c0 = cpu_now();
	if (!strcmp(mode, "mixed")) {
		if (argc > 3)
			threads = arg_long(argv[3], 1, 64, "THREADS");
		sum = run_mixed(ops, (int)threads);
	} else if (!strcmp(mode, "pairs")) {
		sum = run_pairs(ops);
	} else if ((!strcmp(mode, "deep") || !strcmp(mode, "deepfp")) && argc > 3) {
		sum = run_deep(ops, (int)arg_long(argv[3], 0, 10000, "DEPTH"),
			       !strcmp(mode, "deepfp"));
	} else {
		fprintf(stderr, "malloc_workload_bench: unknown mode '%s'\n", mode);
		return 1;
	}
	double secs = now() - t0, cpu = cpu_now() - c0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("mode=%s threads=%ld ops=%ld seconds=%.6f maxrss_kb=%ld checksum=%llu "
	       "samples=%ld cpu_seconds=%.6f loop_faults=%ld\n",
	       mode, threads, ops, secs, ru.ru_maxrss, (unsigned long long)sum,
	       runtime_samples(), cpu, ru.ru_minflt - ru0.ru_minflt);
	return 0;
}
