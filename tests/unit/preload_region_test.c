/*
 * preload_region_test.c: the page-run allocator behind design (2) of the
 * runtime's free() fast path (src/preload/region.h): reservation and its
 * fallback sizes, page rounding, zeroed and reused runs, alignment above
 * the page, records in the side table, double frees and interior pointers,
 * exhaustion (the caller then falls back to design 1), injected commit
 * failures, bad input, and concurrent use from 4 threads (AP_TEST_THREADED).
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aptest.h"
#include "region.h"

#define MIB ((size_t)1 << 20)

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

AP_TEST(init_reserves_and_keeps_the_prefix)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 16 * MIB, 3 * page() + 1), 0);
	AP_CHECK_EQ_U64(r.size, 64 * MIB);
	AP_CHECK_EQ_U64(r.prefix_pages, 4);
	AP_CHECK(region_contains(&r, (void *)r.base));
	AP_CHECK(region_contains(&r, (void *)(r.base + r.size - 1)));
	AP_CHECK(!region_contains(&r, (void *)(r.base + r.size)));
	AP_CHECK(!region_contains(&r, (void *)(r.base - 1)));
	AP_CHECK(!region_contains(&r, NULL));
	/* The prefix is writable (the runtime's bootstrap pool lives there). */
	memset((void *)r.base, 0x5a, 4 * page());
	/* ... and is never handed out, nor a block to free. */
	size_t usable = 0;
	void *p = region_alloc(&r, 1, 0, false, &usable);
	AP_CHECK(p != NULL);
	AP_CHECK((uintptr_t)p >= r.base + 4 * page());
	AP_CHECK(!region_free(&r, (void *)r.base, NULL));
	AP_CHECK(region_free(&r, p, NULL));
	region_destroy(&r);
}

AP_TEST(retiring_keeps_only_the_prefix)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 2 * page()), 0);
	uintptr_t base = r.base;
	region_retire(&r);
	AP_CHECK_EQ_U64(r.size, 0);
	AP_CHECK_EQ_U64(r.base, base);
	AP_CHECK(!region_contains(&r, (void *)base));
	memset((void *)base, 1, 2 * page()); /* the prefix is still mapped */
	AP_CHECK(region_alloc(&r, 10, 0, false, NULL) == NULL);
	AP_CHECK(!region_free(&r, (void *)(base + 4 * page()), NULL));
	/* The rest is unmapped: the address space can be mapped again. */
	void *m = mmap((void *)(base + 4 * page()), page(), PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	AP_CHECK(m == (void *)(base + 4 * page()));
	munmap(m, page());
	region_retire(&r); /* again: nothing to do */
	munmap((void *)base, 2 * page());
	region_destroy(&r);
}

AP_TEST(bad_init_arguments_are_refused)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, MIB, 2 * MIB, 0), AP_EINVAL); /* want < min */
	AP_CHECK_EQ_U64(r.size, 0);
	AP_CHECK(region_alloc(&r, 10, 0, false, NULL) == NULL);
	AP_CHECK(!region_free(&r, (void *)16, NULL));
	region_destroy(&r);
	AP_CHECK_EQ_INT(region_init(&r, MIB, MIB, MIB), AP_EINVAL); /* prefix fills it */
	region_destroy(&r);
	AP_CHECK_EQ_INT(region_init(&r, SIZE_MAX, MIB, 0), AP_EINVAL); /* overflow */
	region_destroy(&r);
	AP_CHECK_EQ_INT(region_init(&r, 0, 0, 0), AP_EINVAL);
	region_destroy(&r);
}

AP_TEST(refused_reservation_falls_back_to_smaller_sizes)
{
	/* 2^62 bytes exceeds any x86-64 user address space (47 bits), so the
	 * first tries fail and a quarter at a time leads to one that fits. */
	region r;
	AP_CHECK_EQ_INT(region_init(&r, (size_t)1 << 62, 64 * MIB, 0), 0);
	AP_CHECK(r.size < ((size_t)1 << 47));
	AP_CHECK(r.size >= 64 * MIB);
	void *p = region_alloc(&r, 100, 0, false, NULL);
	AP_CHECK(p != NULL);
	AP_CHECK(region_free(&r, p, NULL));
	region_destroy(&r);
}

AP_TEST(blocks_are_page_rounded_zero_and_writable)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	size_t ps = page();
	size_t sizes[] = { 1, ps - 1, ps, ps + 1, 5 * ps, 16 * ps, 16 * ps + 1, 1000 * ps + 7 };
	void *blocks[sizeof sizes / sizeof sizes[0]];
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t usable = 0;
		unsigned char *p = region_alloc(&r, sizes[i], 0, false, &usable);
		AP_CHECK(p != NULL);
		AP_CHECK_EQ_U64((uintptr_t)p % ps, 0);
		AP_CHECK_EQ_U64(usable, (sizes[i] + ps - 1) / ps * ps);
		for (size_t j = 0; j < usable; j += 511)
			AP_CHECK(p[j] == 0);
		AP_CHECK(p[usable - 1] == 0);
		memset(p, 0xee, usable);
		size_t u2 = 0;
		AP_CHECK(region_get(&r, p, NULL, &u2));
		AP_CHECK_EQ_U64(u2, usable);
		blocks[i] = p;
	}
	AP_CHECK_EQ_U64(r.live, sizeof sizes / sizeof sizes[0]);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		AP_CHECK(region_free(&r, blocks[i], NULL));
	AP_CHECK_EQ_U64(r.live, 0);
	AP_CHECK_EQ_U64(r.committed, 0);
	region_destroy(&r);
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (p[j])
			return false;
	return true;
}

AP_TEST(freed_runs_are_reused_warm_and_zeroed_on_request)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	size_t ps = page();
	AP_CHECK_EQ_U64(r.cache_floor, REGION_CACHE_FLOOR / ps);
	unsigned char *p = region_alloc(&r, 3 * ps, 0, false, NULL);
	AP_CHECK(p != NULL);
	memset(p, 0xff, 3 * ps);
	size_t bump = r.bump;
	AP_CHECK(region_free(&r, p, NULL));
	AP_CHECK_EQ_U64(r.cached, 3); /* kept committed, within the budget */
	AP_CHECK(!region_get(&r, p, NULL, NULL));
	AP_CHECK(!region_free(&r, p, NULL)); /* double free: refused */
	/* Same class (3 pages): the same run comes back, warm (its old data
	 * may remain), without moving the bump pointer. */
	unsigned char *q = region_alloc(&r, 2 * ps + 1, 0, false, NULL);
	AP_CHECK(q == p);
	AP_CHECK_EQ_U64(r.bump, bump);
	AP_CHECK_EQ_U64(r.cached, 0);
	AP_CHECK(q[0] == 0xff); /* not given back: no system call was made */
	AP_CHECK(region_free(&r, q, NULL));
	/* With zero (calloc) it is zero up to the requested size. */
	q = region_alloc(&r, 2 * ps + 1, 0, true, NULL);
	AP_CHECK(q == p);
	AP_CHECK(all_zero(q, 2 * ps + 1));
	memset(q, 0xff, 3 * ps);
	AP_CHECK(region_free(&r, q, NULL));
	/* A different class does not take it. */
	unsigned char *s = region_alloc(&r, ps, 0, false, NULL);
	AP_CHECK(s != NULL && s != p);
	AP_CHECK(region_free(&r, s, NULL));
	/* Past the budget pages are given back: a reused run reads zero even
	 * without asking (MADV_DONTNEED on private anonymous memory). */
	r.cache_floor = 0; /* and nothing live: the budget is 0 */
	q = region_alloc(&r, 3 * ps, 0, false, NULL); /* the cached run */
	AP_CHECK(q == p);
	memset(q, 0xee, 3 * ps);
	AP_CHECK(region_free(&r, q, NULL));
	AP_CHECK_EQ_U64(r.cached, 0); /* s's page too: the budget covers all */
	q = region_alloc(&r, 3 * ps, 0, false, NULL);
	AP_CHECK(q == p);
	AP_CHECK_MSG(all_zero(q, 3 * ps), "a run given back came back dirty");
	AP_CHECK(region_free(&r, q, NULL));
	/* Power-of-two classes: 17..32 pages share one; a 20-page block can
	 * reuse the run of a 30-page one, given back (budget 0): 20 pages. */
	unsigned char *big = region_alloc(&r, 30 * ps, 0, false, NULL);
	AP_CHECK(big != NULL);
	AP_CHECK(region_free(&r, big, NULL));
	size_t usable = 0;
	unsigned char *b2 = region_alloc(&r, 20 * ps, 0, false, &usable);
	AP_CHECK(b2 == big);
	AP_CHECK_EQ_U64(usable, 20 * ps);
	AP_CHECK_EQ_U64(r.committed, 20);
	AP_CHECK(region_free(&r, b2, NULL));
	/* ... and when cached, the rest of the run is the block's slack:
	 * still resident, not part of its usable size. */
	r.cache_floor = 64;
	b2 = region_alloc(&r, 30 * ps, 0, false, NULL);
	AP_CHECK(b2 == big);
	AP_CHECK(region_free(&r, b2, NULL));
	b2 = region_alloc(&r, 20 * ps, 0, true, &usable);
	AP_CHECK(b2 == big);
	AP_CHECK_EQ_U64(usable, 20 * ps);
	AP_CHECK_EQ_U64(r.slack, 10);
	AP_CHECK(all_zero(b2, 20 * ps));
	AP_CHECK(region_free(&r, b2, NULL));
	/* A cached run needed at an aligned offset is given back first. */
	r.cache_floor = 1024;
	unsigned char *a = region_alloc(&r, 40 * ps, 0, false, NULL);
	AP_CHECK(a != NULL);
	memset(a, 0x77, 40 * ps);
	AP_CHECK(region_free(&r, a, NULL));
	size_t al = 64 * ps;
	unsigned char *a2 = region_alloc(&r, 2 * ps, al, true, &usable);
	AP_CHECK(a2 != NULL);
	AP_CHECK_EQ_U64((uintptr_t)a2 % al, 0);
	AP_CHECK(all_zero(a2, usable));
	AP_CHECK(region_free(&r, a2, NULL));
	region_destroy(&r);
}

AP_TEST(records_live_in_the_side_table)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	void *p = region_alloc(&r, 100, 0, false, NULL);
	void *q = region_alloc(&r, 100, 0, false, NULL);
	AP_CHECK(p && q);
	sample_rec rec = { .site = NULL, .weight = 2.5, .u = 7, .usable = 4096, .t_ns = 99 };
	AP_CHECK(region_set_rec(&r, p, &rec));
	rec.weight = 8.0;
	AP_CHECK(region_set_rec(&r, q, &rec));
	sample_rec out;
	AP_CHECK(region_get(&r, p, &out, NULL));
	AP_CHECK(out.weight == 2.5 && out.u == 7 && out.t_ns == 99);
	memset(&out, 0, sizeof out);
	AP_CHECK(region_free(&r, q, &out));
	AP_CHECK(out.weight == 8.0);
	/* Interior and unaligned pointers are not blocks. */
	AP_CHECK(!region_set_rec(&r, (char *)p + 1, &rec));
	AP_CHECK(!region_get(&r, (char *)p + 16, NULL, NULL));
	AP_CHECK(!region_free(&r, (char *)p + 8, NULL));
	AP_CHECK(!region_free(&r, (void *)(r.base + r.size - page()), NULL));
	AP_CHECK(region_get(&r, p, &out, NULL)); /* still live after those */
	AP_CHECK(region_free(&r, p, NULL));
	region_destroy(&r);
}

AP_TEST(alignment_above_the_page_is_honoured)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 256 * MIB, 256 * MIB, page()), 0);
	size_t ps = page();
	for (size_t align = 16; align <= 4 * MIB; align <<= 1) {
		size_t usable = 0;
		unsigned char *p = region_alloc(&r, 1000, align, false, &usable);
		AP_CHECK_MSG(p != NULL, "align %zu", align);
		AP_CHECK_MSG((uintptr_t)p % align == 0, "align %zu: %p", align, (void *)p);
		AP_CHECK_EQ_U64(usable, ps);
		p[0] = 1;
		p[usable - 1] = 2;
		AP_CHECK(region_get(&r, p, NULL, NULL));
		AP_CHECK(region_free(&r, p, NULL));
	}
	/* Not a power of two: refused (the caller asks the real allocator). */
	AP_CHECK(region_alloc(&r, 10, 3 * ps, false, NULL) == NULL);
	AP_CHECK(region_alloc(&r, 10, 48, false, NULL) == NULL);
	/* Larger than the range itself. */
	AP_CHECK(region_alloc(&r, 10, (size_t)1 << 40, false, NULL) == NULL);
	AP_CHECK(region_alloc(&r, SIZE_MAX, 0, false, NULL) == NULL);
	AP_CHECK(region_alloc(&r, SIZE_MAX - 5, 1, false, NULL) == NULL);
	AP_CHECK_EQ_U64(r.live, 0);
	region_destroy(&r);
}

AP_TEST(exhaustion_refuses_and_frees_make_room_again)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 4 * MIB, 4 * MIB, 0), 0);
	size_t ps = page(), n = r.npages, got = 0;
	void *blocks[4096];
	AP_CHECK(n <= 4096);
	for (;;) {
		void *p = region_alloc(&r, ps, 0, false, NULL);
		if (!p)
			break;
		blocks[got++] = p;
		AP_CHECK(got <= n);
	}
	AP_CHECK_EQ_U64(got, n); /* every page served, then a refusal */
	AP_CHECK(r.refused >= 1);
	AP_CHECK(region_alloc(&r, 1, 0, false, NULL) == NULL);
	/* A run too large for what is left is refused at once. */
	AP_CHECK(region_alloc(&r, 8 * MIB, 0, false, NULL) == NULL);
	AP_CHECK(region_free(&r, blocks[got / 2], NULL));
	void *again = region_alloc(&r, 10, 0, false, NULL);
	AP_CHECK(again == blocks[got / 2]);
	/* A 2-page request has no free run of its class and no fresh pages. */
	AP_CHECK(region_alloc(&r, ps + 1, 0, false, NULL) == NULL);
	for (size_t i = 0; i < got; i++)
		AP_CHECK(region_free(&r, blocks[i], NULL));
	region_destroy(&r);
}

AP_TEST(the_accessible_part_grows_in_steps_and_a_failed_step_gives_back)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	size_t ps = page(), bump = r.bump;
	AP_CHECK_EQ_U64(r.rw_pages, 0);
	r.fail_commit = 1;
	AP_CHECK(region_alloc(&r, 100, 0, false, NULL) == NULL);
	AP_CHECK_EQ_U64(r.bump, bump); /* fresh run returned to the bump */
	AP_CHECK_EQ_U64(r.live, 0);
	AP_CHECK_EQ_U64(r.rw_pages, 0);
	unsigned char *p = region_alloc(&r, 100, 0, false, NULL);
	AP_CHECK(p != NULL);
	AP_CHECK_EQ_U64(r.rw_pages, REGION_RW_STEP); /* one step, not one page */
	/* Further fresh runs inside the step need no system call: the hook
	 * (which counts raises of the mark) is not reached. */
	r.fail_commit = 1;
	unsigned char *q = region_alloc(&r, 10 * ps, 0, false, NULL);
	AP_CHECK(q != NULL);
	AP_CHECK_EQ_U64(r.fail_commit, 1);
	q[10 * ps - 1] = 1;
	/* A run beyond the mark raises it at least to the run's end. */
	r.fail_commit = 0;
	size_t big = 2 * REGION_RW_STEP * ps;
	unsigned char *c = region_alloc(&r, big, 0, false, NULL);
	AP_CHECK(c != NULL);
	AP_CHECK(r.rw_pages >= r.bump);
	c[big - 1] = 1;
	AP_CHECK(region_free(&r, c, NULL));
	AP_CHECK(region_free(&r, q, NULL));
	AP_CHECK(region_free(&r, p, NULL));
	region_destroy(&r);
}

/* 4 threads allocate (half of them zeroed), fill, check and free blocks
 * of varied sizes and alignments at once; each verifies its own blocks keep their contents, so
 * an overlap between threads' runs would show as a corrupted byte. */
#define THREADS 4
#define ROUNDS 400
#define LIVE 24

struct worker_arg {
	region *r;
	unsigned id;
	int errors;
};

static void *worker(void *vp)
{
	struct worker_arg *a = vp;
	size_t ps = page();
	unsigned char *live[LIVE] = { 0 };
	size_t len[LIVE] = { 0 };
	uint64_t x = 0x9E3779B97F4A7C15ULL * (a->id + 1);
	for (unsigned i = 0; i < ROUNDS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned k = (unsigned)(x % LIVE);
		if (live[k]) {
			unsigned char tag = (unsigned char)(a->id * 31 + k);
			for (size_t j = 0; j < len[k]; j += 97)
				if (live[k][j] != tag)
					a->errors++;
			if (!region_free(a->r, live[k], NULL))
				a->errors++;
			live[k] = NULL;
			continue;
		}
		size_t n = 1 + (size_t)((x >> 20) % (40 * ps));
		size_t align = (x >> 40) & 1 ? (size_t)1 << (12 + (x >> 41) % 6) : 0;
		size_t usable = 0;
		bool zero = (x >> 50) & 1;
		unsigned char *p = region_alloc(a->r, n, align, zero, &usable);
		if (!p || usable < n || (align && (uintptr_t)p % align)) {
			a->errors++;
			continue;
		}
		for (size_t j = 0; zero && j < n; j += 97)
			if (p[j] != 0)
				a->errors++;
		memset(p, (unsigned char)(a->id * 31 + k), n);
		sample_rec rec = { .u = a->id, .usable = n };
		if (!region_set_rec(a->r, p, &rec))
			a->errors++;
		live[k] = p;
		len[k] = n;
	}
	for (unsigned k = 0; k < LIVE; k++) {
		if (!live[k])
			continue;
		sample_rec rec;
		if (!region_free(a->r, live[k], &rec) || rec.u != a->id || rec.usable != len[k])
			a->errors++;
	}
	return NULL;
}

/* The runtime's free() tests only the filter: every byte of every block
 * the region hands out must be in a claimed granule by then, and a failed
 * raise of the mark must claim nothing. */
static set_filter claimed;

static bool all_claimed(const unsigned char *p, size_t n)
{
	for (size_t off = 0; off < n; off += (size_t)1 << SET_FILTER_SHIFT)
		if (set_filter_word(&claimed, (uintptr_t)(p + off)) != UINT16_MAX ||
		    !set_filter_any(&claimed, (uintptr_t)(p + off)))
			return false;
	return set_filter_word(&claimed, (uintptr_t)(p + n - 1)) == UINT16_MAX &&
	       set_filter_any(&claimed, (uintptr_t)(p + n - 1));
}

AP_TEST(accessible_pages_are_claimed_before_they_are_handed_out)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 64 * MIB, 64 * MIB, 0), 0);
	memset(&claimed, 0, sizeof claimed);
	r.claim = &claimed;
	size_t ps = page();
	r.fail_commit = 1;
	AP_CHECK(region_alloc(&r, 100, 0, false, NULL) == NULL);
	size_t n = 0;
	for (size_t i = 0; i < SET_FILTER_SIZE; i++)
		n += claimed.word[i] != 0;
	for (size_t i = 0; i < SET_FILTER_SIZE / 64; i++)
		n += claimed.any[i] != 0;
	AP_CHECK_EQ_U64(n, 0);
	unsigned char *p = region_alloc(&r, 100, 0, false, NULL);
	AP_CHECK(p && all_claimed(p, 100));
	/* A run past the first step raises the mark again. */
	size_t big = 3 * REGION_RW_STEP * ps;
	unsigned char *b = region_alloc(&r, big, 0, false, NULL);
	AP_CHECK(b && all_claimed(b, big));
	/* Exactly the accessible part: whole granules from the base up to the
	 * mark's granule, nothing past it. */
	uintptr_t end = r.base + (r.rw_pages << r.page_shift);
	AP_CHECK(all_claimed((const unsigned char *)r.base, end - r.base));
	AP_CHECK_EQ_U64(set_filter_word(&claimed, end + ((uintptr_t)1 << SET_FILTER_SHIFT)), 0);
	AP_CHECK(!set_filter_any(&claimed, end + ((uintptr_t)1 << SET_FILTER_SHIFT)));
	AP_CHECK(region_free(&r, b, NULL));
	AP_CHECK(region_free(&r, p, NULL));
	/* Freed pages stay claimed (the range stays allocprof's). */
	AP_CHECK(all_claimed(b, big));
	region_destroy(&r);
}

AP_TEST(four_threads_share_one_region)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 1024 * MIB, 1024 * MIB, 0), 0);
	pthread_t th[THREADS];
	struct worker_arg args[THREADS];
	for (unsigned i = 0; i < THREADS; i++) {
		args[i] = (struct worker_arg){ .r = &r, .id = i, .errors = 0 };
		AP_CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < THREADS; i++)
		AP_CHECK_MSG(args[i].errors == 0, "thread %u: %d errors", i, args[i].errors);
	AP_CHECK_EQ_U64(r.live, 0);
	AP_CHECK_EQ_U64(r.committed, 0);
	region_destroy(&r);
}
