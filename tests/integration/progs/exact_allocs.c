/*
 * exact_allocs.c: a program whose every heap allocation is known, so that a
 * profile recorded with rate=1 can be checked to the byte
 * (tests/unit/run_exact_test.c does the checking).
 *
 * Each allocating function site_NAME calls the allocator entry points itself
 * and counts, as it goes, the objects and bytes it allocated (alloc view) and
 * those still live at exit (inuse view). realloc counts as freeing the old
 * block and allocating the new size; a block given back by free stops being
 * in use. On stdout the program prints:
 *
 *   text START END                 its executable text range (hex)
 *   func NAME ADDR                 every function of this file (hex address)
 *   site NAME AOBJ ABYTES IOBJ IBYTES
 *
 * Frames in the profile are attributed to the function with the greatest
 * start address not above them, within the text range. Calls of other
 * functions (stdio, pthread_create) allocate too; they are made outside the
 * site functions, so their stacks never have a site as innermost own frame.
 *
 * Usage: exact_allocs [--fork] [--portable]
 *   --fork      the allocations run in a child process after fork; the
 *               parent only waits (the fork test)
 *   --portable  for other allocators underneath: no pvalloc (jemalloc does
 *               not provide it, so glibc's would be mixed with jemalloc's
 *               free) and aligned_alloc's alignment is not checked (Debian
 *               12's mimalloc 2.0 returns 128-byte alignment for 256)
 */
#define _GNU_SOURCE
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_all(void);
int main(int argc, char **argv);

struct tally {
	const char *name;
	unsigned long aobj, abytes, iobj, ibytes;
};

/* Blocks kept until exit, so they are live when the final dump happens. */
static void *keep[4096];
static int portable;
static size_t nkeep;
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;

static void alloc_counted(struct tally *t, size_t n)
{
	t->aobj++;
	t->abytes += n;
	t->iobj++;
	t->ibytes += n;
}

static void free_counted(struct tally *t, size_t n)
{
	t->iobj--;
	t->ibytes -= n;
}

static void *check(void *p)
{
	if (!p) {
		fprintf(stderr, "exact_allocs: allocation failed\n");
		exit(2);
	}
	return p;
}

static void keep_live(void *p)
{
	pthread_mutex_lock(&keep_lock);
	if (nkeep == sizeof keep / sizeof keep[0]) {
		fprintf(stderr, "exact_allocs: keep[] full\n");
		exit(2);
	}
	keep[nkeep++] = p;
	pthread_mutex_unlock(&keep_lock);
}

/* 1000 small mallocs of one size; 700 freed. */
static void site_malloc_small(struct tally *t)
{
	void *p[1000];
	for (int i = 0; i < 1000; i++) {
		p[i] = check(malloc(24));
		alloc_counted(t, 24);
	}
	for (int i = 0; i < 1000; i++) {
		if (i % 10 < 7) {
			free(p[i]);
			free_counted(t, 24);
		} else {
			keep_live(p[i]);
		}
	}
}

/* Sizes spread over 1 B .. 200 KiB (glibc's mmap threshold is 128 KiB). */
static void site_malloc_varied(struct tally *t)
{
	for (size_t i = 1; i <= 300; i++) {
		size_t n = i * i * 7 - i * 5 + 1; /* 3 .. 628501 */
		void *p = check(malloc(n));
		memset(p, 1, n);
		alloc_counted(t, n);
		if (i % 3) {
			free(p);
			free_counted(t, n);
		} else {
			keep_live(p);
		}
	}
}

static void site_calloc(struct tally *t)
{
	for (int i = 0; i < 100; i++) {
		unsigned char *p = check(calloc(7, 13));
		alloc_counted(t, 91);
		if (i < 90) {
			free(p);
			free_counted(t, 91);
		} else {
			keep_live(p);
		}
	}
}

/* A buffer doubling from 16 B to 64 KiB, then shrinking to 100 B (kept). */
static void site_realloc_grow(struct tally *t)
{
	size_t n = 16;
	char *p = check(malloc(n));
	alloc_counted(t, n);
	while (n < 65536) {
		p = check(realloc(p, n * 2));
		free_counted(t, n);
		n *= 2;
		alloc_counted(t, n);
		memset(p, 2, n);
	}
	p = check(realloc(p, 100));
	free_counted(t, n);
	alloc_counted(t, 100);
	keep_live(p);
	/* realloc(NULL, n) is malloc(n). */
	char *q = check(realloc(NULL, 333));
	alloc_counted(t, 333);
	free(q);
	free_counted(t, 333);
	/* reallocarray grows an array of 24-byte records. */
	void *r = check(reallocarray(NULL, 10, 24));
	alloc_counted(t, 240);
	r = check(reallocarray(r, 20, 24));
	free_counted(t, 240);
	alloc_counted(t, 480);
	free(r);
	free_counted(t, 480);
}

/* Every aligned entry point, each with sizes that need no rounding. */
static void site_aligned(struct tally *t)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pg = page > 0 ? (size_t)page : 4096;
	for (int i = 0; i < 10; i++) {
		void *p = NULL;
		if (posix_memalign(&p, 64, 100)) {
			fprintf(stderr, "exact_allocs: posix_memalign failed\n");
			exit(2);
		}
		alloc_counted(t, 100);
		void *a = check(aligned_alloc(256, 512));
		alloc_counted(t, 512);
		void *m = check(memalign(4096, 1000));
		alloc_counted(t, 1000);
		void *v = check(valloc(2 * pg));
		alloc_counted(t, 2 * pg);
		void *pv = portable ? check(malloc(3 * pg)) : check(pvalloc(3 * pg));
		alloc_counted(t, 3 * pg);
		uintptr_t amask = portable ? 0 : 255;
		if (((uintptr_t)p & 63) || ((uintptr_t)a & amask) ||
		    ((uintptr_t)m & 4095) || ((uintptr_t)v & (pg - 1)) ||
		    ((uintptr_t)pv & (pg - 1))) {
			fprintf(stderr, "exact_allocs: misaligned block\n");
			exit(2);
		}
		free(p);
		free_counted(t, 100);
		free(a);
		free_counted(t, 512);
		if (i < 7) {
			free(m);
			free_counted(t, 1000);
			free(v);
			free_counted(t, 2 * pg);
			free(pv);
			free_counted(t, 3 * pg);
		} else {
			keep_live(m);
			keep_live(v);
			keep_live(pv);
		}
	}
}

/* Three 10 MiB blocks (served by mmap), one kept. */
static void site_big(struct tally *t)
{
	for (int i = 0; i < 3; i++) {
		char *p = check(malloc(10u << 20));
		p[0] = 1;
		alloc_counted(t, 10u << 20);
		if (i) {
			free(p);
			free_counted(t, 10u << 20);
		} else {
			keep_live(p);
		}
	}
}

static void site_live_at_exit(struct tally *t)
{
	for (int i = 0; i < 50; i++) {
		keep_live(check(malloc(1000)));
		alloc_counted(t, 1000);
	}
}

/*
 * Threads: each of NTHREADS allocates NPER blocks of 40 + thread index bytes
 * and hands them to its neighbour, which frees all but the last 5.
 */
#define NTHREADS 8
#define NPER 500

struct handoff {
	void *blocks[NPER];
	size_t size;
	pthread_barrier_t *barrier;
	struct handoff *next;
};

static void site_thread_alloc(struct handoff *h)
{
	for (int i = 0; i < NPER; i++)
		h->blocks[i] = check(malloc(h->size));
}

static void *thread_main(void *arg)
{
	struct handoff *h = arg;
	site_thread_alloc(h);
	pthread_barrier_wait(h->barrier);
	for (int i = 0; i < NPER; i++) /* free the neighbour's blocks */
		if (i < NPER - 5)
			free(h->next->blocks[i]);
		else
			keep_live(h->next->blocks[i]);
	return NULL;
}

static void run_threads(struct tally *t)
{
	static struct handoff h[NTHREADS];
	pthread_t tid[NTHREADS];
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		h[i].size = 40 + (size_t)i;
		h[i].barrier = &barrier;
		h[i].next = &h[(i + 1) % NTHREADS];
	}
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&tid[i], NULL, thread_main, &h[i])) {
			fprintf(stderr, "exact_allocs: pthread_create failed\n");
			exit(2);
		}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < NTHREADS; i++)
		for (int k = 0; k < NPER; k++) {
			alloc_counted(t, h[i].size);
			if (k < NPER - 5)
				free_counted(t, h[i].size);
		}
}

/* Edge cases the runtime must pass through; not part of any site. */
static void noise_edge_cases(void)
{
	free(NULL);
	void *z = malloc(0);
	free(z);
	void *c = calloc(0, 16);
	free(c);
	volatile size_t huge = SIZE_MAX / 2; /* hidden from the compiler */
	void *big = calloc(huge, 4);         /* overflows: must fail cleanly */
	if (big) {
		fprintf(stderr, "exact_allocs: overflowing calloc succeeded\n");
		exit(2);
	}
	void *u = check(malloc(100));
	if (malloc_usable_size(u) < 100) {
		fprintf(stderr, "exact_allocs: malloc_usable_size < request\n");
		exit(2);
	}
	free(u);
}

static int text_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *r = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			r[0] = info->dlpi_addr + ph->p_vaddr;
			r[1] = r[0] + ph->p_memsz;
		}
	}
	return 1; /* the first object is the executable */
}

static void print_site(const struct tally *t)
{
	printf("site %s %lu %lu %lu %lu\n", t->name, t->aobj, t->abytes, t->iobj,
	       t->ibytes);
}

#define FUNC(f) printf("func %s %#lx\n", #f, (unsigned long)(uintptr_t)(f))

static void print_layout(void)
{
	uintptr_t r[2] = {0, 0};
	dl_iterate_phdr(text_range, r);
	printf("text %#lx %#lx\n", (unsigned long)r[0], (unsigned long)r[1]);
	FUNC(alloc_counted);
	FUNC(free_counted);
	FUNC(check);
	FUNC(keep_live);
	FUNC(site_malloc_small);
	FUNC(site_malloc_varied);
	FUNC(site_calloc);
	FUNC(site_realloc_grow);
	FUNC(site_aligned);
	FUNC(site_big);
	FUNC(site_live_at_exit);
	FUNC(site_thread_alloc);
	FUNC(thread_main);
	FUNC(run_threads);
	FUNC(noise_edge_cases);
	FUNC(text_range);
	FUNC(print_site);
	FUNC(print_layout);
	FUNC(run_all);
	FUNC(main);
}

static int run_all(void)
{
	struct tally t[] = {
		{"site_malloc_small", 0, 0, 0, 0},
		{"site_malloc_varied", 0, 0, 0, 0},
		{"site_calloc", 0, 0, 0, 0},
		{"site_realloc_grow", 0, 0, 0, 0},
		{"site_aligned", 0, 0, 0, 0},
		{"site_big", 0, 0, 0, 0},
		{"site_live_at_exit", 0, 0, 0, 0},
		{"site_thread_alloc", 0, 0, 0, 0},
	};
	print_layout();
	noise_edge_cases();
	site_malloc_small(&t[0]);
	site_malloc_varied(&t[1]);
	site_calloc(&t[2]);
	site_realloc_grow(&t[3]);
	site_aligned(&t[4]);
	site_big(&t[5]);
	site_live_at_exit(&t[6]);
	run_threads(&t[7]);
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		print_site(&t[i]);
	return fflush(stdout) ? 2 : 0;
}

int main(int argc, char **argv)
{
	int fork_first = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fork"))
			fork_first = 1;
		else if (!strcmp(argv[i], "--portable"))
			portable = 1;
		else {
			fprintf(stderr, "usage: exact_allocs [--fork] [--portable]\n");
			return 64;
		}
	}
	if (fork_first) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("exact_allocs: fork");
			return 2;
		}
		if (pid == 0)
			exit(run_all());
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
			return 2;
		return WEXITSTATUS(st);
	}
	return run_all();
}
