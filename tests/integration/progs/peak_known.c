#define _POSIX_C_SOURCE 200809L
/*
 * peak_known.c: a heap whose true peak is known, for report --peak
 * (docs/TIME.md, "Peak").
 *
 *   peak_known SEED
 *
 * grow() allocates blocks of 1..16 KiB (sizes from SEED) until they hold
 * 8 MiB; then, for CHURN steps, each frees a random block and allocates
 * one of the same size in its place (free first, so the live total never
 * exceeds the peak); then everything is freed. A count of steps, not a
 * duration: the selection bias grows with the draws, and 300 ms of churn
 * made 190-230 thousand steps on a loaded machine against about twice
 * that idle, which moved the test's count of naive misses. The true peak
 * of these blocks is the sum printed ("peak_bytes N"); the estimate the
 * runtime keeps at its highest point re-draws the churned part of the
 * heap at each step, which is where the selection bias comes from.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TARGET (8u << 20)
#define MAXB 8192
#define CHURN 400000

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void *blk[MAXB];
static size_t sz[MAXB];

__attribute__((noinline)) static void *grow(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *churn(size_t n)
{
	return malloc(n);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	rng ^= strtoull(argv[1], NULL, 10) * 0x9E3779B97F4A7C15ULL;
	size_t n = 0, total = 0;
	while (n < MAXB) {
		size_t s = 1024 + (size_t)(next() % 15361);
		if (total + s > TARGET)
			break;
		blk[n] = grow(s);
		sz[n++] = s;
		total += s;
	}
	printf("peak_bytes %zu\n", total);
	fflush(stdout);
	for (long step = 0; step < CHURN; step++) {
		size_t i = (size_t)(next() % n);
		free(blk[i]);
		blk[i] = churn(sz[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(blk[i]);
	return 0;
}
