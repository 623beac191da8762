/*
 * http_steady.c: allocates at a known steady rate, for the delta profiles
 * of the HTTP endpoint (/debug/pprof/allocs?seconds=N).
 *
 *   http_steady STOPFILE MAX_SECONDS
 *
 * Every millisecond of wall time (CLOCK_MONOTONIC, caught up when late)
 * steady_alloc allocates and frees 16 blocks of 4 KiB: 64 KiB per ms,
 * 65,536,000 bytes per second, so the bytes allocated in any window of N
 * seconds are N * 65,536,000 to within one millisecond's 64 KiB at each
 * end. Runs until STOPFILE exists; exit 0, or 3 when MAX_SECONDS passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define PER_MS 16

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static void steady_alloc(void)
{
	for (int i = 0; i < PER_MS; i++) {
		volatile char *p = malloc(BLOCK);
		if (!p)
			exit(2);
		p[0] = (char)i;
		free((void *)p);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: http_steady STOPFILE MAX_SECONDS\n");
		return 1;
	}
	uint64_t t0 = now_ms(), done = 0, limit = (uint64_t)(atof(argv[2]) * 1000);
	for (;;) {
		uint64_t t = now_ms() - t0;
		for (; done < t; done++)
			steady_alloc();
		if (done % 100 == 0 && access(argv[1], F_OK) == 0)
			return 0;
		if (t > limit)
			return 3;
		struct timespec d = { 0, 200000 };
		nanosleep(&d, NULL);
	}
}
