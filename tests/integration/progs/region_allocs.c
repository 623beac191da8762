/*
 * region_allocs.c: exercises every malloc-family entry point with blocks
 * large enough that, under the runtime at a rate of 16 KiB or more, nearly
 * all are sampled and so served from allocprof's own range (design 2 of the
 * free() fast path, src/preload/region.h). It checks what any allocator
 * must guarantee -- alignment, zeroed calloc memory, contents kept across
 * realloc, usable size >= requested, EINVAL for bad alignments -- across
 * threads and a fork, and prints one line:
 *
 *   blocks N signed S paged M errors E
 *
 * N blocks checked; S of them from entry points where the region's
 * signature is distinctive, M of those S with it: a page-aligned pointer
 * and a usable size that is a whole number of pages, which glibc never
 * gives for malloc, calloc, realloc or alignments below the page: a heap
 * chunk's usable size is 8 mod 16, and an mmapped chunk's user pointer sits
 * 16 bytes (or, aligned, less than a page) past the page its mapping starts
 * on. A block aligned to a page or more -- valloc and pvalloc included --
 * that glibc mmaps is page-aligned with a usable size of whole pages, the
 * signature exactly; whether glibc mmaps a 1 MiB block depends on its
 * dynamic mmap threshold, i.e. on the history of frees, so those blocks are
 * not signed.
 * The caller compares M with and without the runtime. Exit status 1 if any
 * check failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void);

#define BIG ((size_t)1 << 20)
#define THREADS 4
#define PER_THREAD 60

static size_t page;

struct tally {
	unsigned long blocks, signed_, paged, errors;
};

static void note_sig(struct tally *t, void *p, size_t n, int sig)
{
	if (!p) {
		t->errors++;
		fprintf(stderr, "allocation of %zu bytes failed\n", n);
		return;
	}
	size_t u = malloc_usable_size(p);
	if (u < n) {
		t->errors++;
		fprintf(stderr, "usable %zu < requested %zu\n", u, n);
	}
	t->blocks++;
	if (!sig)
		return;
	t->signed_++;
	if ((uintptr_t)p % page == 0 && u % page == 0)
		t->paged++;
}

static void note(struct tally *t, void *p, size_t n)
{
	note_sig(t, p, n, 1);
}

static void fill(unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i += 251)
		p[i] = (unsigned char)(seed + i / 251);
	p[n - 1] = seed;
}

/* Does p still hold, below `upto`, what fill(p, n, seed) wrote? */
static int same(const unsigned char *p, size_t n, size_t upto, unsigned char seed)
{
	for (size_t i = 0; i < upto && i < n; i += 251)
		if (p[i] != (unsigned char)(seed + i / 251))
			return 0;
	return n - 1 >= upto || p[n - 1] == seed;
}

static void zeroed(struct tally *t, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 509)
		if (p[i]) {
			t->errors++;
			fprintf(stderr, "calloc byte %zu is %u\n", i, p[i]);
			return;
		}
}

/* Check and free a block from an aligned entry point. */
static void aligned(struct tally *t, const char *fn, void *p, size_t al, size_t n)
{
	if (!p || (uintptr_t)p % al) {
		t->errors++;
		fprintf(stderr, "%s(%zu, %zu): %p\n", fn, al, n, p);
	}
	note_sig(t, p, n, al < page);
	free(p);
}

/* One round over all entry points; blocks are freed before returning. */
static void round_all(struct tally *t, unsigned k)
{
	size_t n = BIG + k * 4093;
	unsigned char *a = malloc(n);
	note(t, a, n);
	if (!a)
		return;
	fill(a, n, (unsigned char)k);

	/* calloc: zero even when the range's pages are reused. */
	unsigned char *c = calloc(n / 8, 8);
	note(t, c, n / 8 * 8);
	if (c) {
		zeroed(t, c, n / 8 * 8);
		memset(c, 0xff, n / 8 * 8);
		free(c);
	}
	unsigned char *c2 = calloc(1, n);
	note(t, c2, n);
	if (c2) {
		zeroed(t, c2, n);
		/* C23's free_sized: glibc 2.36 lacks it, the runtime exports it. */
		void (*fs)(void *, size_t);
		void *sym = dlsym(RTLD_DEFAULT, "free_sized");
		if (sym) {
			memcpy(&fs, &sym, sizeof fs);
			fs(c2, n);
		} else {
			free(c2);
		}
	}

	/* realloc: grow and shrink keep the contents. */
	unsigned char *g = realloc(a, 2 * n);
	note(t, g, 2 * n);
	if (!g || !same(g, n, n, (unsigned char)k)) {
		t->errors++;
		fprintf(stderr, "realloc grow lost the contents\n");
		free(g ? g : a);
		return;
	}
	unsigned char *s = realloc(g, n / 2);
	note(t, s, n / 2);
	if (!s || !same(s, n, n / 2, (unsigned char)k)) {
		t->errors++;
		fprintf(stderr, "realloc shrink lost the contents\n");
	}
	free(s ? s : g);

	/* The aligned entry points, alignments below and above the page. */
	size_t aligns[] = { 16, 64, 4096, 65536, 1 << 21 };
	for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
		size_t al = aligns[i];
		void *p = NULL;
		int rc = posix_memalign(&p, al, n);
		aligned(t, "posix_memalign", rc == 0 ? p : NULL, al, n);
		aligned(t, "aligned_alloc", aligned_alloc(al, n), al, n);
		aligned(t, "memalign", memalign(al, n), al, n);
	}
	/* Invalid alignments are the allocator's to refuse, sampled or not. */
	void *bad = (void *)&bad;
	if (posix_memalign(&bad, 24, n) != EINVAL || posix_memalign(&bad, 0, n) != EINVAL) {
		t->errors++;
		fprintf(stderr, "posix_memalign accepted a bad alignment\n");
	}
	void *v = valloc(n);
	if (!v || (uintptr_t)v % page) {
		t->errors++;
		fprintf(stderr, "valloc: %p\n", v);
	}
	note_sig(t, v, n, 0); /* page-aligned: glibc's can look paged */
	free(v);
	v = pvalloc(n + 1);
	if (!v || (uintptr_t)v % page || malloc_usable_size(v) < (n + page) / page * page) {
		t->errors++;
		fprintf(stderr, "pvalloc: %p\n", v);
	}
	note_sig(t, v, n + 1, 0);
	free(v);
}

static void *worker(void *vp)
{
	struct tally *t = vp;
	for (unsigned k = 0; k < PER_THREAD / 10; k++)
		round_all(t, k);
	return NULL;
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	struct tally t = { 0 };
	for (unsigned k = 0; k < 6; k++)
		round_all(&t, k);

	/* Threads: concurrent use of the range. */
	pthread_t th[THREADS];
	struct tally tt[THREADS];
	memset(tt, 0, sizeof tt);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, worker, &tt[i]) != 0)
			return 2;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		t.blocks += tt[i].blocks;
		t.signed_ += tt[i].signed_;
		t.paged += tt[i].paged;
		t.errors += tt[i].errors;
	}

	/* fork: the child frees and reallocates blocks of the parent's. */
	unsigned char *kept[8];
	for (int i = 0; i < 8; i++) {
		kept[i] = malloc(BIG);
		note(&t, kept[i], BIG);
		if (kept[i])
			fill(kept[i], BIG, (unsigned char)(100 + i));
	}
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		int bad = 0;
		for (int i = 0; i < 8; i++) {
			if (!kept[i])
				continue;
			if (!same(kept[i], BIG, BIG, (unsigned char)(100 + i)))
				bad = 1;
			if (i % 2) {
				free(kept[i]);
			} else {
				unsigned char *q = realloc(kept[i], 3 * BIG);
				if (!q || !same(q, BIG, BIG, (unsigned char)(100 + i)))
					bad = 1;
				free(q);
			}
		}
		struct tally ct = { 0 };
		round_all(&ct, 9);
		_exit(bad || ct.errors ? 1 : 0);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		t.errors++;
		fprintf(stderr, "fork child failed (status %d)\n", st);
	}
	for (int i = 0; i < 8; i++) {
		if (kept[i] && !same(kept[i], BIG, BIG, (unsigned char)(100 + i))) {
			t.errors++;
			fprintf(stderr, "parent block %d changed across fork\n", i);
		}
		free(kept[i]);
	}
	printf("blocks %lu signed %lu paged %lu errors %lu\n", t.blocks, t.signed_, t.paged,
	       t.errors);
	return t.errors ? 1 : 0;
}
