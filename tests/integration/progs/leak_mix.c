/*
 * leak_mix.c: a program whose heap over time is known, for `allocprof
 * leaks` and `allocprof timeline` (timeline_leaks_test.sh). The workload
 * is that of tests/stats/leak_fdr_test.c, run for real: every tick of
 * 1/256 s
 *  - leak_step:  one 4 KiB block, never freed (exactly 1 MiB/s);
 *  - cache_fill: 8 KiB blocks until 30 MiB (3840 blocks), spread evenly
 *                over the first 8 s, then kept;
 *  - pool_cycle: two 16 KiB blocks per tick for 256 ticks (8 MiB), all
 *                freed at the end of a 333-tick cycle;
 *  - churn_step: 80 blocks of 1 KiB, each freed after an exponential
 *                lifetime of mean 0.3 s (a random stream seeded by SEED).
 *
 * usage: leak_mix SECONDS SEED [noleak]
 *
 * Ticks follow the monotonic clock: tick k runs once the clock passes
 * k/256 s after the start, and a late wake-up runs the ticks it missed,
 * so every rate holds in wall-clock time however loaded the machine is.
 * Nothing is freed at exit: the dump at exit sees the heap as it was.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TICKS_PER_S 256
#define CACHE_BLOCKS 3840
#define POOL_CYCLE 333
#define POOL_TICKS 256
#define CHURN_PER_TICK 80
#define LIFE_TICKS 4096 /* lifetimes beyond 16 s (p = e^-53) are cut */
#define BUCKET 256      /* blocks per free bucket; overflow goes on */

static void *leaked;                 /* the leak's blocks, chained */
static void *cache[CACHE_BLOCKS];
static long cache_n;
static void *pool[2 * POOL_TICKS];
static long pool_n;
/* churn: the blocks to free at tick t are in bucket t % LIFE_TICKS */
static void *churn[LIFE_TICKS][BUCKET];
static int churn_n[LIFE_TICKS];
static uint64_t rng;

static uint64_t next_u64(void)
{
	/* splitmix64 */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ln(x) for 0 < x <= 1 without libm (test programs link only libc):
 * x = m 2^-e with m in [0.5, 1), ln m = 2 atanh((m - 1) / (m + 1)). */
static double ln01(double x)
{
	int e = 0;
	while (x < 0.5) {
		x *= 2;
		e++;
	}
	double z = (x - 1) / (x + 1), z2 = z * z, term = z, sum = 0;
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return 2 * sum - e * 0.69314718055994530942;
}

static void *must(void *p)
{
	if (!p) {
		fprintf(stderr, "leak_mix: out of memory\n");
		exit(1);
	}
	memset(p, 0x5a, 64);
	return p;
}

void leak_step(void);
void cache_fill(long tick);
void pool_cycle(long tick);
void churn_step(long tick);

void leak_step(void)
{
	void **b = must(malloc(4096));
	*b = leaked;
	leaked = b;
}

void cache_fill(long tick)
{
	long want = (tick + 1) * CACHE_BLOCKS / (8 * TICKS_PER_S);
	for (; cache_n < want && cache_n < CACHE_BLOCKS; cache_n++)
		cache[cache_n] = must(malloc(8192));
}

void pool_cycle(long tick)
{
	long phase = tick % POOL_CYCLE;
	if (phase == 0) {
		for (long i = 0; i < pool_n; i++)
			free(pool[i]);
		pool_n = 0;
	}
	if (phase < POOL_TICKS)
		for (int k = 0; k < 2; k++)
			pool[pool_n++] = must(malloc(16384));
}

void churn_step(long tick)
{
	int *n = &churn_n[tick % LIFE_TICKS];
	for (int i = 0; i < *n; i++)
		free(churn[tick % LIFE_TICKS][i]);
	*n = 0;
	for (int k = 0; k < CHURN_PER_TICK; k++) {
		double u = (double)(next_u64() >> 11) * 0x1p-53;
		double x = -0.3 * TICKS_PER_S * ln01(1 - u);
		long life = (long)x + 1; /* ceil, and at least one tick */
		if (life < 1)
			life = 1;
		if (life >= LIFE_TICKS)
			life = LIFE_TICKS - 1;
		long at = tick + life;
		while (churn_n[at % LIFE_TICKS] == BUCKET)
			at++; /* a full bucket (never in practice): later */
		long b = at % LIFE_TICKS;
		churn[b][churn_n[b]++] = must(malloc(1024));
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: leak_mix SECONDS SEED [noleak]\n");
		return 2;
	}
	double secs = atof(argv[1]);
	rng = strtoull(argv[2], NULL, 10);
	int with_leak = !(argc > 3 && !strcmp(argv[3], "noleak"));
	long ticks = (long)(secs * TICKS_PER_S);
	double start = now_s();
	for (long tick = 0; tick < ticks; tick++) {
		double due = start + (double)tick / TICKS_PER_S;
		double wait = due - now_s();
		if (wait > 0) {
			struct timespec ts = {(time_t)wait,
					      (long)((wait - (double)(time_t)wait) * 1e9)};
			nanosleep(&ts, NULL);
		}
		if (with_leak)
			leak_step();
		cache_fill(tick);
		pool_cycle(tick);
		churn_step(tick);
	}
	printf("leak_mix: %ld ticks in %.2f s\n", ticks, now_s() - start);
	return 0;
}
