/*
 * fd_daemon.c: a daemon's descriptor hygiene, for
 * tests/integration/preload_fds_test.sh. It closes every descriptor >= 3
 * (as daemons do), opens its own data files in DIR, and then alternates
 * writing known records to them with allocations of varied sizes from
 * varied call stacks, so that a runtime sampling them unwinds many times
 * while the files are open. At the end it reads every file back: each must
 * hold exactly the records written. A runtime that reads, writes or closes
 * a descriptor it does not own makes a write fail (EBADF), loses or adds
 * bytes, or leaves a file short.
 *
 * Usage: fd_daemon DIR ROUNDS
 * Prints "ok" and exits 0, or names the first damaged file and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define NFILES 4
#define RECORD 64

static void *sink[64];

/* Allocation sites at different depths: distinct stacks to unwind. */
__attribute__((noinline)) static void alloc_at(int depth, size_t n, int slot)
{
	if (depth > 0) {
		alloc_at(depth - 1, n, slot);
		return;
	}
	free(sink[slot]);
	sink[slot] = malloc(n);
	if (sink[slot])
		memset(sink[slot], 1, n < 64 ? n : 64);
}

static void record(char *buf, int file, int round)
{
	memset(buf, 'a' + file, RECORD);
	snprintf(buf, RECORD, "file %d round %d", file, round);
	buf[RECORD - 1] = '\n';
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fd_daemon DIR ROUNDS\n");
		return 2;
	}
	int rounds = atoi(argv[2]);
	struct rlimit rl;
	int maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536
			    ? (int)rl.rlim_cur
			    : 65536;
	for (int fd = 3; fd < maxfd; fd++)
		close(fd);
	char path[4096];
	int fds[NFILES];
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof path, "%s/data%d", argv[1], i);
		fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fds[i] < 0) {
			fprintf(stderr, "open %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	char buf[RECORD];
	unsigned x = 12345;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < NFILES; i++) {
			x = x * 1103515245u + 12345u;
			alloc_at((int)(x >> 28), 16 + (x >> 16) % 20000, (int)(x >> 8) % 64);
			record(buf, i, r);
			if (write(fds[i], buf, RECORD) != RECORD) {
				fprintf(stderr, "write data%d round %d: %s\n", i, r,
					strerror(errno));
				return 1;
			}
		}
	}
	for (int i = 0; i < NFILES; i++)
		if (close(fds[i]) != 0) {
			fprintf(stderr, "close data%d: %s\n", i, strerror(errno));
			return 1;
		}
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof path, "%s/data%d", argv[1], i);
		FILE *f = fopen(path, "r");
		if (!f) {
			fprintf(stderr, "reopen %s: %s\n", path, strerror(errno));
			return 1;
		}
		char got[RECORD];
		int r = 0;
		while (fread(got, 1, RECORD, f) == RECORD) {
			record(buf, i, r);
			if (memcmp(got, buf, RECORD) != 0)
				break;
			r++;
		}
		fclose(f);
		if (r != rounds) {
			fprintf(stderr, "data%d: %d of %d records intact\n", i, r, rounds);
			return 1;
		}
	}
	for (int i = 0; i < 64; i++)
		free(sink[i]);
	printf("ok\n");
	return 0;
}
