/*
 * region.c: page-run allocator over a reserved address range, for the
 * sampled blocks of the runtime (design (2) of the free() fast path; the
 * why and the layout are in region.h).
 */
#include "region.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static size_t sys_page(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (size_t)ps : 4096;
}

/* Class of a run of `pages` pages (>= 1), and the run length it stands for.
 * Returns REGION_NCLASSES when no class is large enough. */
static unsigned class_of(size_t pages, size_t *run_pages)
{
	if (pages <= REGION_EXACT) {
		*run_pages = pages;
		return (unsigned)pages - 1;
	}
	unsigned k = 5; /* 2^5 = 32 pages: the first power-of-two class */
	while (((size_t)1 << k) < pages) {
		k++;
		if (k >= 63)
			return REGION_NCLASSES;
	}
	unsigned c = REGION_EXACT + (k - 5);
	if (c >= REGION_NCLASSES)
		return REGION_NCLASSES;
	*run_pages = (size_t)1 << k;
	return c;
}

int region_init(region *r, size_t want, size_t min, size_t prefix)
{
	memset(r, 0, sizeof *r);
	pthread_mutex_init(&r->lock, NULL);
	r->page = sys_page();
	while (((size_t)1 << r->page_shift) < r->page)
		r->page_shift++;
	size_t pm = r->page - 1;
	if (want < min || want > SIZE_MAX - pm || prefix > SIZE_MAX - pm)
		return AP_EINVAL;
	want = (want + pm) & ~pm;
	min = (min + pm) & ~pm;
	size_t prefix_len = (prefix + pm) & ~pm;
	if (min == 0 || prefix_len >= min)
		return AP_EINVAL;
	/* Under an address-space limit the reservation counts as if used:
	 * take at most a 1/REGION_AS_SHARE of it (range and side table). */
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		size_t cap = ((size_t)rl.rlim_cur / REGION_AS_SHARE) & ~pm;
		if (want > cap)
			want = cap;
		if (min > want)
			min = want;
		if (prefix_len >= min)
			return AP_ENOMEM;
	}
	for (size_t len = want; len >= min && len > prefix_len; len = (len / 4) & ~pm) {
		size_t npages = len >> r->page_shift;
		/* Page numbers are 32-bit in the slots (links are page + 1). */
		if (npages >= UINT32_MAX)
			continue;
		/* PROT_NONE and no MAP_NORESERVE: neither mapping is charged
		 * to the commit limit until commit_to makes part of it
		 * writable, and then the kernel checks that part as it would
		 * check the allocator's own mmap. */
		void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		size_t slen = (npages * sizeof(region_slot) + pm) & ~pm;
		void *s = mmap(NULL, slen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED) {
			munmap(p, len);
			continue;
		}
		if (prefix_len && mprotect(p, prefix_len, PROT_READ | PROT_WRITE) != 0) {
			munmap(s, slen);
			munmap(p, len);
			continue;
		}
		r->base = (uintptr_t)p;
		r->size = len;
		r->npages = npages;
		r->prefix_pages = prefix_len >> r->page_shift;
		r->bump = r->prefix_pages;
		r->rw_pages = r->prefix_pages;
		r->cache_limit = REGION_CACHE_BYTES >> r->page_shift;
		r->slots = s;
		r->slots_len = slen;
		return 0;
	}
	return AP_ENOMEM;
}

void region_destroy(region *r)
{
	if (r->size) {
		munmap((void *)r->base, r->size);
		munmap(r->slots, r->slots_len);
	}
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof *r);
}

void region_retire(region *r)
{
	if (!r->size)
		return;
	size_t keep = r->prefix_pages << r->page_shift;
	munmap((void *)(r->base + keep), r->size - keep);
	munmap(r->slots, r->slots_len);
	r->slots = NULL;
	r->slots_len = 0;
	r->size = 0;
	r->npages = 0;
	r->bump = 0;
}

/* Make pages up to index `end` accessible: the high-water mark moves up
 * by at least REGION_RW_STEP pages at a time, so most fresh runs need no
 * system call and the accessible part stays one mapping. Test hook aside,
 * mprotect fails only with ENOMEM (commit limit under overcommit_memory=2,
 * or the kernel's mapping count). */
static bool commit_to(region *r, size_t end)
{
	if (end <= r->rw_pages)
		return true;
	if (r->fail_commit && --r->fail_commit == 0)
		return false;
	size_t to = r->rw_pages + REGION_RW_STEP;
	if (to < end)
		to = end;
	if (to > r->npages)
		to = r->npages;
	/* The side table's slots for the new pages first: a slot is touched
	 * only once its page has been handed out (below bump <= rw_pages). */
	size_t pm = r->page - 1;
	size_t slots_to = (to * sizeof(region_slot) + pm) & ~pm;
	if (slots_to > r->slots_rw) {
		if (mprotect((char *)r->slots + r->slots_rw, slots_to - r->slots_rw,
			     PROT_READ | PROT_WRITE) != 0)
			return false;
		r->slots_rw = slots_to;
	}
	void *at = (void *)(r->base + (r->rw_pages << r->page_shift));
	if (mprotect(at, (to - r->rw_pages) << r->page_shift, PROT_READ | PROT_WRITE) != 0)
		return false;
	r->rw_pages = to;
	return true;
}

/* Give pages back: DONTNEED drops them, and they read as zero next time. */
static void decommit(region *r, size_t first, size_t pages)
{
	void *at = (void *)(r->base + (first << r->page_shift));
	madvise(at, pages << r->page_shift, MADV_DONTNEED);
}

/* Put the run at page `first` on class c's free list, `cached` of its
 * first pages still committed. */
static void push_free(region *r, unsigned c, size_t first, size_t run_pages, size_t cached)
{
	region_slot *s = &r->slots[first];
	memset(s, 0, sizeof *s);
	s->state = REGION_SLOT_FREE;
	s->run_pages = (uint32_t)run_pages;
	s->used_pages = (uint32_t)cached;
	s->next = r->heads[c];
	r->heads[c] = (uint32_t)(first + 1);
	r->cached += cached;
}

void *region_alloc(region *r, size_t n, size_t align, bool zero, size_t *usable)
{
	return region_alloc_run(r, n, align, zero, 0, usable);
}

void *region_alloc_run(region *r, size_t n, size_t align, bool zero, size_t reserve,
		       size_t *usable)
{
	if (!r->size)
		return NULL;
	if (align == 0)
		align = r->page;
	if (align & (align - 1))
		return NULL;
	size_t pm = r->page - 1;
	if (n == 0)
		n = 1;
	if (n > r->size || align > r->size / 2)
		return NULL;
	size_t need = (n + pm) >> r->page_shift;
	size_t extra = align > r->page ? (align >> r->page_shift) - 1 : 0;
	size_t run_pages = 0, want = need + extra;
	if (reserve <= r->size && ((reserve + pm) >> r->page_shift) > want)
		want = (reserve + pm) >> r->page_shift;
	unsigned c = class_of(want, &run_pages);
	pthread_mutex_lock(&r->lock);
	if (c >= REGION_NCLASSES)
		goto refuse;
	size_t first, cached = 0;
	bool fresh = false;
	if (r->heads[c]) {
		first = r->heads[c] - 1;
		r->heads[c] = r->slots[first].next;
		cached = r->slots[first].used_pages;
		r->cached -= cached;
	} else if (run_pages <= r->npages - r->bump) {
		first = r->bump;
		r->bump += run_pages;
		fresh = true;
	} else {
		goto refuse;
	}
	uintptr_t start = r->base + (first << r->page_shift);
	size_t off = (((start + align - 1) & ~(uintptr_t)(align - 1)) - start) >> r->page_shift;
	if (cached && off) {
		/* Cached pages sit at the run's start, the block elsewhere. */
		decommit(r, first, cached);
		cached = 0;
	}
	size_t at = first + off;
	if (fresh && !commit_to(r, first + run_pages)) {
		if (fresh && r->bump == first + run_pages)
			r->bump = first; /* give the run back to the bump pointer */
		else
			push_free(r, c, first, run_pages, cached);
		goto refuse;
	}
	/* A cached run larger than the block stays whole: usable grows. */
	size_t used = cached > need ? cached : need;
	if (off)
		memset(&r->slots[first], 0, sizeof r->slots[first]);
	region_slot *s = &r->slots[at];
	memset(s, 0, sizeof *s);
	s->state = REGION_SLOT_LIVE;
	s->run_pages = (uint32_t)run_pages;
	s->off_pages = (uint32_t)off;
	s->used_pages = (uint32_t)used;
	r->live++;
	r->committed += used;
	pthread_mutex_unlock(&r->lock);
	void *p = (void *)(r->base + (at << r->page_shift));
	if (zero && cached) /* only cached pages can hold old data */
		memset(p, 0, n < (cached << r->page_shift) ? n : cached << r->page_shift);
	if (usable)
		*usable = used << r->page_shift;
	return p;
refuse:
	r->refused++;
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* The live slot of block p, or NULL. Caller holds the lock. */
static region_slot *live_slot(region *r, const void *p)
{
	uintptr_t d = (uintptr_t)p - r->base;
	if (d >= r->size || (d & (r->page - 1)))
		return NULL;
	size_t i = d >> r->page_shift;
	if (i < r->prefix_pages || i >= r->bump || r->slots[i].state != REGION_SLOT_LIVE)
		return NULL;
	return &r->slots[i];
}

bool region_set_rec(region *r, const void *p, const sample_rec *rec)
{
	pthread_mutex_lock(&r->lock);
	region_slot *s = live_slot(r, p);
	if (s)
		s->rec = *rec;
	pthread_mutex_unlock(&r->lock);
	return s != NULL;
}

bool region_get(region *r, const void *p, sample_rec *rec, size_t *usable)
{
	pthread_mutex_lock(&r->lock);
	region_slot *s = live_slot(r, p);
	if (s) {
		if (rec)
			*rec = s->rec;
		if (usable)
			*usable = (size_t)s->used_pages << r->page_shift;
	}
	pthread_mutex_unlock(&r->lock);
	return s != NULL;
}

bool region_free(region *r, void *p, sample_rec *rec_out)
{
	pthread_mutex_lock(&r->lock);
	region_slot *s = live_slot(r, p);
	if (!s) {
		pthread_mutex_unlock(&r->lock);
		return false;
	}
	if (rec_out)
		*rec_out = s->rec;
	size_t at = (size_t)(s - r->slots);
	size_t first = at - s->off_pages, run_pages = s->run_pages;
	size_t used = s->used_pages;
	r->live--;
	r->committed -= used;
	/* Keep the pages for reuse while the budget allows (only blocks at the
	 * start of their run: the cached pages are always a run's first). */
	size_t keep = s->off_pages == 0 && r->cached <= r->cache_limit &&
			      used <= r->cache_limit - r->cached
		      ? used
		      : 0;
	if (!keep)
		decommit(r, at, used);
	memset(s, 0, sizeof *s);
	size_t rp = 0;
	unsigned c = class_of(run_pages, &rp);
	push_free(r, c, first, run_pages, keep);
	pthread_mutex_unlock(&r->lock);
	return true;
}

bool region_resize(region *r, void *p, size_t n, size_t *usable)
{
	pthread_mutex_lock(&r->lock);
	region_slot *s = live_slot(r, p);
	size_t need = n ? (n + r->page - 1) >> r->page_shift : 1;
	bool ok = s && n <= r->size && need <= (size_t)s->run_pages - s->off_pages;
	if (ok) {
		size_t at = (size_t)(s - r->slots), used = s->used_pages;
		/* The whole run is accessible: growing needs no system call.
		 * Shrinking gives the tail's pages back (they read as zero). */
		if (need < used)
			decommit(r, at + need, used - need);
		r->committed = r->committed - used + need;
		s->used_pages = (uint32_t)need;
		if (usable)
			*usable = need << r->page_shift;
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

void region_lock(region *r)
{
	pthread_mutex_lock(&r->lock);
}

void region_unlock(region *r)
{
	pthread_mutex_unlock(&r->lock);
}

void region_reset_lock(region *r)
{
	pthread_mutex_init(&r->lock, NULL);
}
