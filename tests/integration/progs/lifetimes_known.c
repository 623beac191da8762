#define _GNU_SOURCE
/*
 * lifetimes_known.c: sites with known lifetime distributions, for the
 * Kaplan-Meier lifetimes (report --lifetimes, docs/TIME.md).
 *
 *   lifetimes_known SEED MS MEAN_MS GAP_US [PROFILE]
 *
 * For MS milliseconds, short_lived() allocates a block of 1..8 KiB every
 * GAP_US microseconds (paced by the clock, so births are uniform), each
 * freed when its lifetime, exponential with a MEAN_MS mean, has passed. Then, under the runtime, the program asks for a profile
 * (ap_runtime_dump, found with dlsym: the runtime sees the blocks still
 * due alive, censored) and exits without freeing them. forever()
 * allocates 64 blocks of 64 KiB at the start that live until exit.
 *
 * The program prints the true median lifetime of short_lived's blocks in
 * this run, as realised on this machine (scheduling delays included): a
 * freed block lived until its free; a block alive at the dump lives until
 * max(its scheduled death, the start of the dump), since it was in fact
 * alive until then. (The runtime measures the ages early in the dump,
 * before encoding and writing: blocks due in between, a fraction of a
 * millisecond, are the only ones whose truth is ambiguous.)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXB 400000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ULL;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

/* Natural logarithm without libm: x = m 2^k, m in [1/2, 1], then
 * ln m = 2 atanh((m - 1) / (m + 1)) by its series (|y| <= 1/3). */
static double ln(double x)
{
	int k = 0;
	while (x < 0.5) {
		x *= 2;
		k--;
	}
	while (x > 1) {
		x /= 2;
		k++;
	}
	double y = (x - 1) / (x + 1), y2 = y * y, s = 0, t = y;
	for (int i = 1; i < 60; i += 2) {
		s += t / i;
		t *= y2;
	}
	return 2 * s + k * 0.6931471805599453;
}

typedef struct blk {
	void *p;
	uint64_t born, due;
} blk;

static blk *b;
static double *life;
static size_t nb;

__attribute__((noinline)) static void *short_lived(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *forever(size_t n)
{
	return malloc(n);
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return a < c ? -1 : a > c;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6)
		return 2;
	rng ^= strtoull(argv[1], NULL, 10) * 0x9E3779B97F4A7C15ULL;
	uint64_t run = strtoull(argv[2], NULL, 10) * 1000000ULL;
	double mean = strtod(argv[3], NULL) * 1e6;
	uint64_t gap = strtoull(argv[4], NULL, 10) * 1000ULL;
	b = calloc(MAXB, sizeof *b);
	life = calloc(MAXB, sizeof *life);
	void *keep[64];
	for (int i = 0; i < 64; i++)
		keep[i] = forever(65536);
	uint64_t t0 = now_ns(), t;
	size_t live_lo = 0; /* blocks below are freed or NULL */
	while ((t = now_ns()) - t0 < run && nb < MAXB) {
		if (t >= t0 + nb * gap) { /* the next birth is due */
			size_t n = 1024 + (size_t)(uniform() * 7168);
			blk *k = &b[nb++];
			k->p = short_lived(n);
			k->born = now_ns();
			k->due = k->born + (uint64_t)(-ln(uniform()) * mean);
		}
		for (size_t i = live_lo; i < nb; i++) {
			if (b[i].p && b[i].due <= t) {
				free(b[i].p);
				b[i].p = NULL;
				life[i] = (double)(now_ns() - b[i].born);
			}
		}
		while (live_lo < nb && !b[live_lo].p)
			live_lo++;
	}
	uint64_t before = now_ns();
	int (*dump)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT,
								 "ap_runtime_dump");
	if (dump && argc == 6 && dump(argv[5]) != 0)
		return 3;
	uint64_t end = now_ns();
	for (size_t i = 0; i < nb; i++)
		if (b[i].p)
			life[i] = (double)((b[i].due > before ? b[i].due : before) -
					   b[i].born);
	qsort(life, nb, sizeof *life, cmp);
	printf("blocks %zu median_ns %.0f dump_ns %llu\n", nb, life[nb / 2],
	       (unsigned long long)(end - before));
	fflush(stdout);
	(void)keep;
	return 0; /* the live blocks are the runtime's censored ones */
}
