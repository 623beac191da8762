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

/* Run length of class c (the inverse of class_of). */
static size_t class_run(unsigned c)
{
	return c < REGION_EXACT ? (size_t)c + 1 : (size_t)1 << (c - REGION_EXACT + 5);
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
		r->cache_floor = REGION_CACHE_FLOOR >> r->page_shift;
		r->cache_share = REGION_CACHE_SHARE;
		r->decay = REGION_CACHE_DECAY;
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
		r->st.mprotect_calls++;
		if (mprotect((char *)r->slots + r->slots_rw, slots_to - r->slots_rw,
			     PROT_READ | PROT_WRITE) != 0)
			return false;
		r->slots_rw = slots_to;
	}
	void *at = (void *)(r->base + (r->rw_pages << r->page_shift));
	r->st.mprotect_calls++;
	if (mprotect(at, (to - r->rw_pages) << r->page_shift, PROT_READ | PROT_WRITE) != 0)
		return false;
	if (r->claim)
		set_filter_claim(r->claim, (uintptr_t)at, r->base + (to << r->page_shift));
	r->rw_pages = to;
	return true;
}

/* Give pages back: DONTNEED drops them, and they read as zero next time. */
static void decommit(region *r, size_t first, size_t pages)
{
	void *at = (void *)(r->base + (first << r->page_shift));
	r->st.madvise_calls++;
	madvise(at, pages << r->page_shift, MADV_DONTNEED);
}

size_t region_cache_limit(const region *r)
{
	size_t share = r->cache_share ? r->committed / r->cache_share : 0;
	return share > r->cache_floor ? share : r->cache_floor;
}

static void note_peaks(region *r)
{
	size_t cache = r->cached + r->slack;
	if (cache > r->st.peak_cache)
		r->st.peak_cache = cache;
	if (r->committed + cache > r->st.peak_resident)
		r->st.peak_resident = r->committed + cache;
}

/* ---- free lists: warm runs (class lists and the age list, both doubly
 * linked through the run's first slot) and cold runs (singly linked). */

/* Mark the run at page `first` free; returns its slot and *c its class. */
static region_slot *free_slot(region *r, size_t first, size_t run_pages, unsigned *c)
{
	size_t rp = 0;
	*c = class_of(run_pages, &rp);
	region_slot *s = &r->slots[first];
	memset(s, 0, sizeof *s);
	s->state = REGION_SLOT_FREE;
	s->run_pages = (uint32_t)run_pages;
	return s;
}

static void push_cold(region *r, size_t first, size_t run_pages)
{
	unsigned c;
	region_slot *s = free_slot(r, first, run_pages, &c);
	s->next = r->cold[c];
	r->cold[c] = (uint32_t)(first + 1);
}

static void push_warm(region *r, size_t first, size_t run_pages, size_t res, size_t count)
{
	unsigned c;
	region_slot *s = free_slot(r, first, run_pages, &c);
	s->res_pages = (uint32_t)res;
	s->warm.count = (uint32_t)count;
	s->warm.stamp = r->frees;
	s->next = r->warm[c];
	if (r->warm[c])
		r->slots[r->warm[c] - 1].warm.prev = (uint32_t)(first + 1);
	r->warm[c] = (uint32_t)(first + 1);
	s->warm.older = r->newest;
	if (r->newest)
		r->slots[r->newest - 1].warm.newer = (uint32_t)(first + 1);
	else
		r->oldest = (uint32_t)(first + 1);
	r->newest = (uint32_t)(first + 1);
	r->cached += count;
}

/* Take warm run `first` off its lists; returns its warm extent. */
static size_t unlink_warm(region *r, size_t first)
{
	region_slot *s = &r->slots[first];
	size_t rp = 0;
	unsigned c = class_of(s->run_pages, &rp);
	if (s->warm.prev)
		r->slots[s->warm.prev - 1].next = s->next;
	else
		r->warm[c] = s->next;
	if (s->next)
		r->slots[s->next - 1].warm.prev = s->warm.prev;
	if (s->warm.newer)
		r->slots[s->warm.newer - 1].warm.older = s->warm.older;
	else
		r->newest = s->warm.older;
	if (s->warm.older)
		r->slots[s->warm.older - 1].warm.newer = s->warm.newer;
	else
		r->oldest = s->warm.newer;
	r->cached -= s->warm.count;
	return s->res_pages;
}

/* Give the oldest warm run's pages back: it becomes cold. */
static void evict_oldest(region *r)
{
	size_t first = r->oldest - 1;
	size_t run_pages = r->slots[first].run_pages;
	decommit(r, first, unlink_warm(r, first));
	push_cold(r, first, run_pages);
}

/* Evict until the budget holds and no warm run has waited too long. */
static void trim(region *r)
{
	size_t limit = region_cache_limit(r);
	while (r->oldest && (r->cached + r->slack > limit ||
			     (r->decay && r->frees - r->slots[r->oldest - 1].warm.stamp > r->decay)))
		evict_oldest(r);
}

/* A run for `want` pages of class c: the newest warm run of the class, else
 * a warm run of a class at most twice as long, else a cold run of the
 * class. Sets *first, *res (the warm extent) and *count (how many of it
 * are resident, at most); false when there is none. */
static bool take_free(region *r, unsigned c, size_t run_pages, size_t *first, size_t *res,
		      size_t *count)
{
	for (unsigned k = c; k < REGION_NCLASSES && class_run(k) <= 2 * run_pages; k++) {
		if (r->warm[k]) {
			*first = r->warm[k] - 1;
			*count = r->slots[*first].warm.count;
			*res = unlink_warm(r, *first);
			r->st.warm_allocs++;
			return true;
		}
	}
	if (!r->cold[c])
		return false;
	*first = r->cold[c] - 1;
	r->cold[c] = r->slots[*first].next;
	*res = *count = 0;
	r->st.cold_allocs++;
	return true;
}

/*
 * Of the `pages` pages from page `at`, how many are resident: mincore for
 * REGION_PROBE_PAGES pages or more (in steps, on a small buffer), else
 * (and when mincore fails, as under a seccomp filter) all of them.
 */
static size_t resident_count(region *r, size_t at, size_t pages)
{
	if (pages < REGION_PROBE_PAGES)
		return pages;
	unsigned char vec[1024];
	size_t k = 0;
	for (size_t done = 0; done < pages;) {
		size_t step = pages - done < sizeof vec ? pages - done : sizeof vec;
		r->st.mincore_calls++;
		if (mincore((void *)(r->base + ((at + done) << r->page_shift)),
			    step << r->page_shift, vec) != 0)
			return pages;
		for (size_t i = 0; i < step; i++)
			k += vec[i] & 1;
		done += step;
	}
	return k;
}

/* The block at page `at` needs `need` pages and has an extent of `res`
 * pages from its start, of which at most `known` are resident: keep the
 * excess as slack while the budget allows (counting at most `known` of it,
 * *slack_count), else give it back. Returns the extent kept. */
static size_t settle_excess(region *r, size_t at, size_t need, size_t res, size_t known,
			    size_t *slack_count)
{
	*slack_count = 0;
	if (res <= need)
		return need;
	size_t excess = res - need, count = excess < known ? excess : known;
	if (r->cached + r->slack + count <= region_cache_limit(r)) {
		r->slack += count;
		*slack_count = count;
		return res;
	}
	decommit(r, at + need, excess);
	return need;
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
	size_t first, res = 0, res_count = 0;
	bool fresh = false;
	if (take_free(r, c, run_pages, &first, &res, &res_count)) {
		run_pages = r->slots[first].run_pages;
	} else if (run_pages <= r->npages - r->bump) {
		first = r->bump;
		r->bump += run_pages;
		fresh = true;
	} else {
		goto refuse;
	}
	uintptr_t start = r->base + (first << r->page_shift);
	size_t off = (((start + align - 1) & ~(uintptr_t)(align - 1)) - start) >> r->page_shift;
	if (res && off) {
		/* Warm pages sit at the run's start, the block elsewhere. */
		decommit(r, first, res);
		res = 0;
	}
	size_t at = first + off;
	if (fresh && !commit_to(r, first + run_pages)) {
		r->bump = first; /* give the run back to the bump pointer */
		goto refuse;
	}
	if (fresh)
		r->st.fresh_allocs++;
	if (off)
		memset(&r->slots[first], 0, sizeof r->slots[first]);
	r->committed += need;
	size_t slack_count;
	size_t kept = settle_excess(r, at, need, res, res_count, &slack_count);
	region_slot *s = &r->slots[at];
	memset(s, 0, sizeof *s);
	s->slack_count = (uint32_t)slack_count;
	s->state = REGION_SLOT_LIVE;
	s->run_pages = (uint32_t)run_pages;
	s->off_pages = (uint32_t)off;
	s->used_pages = (uint32_t)need;
	s->res_pages = (uint32_t)kept;
	r->live++;
	note_peaks(r);
	pthread_mutex_unlock(&r->lock);
	void *p = (void *)(r->base + (at << r->page_shift));
	if (zero && res) /* only warm pages can hold old data */
		memset(p, 0, n < (res << r->page_shift) ? n : res << r->page_shift);
	if (usable)
		*usable = need << r->page_shift;
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

void region_copy_out(region *r, void *dst, const void *src, size_t len)
{
	if (len < REGION_COPY_CHUNK) {
		memcpy(dst, src, len);
		return;
	}
	/* src is page-aligned (a region block): every chunk but the last
	 * covers whole pages, given back once copied. */
	for (size_t done = 0; done < len;) {
		size_t step = len - done < REGION_COPY_CHUNK ? len - done : REGION_COPY_CHUNK;
		memcpy((char *)dst + done, (const char *)src + done, step);
		if (step == REGION_COPY_CHUNK) {
			pthread_mutex_lock(&r->lock);
			decommit(r, ((uintptr_t)src + done - r->base) >> r->page_shift,
				 step >> r->page_shift);
			pthread_mutex_unlock(&r->lock);
		}
		done += step;
	}
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

/*
 * How many warm runs keeping `res` more pages warm would give back (oldest
 * first) to stay within the budget: 0, 1, or 2 standing for "more than
 * one". Each give-back is a madvise, and in a threaded program a TLB
 * shootdown on every other CPU running it: a freed run that would push
 * out several older ones goes cold itself instead (one call), so a large
 * run does not flush the small ones that are reused most.
 */
static unsigned evictions_for(const region *r, size_t res)
{
	size_t limit = region_cache_limit(r), have = r->cached + r->slack + res;
	unsigned k = 0;
	for (uint32_t o = r->oldest; o && have > limit && k < 2; o = r->slots[o - 1].warm.newer) {
		have -= r->slots[o - 1].warm.count;
		k++;
	}
	return have > limit ? 2 : k;
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
	size_t res = s->res_pages;
	r->live--;
	r->committed -= s->used_pages;
	r->slack -= s->slack_count;
	r->frees++;
	/* Warm pages must be the run's first: a block at an offset (aligned
	 * above the page), a run larger than the whole budget, and one that
	 * would push out more than one warm run go cold at once, without
	 * evicting the warm runs that do fit. A run is counted whole while
	 * that fits without evicting anything; only when not is mincore
	 * asked how much of it is resident. */
	size_t count = res;
	if (s->off_pages == 0 && r->cached + r->slack + res > region_cache_limit(r))
		count = resident_count(r, at, res);
	bool warm = s->off_pages == 0 && r->slack + count <= region_cache_limit(r) &&
		    evictions_for(r, count) <= 1;
	memset(s, 0, sizeof *s);
	if (warm) {
		push_warm(r, first, run_pages, res, count);
	} else {
		decommit(r, at, res);
		push_cold(r, first, run_pages);
	}
	trim(r);
	note_peaks(r);
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
		/* The whole run is accessible: growing needs no system call.
		 * The block's old slack is counted afresh: pages beyond the
		 * new size stay as slack within the budget, else go back (and
		 * then read as zero). */
		size_t at = (size_t)(s - r->slots), used = s->used_pages, res = s->res_pages;
		size_t slack_count;
		r->slack -= s->slack_count;
		r->committed = r->committed - used + need;
		s->used_pages = (uint32_t)need;
		s->res_pages = (uint32_t)settle_excess(r, at, need, res, res, &slack_count);
		s->slack_count = (uint32_t)slack_count;
		trim(r); /* a smaller block lowers the budget */
		note_peaks(r);
		if (usable)
			*usable = need << r->page_shift;
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

void region_get_stats(region *r, region_stats *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->st;
	out->committed = r->committed;
	out->cached = r->cached;
	out->slack = r->slack;
	out->limit = region_cache_limit(r);
	out->rw_bytes = r->size ? (r->rw_pages - r->prefix_pages) << r->page_shift : 0;
	out->slots_bytes = r->slots_rw;
	pthread_mutex_unlock(&r->lock);
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
