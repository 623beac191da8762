/*
 * cache_churn.c: frees many large sampled blocks, then reports how much of
 * the runtime's sampled-block range is resident (preload_cache_test.sh).
 *
 * Run at rate=16384: a block of 256 KiB or more is sampled with
 * probability at least 1 - e^-16, so every block here lives in the range.
 * A 1 MiB marker block stays live throughout; 64 blocks of 256 KiB to
 * 1.7 MiB (sizes spread over several run classes), each written in full,
 * go through a ring of 4 live blocks and are all freed by the end.
 * Then the program reads /proc/self/smaps (with read(2) into a static
 * buffer: no malloc that could itself be sampled) and prints
 *   range_rss_kb=N all_in_vma=0|1
 * where N is the Rss of the mapping holding the marker, and all_in_vma
 * says every churned block lay in that same mapping (so its Rss covers
 * every page the range ever used).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBLOCKS 64
#define RING 4

static char smaps[1 << 22];

int main(void)
{
	char *marker = malloc((size_t)1 << 20);
	if (!marker)
		return 2;
	memset(marker, 1, (size_t)1 << 20);
	uintptr_t addr[NBLOCKS];
	char *ring[RING] = { 0 };
	for (int i = 0; i < NBLOCKS; i++) {
		size_t n = ((size_t)256 << 10) + (size_t)(i * 7 % 24) * ((size_t)64 << 10);
		char *p = malloc(n);
		if (!p)
			return 2;
		memset(p, i, n);
		addr[i] = (uintptr_t)p;
		free(ring[i % RING]);
		ring[i % RING] = p;
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 3;
	size_t len = 0;
	ssize_t k;
	while (len < sizeof smaps - 1 && (k = read(fd, smaps + len, sizeof smaps - 1 - len)) > 0)
		len += (size_t)k;
	close(fd);
	smaps[len] = '\0';
	/* Find the mapping holding the marker, then its Rss line. */
	uintptr_t m = (uintptr_t)marker, lo = 0, hi = 0;
	long rss = -1;
	for (char *line = smaps; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* A mapping's first line starts "lo-hi perms ..."; its
		 * fields start "Name:". */
		size_t t = strcspn(line, " ");
		unsigned long a, b;
		long v;
		if (t > 0 && line[t - 1] != ':') {
			if (hi)
				break; /* past the marker's mapping */
			if (sscanf(line, "%lx-%lx", &a, &b) == 2 && m >= a && m < b) {
				lo = a;
				hi = b;
			}
		} else if (hi && sscanf(line, "Rss: %ld kB", &v) == 1) {
			rss = v;
		}
		line = next;
	}
	int all = hi != 0;
	for (int i = 0; i < NBLOCKS; i++)
		if (addr[i] < lo || addr[i] >= hi)
			all = 0;
	printf("range_rss_kb=%ld all_in_vma=%d\n", rss, all);
	free(marker);
	return rss >= 0 ? 0 : 4;
}
