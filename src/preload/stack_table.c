/*
 * stack_table.c: stack interning and per-site counters (stack_table.h).
 *
 * Two chained hash tables in the arena: stacks keyed by their frames, and
 * sites keyed by (stack, size class, rate). Both double when their load
 * passes 1.
 */
#include "stack_table.h"

#include <stdatomic.h>
#include <string.h>

#include "../lib/hash.h"
#include "allocprof/common.h"
#include "lifebins.h"

#define INIT_BUCKETS 1024

/*
 * The stack this thread interned last, and the table it belongs to (by
 * generation: a table at a recycled address is another table). A program
 * sampled in a loop mostly repeats its last stack, and comparing the
 * frames is cheaper than hashing them; stacks are immutable once interned
 * and live as long as their table, so no lock is needed to compare.
 */
static _Atomic uint64_t table_gens;
static __thread const stack *last_stack;
static __thread uint64_t last_gen;

/* Per frame a multiply and a fold (cheap: every sample hashes its whole
 * stack), then one full finaliser so the bucket bits depend on all frames. */
static uint64_t hash_stack(const uintptr_t *pcs, int depth)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)depth;
	for (int i = 0; i < depth; i++) {
		h = (h ^ (uint64_t)pcs[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return hash_mix64(h);
}

static uint64_t hash_site(const stack *s, uint64_t size_class, uint64_t rate)
{
	return hash_mix64(hash_mix64(s->hash ^ size_class) ^ rate);
}

int table_init(stack_table *t, arena *a)
{
	memset(t, 0, sizeof *t);
	rt_lock_init(&t->lock);
	t->a = a;
	t->gen = atomic_fetch_add(&table_gens, 1) + 1;
	t->stacks = arena_alloc(a, INIT_BUCKETS * sizeof *t->stacks);
	t->sites = arena_alloc(a, INIT_BUCKETS * sizeof *t->sites);
	if (!t->stacks || !t->sites)
		return AP_ENOMEM;
	t->stack_cap = t->site_cap = INIT_BUCKETS;
	const ap_allocator *al = arena_allocator(a);
	if (ap_hist_create(&t->hist_size, TABLE_HIST_SIGBITS, al) != 0 ||
	    ap_hist_create(&t->hist_lifetime, TABLE_HIST_SIGBITS, al) != 0 ||
	    ap_hist_recorder_get(t->hist_size, &t->rec_size) != 0 ||
	    ap_hist_recorder_get(t->hist_lifetime, &t->rec_lifetime) != 0)
		return AP_ENOMEM;
	return 0;
}

/* Double a chained table. Failure to grow is harmless: chains get longer. */
static void grow_stacks(stack_table *t)
{
	size_t cap = t->stack_cap * 2;
	stack **nb = arena_alloc(t->a, cap * sizeof *nb);
	if (!nb)
		return;
	for (size_t i = 0; i < t->stack_cap; i++) {
		stack *s = t->stacks[i];
		while (s) {
			stack *next = s->next;
			size_t j = s->hash & (cap - 1);
			s->next = nb[j];
			nb[j] = s;
			s = next;
		}
	}
	arena_free(t->a, t->stacks);
	t->stacks = nb;
	t->stack_cap = cap;
}

static void grow_sites(stack_table *t)
{
	size_t cap = t->site_cap * 2;
	site **nb = arena_alloc(t->a, cap * sizeof *nb);
	if (!nb)
		return;
	for (size_t i = 0; i < t->site_cap; i++) {
		site *s = t->sites[i];
		while (s) {
			site *next = s->next;
			size_t j = hash_site(s->stk, s->size_class, s->rate) & (cap - 1);
			s->next = nb[j];
			nb[j] = s;
			s = next;
		}
	}
	arena_free(t->a, t->sites);
	t->sites = nb;
	t->site_cap = cap;
}

static stack *intern_stack_hashed(stack_table *t, const uintptr_t *pcs, int depth);

static stack *intern_stack(stack_table *t, const uintptr_t *pcs, int depth)
{
	const stack *l = last_stack;
	if (l && last_gen == t->gen && l->depth == (uint32_t)depth &&
	    memcmp(l->pcs, pcs, (size_t)depth * sizeof *pcs) == 0)
		return (stack *)(uintptr_t)l;
	stack *found = intern_stack_hashed(t, pcs, depth);
	if (found) {
		last_stack = found;
		last_gen = t->gen;
	}
	return found;
}

static stack *intern_stack_hashed(stack_table *t, const uintptr_t *pcs, int depth)
{
	uint64_t h = hash_stack(pcs, depth);
	size_t b = h & (t->stack_cap - 1);
	for (stack *s = t->stacks[b]; s; s = s->next)
		if (s->hash == h && s->depth == (uint32_t)depth &&
		    memcmp(s->pcs, pcs, (size_t)depth * sizeof *pcs) == 0)
			return s;
	stack *s = arena_alloc(t->a, sizeof *s + (size_t)depth * sizeof *pcs);
	if (!s)
		return NULL;
	s->hash = h;
	s->depth = (uint32_t)depth;
	s->id = (uint32_t)++t->nstacks;
	memcpy(s->pcs, pcs, (size_t)depth * sizeof *pcs);
	s->next = t->stacks[b];
	t->stacks[b] = s;
	if (t->nstacks > t->stack_cap)
		grow_stacks(t);
	return s;
}

static site *find_site(stack_table *t, const stack *stk, uint64_t size, uint64_t rate)
{
	uint64_t cls = ap_hist_value_to_key(SITE_SIZE_SIGBITS, size);
	uint64_t h = hash_site(stk, cls, rate);
	size_t b = h & (t->site_cap - 1);
	for (site *s = t->sites[b]; s; s = s->next)
		if (s->stk == stk && s->size_class == cls && s->rate == rate)
			return s;
	site *s = arena_alloc(t->a, sizeof *s);
	if (!s)
		return NULL;
	s->stk = stk;
	s->size_class = cls;
	s->rate = rate;
	s->next = t->sites[b];
	t->sites[b] = s;
	s->all_next = t->all_sites;
	t->all_sites = s;
	if (++t->nsites > t->site_cap)
		grow_sites(t);
	return s;
}

/* Add (sign = +1) or subtract (-1) one sample's contributions, the terms
 * of ap_sample_terms_of with pi = 1/w (written out: COUNT mode's weight
 * can be below 1, outside that function's domain), so a free takes out
 * exactly what its allocation put in. */
static void apply(site_counts *c, double sign, double w, uint64_t size,
		  uint64_t u, uint64_t usable)
{
	double z = (double)size;
	double var_obj = w * w - w; /* (1 - pi) / pi^2 with pi = 1/w */
	double var_space = var_obj * z * z;
	c->objects += sign * w;
	c->space += sign * w * z;
	c->u += sign * (double)u;
	c->objects_var += sign * var_obj;
	c->space_var += sign * var_space;
	c->objects_var2 += sign * var_obj * var_obj;
	c->space_var2 += sign * var_space * var_space;
	c->usable += sign * w * (double)usable;
	bool exact = w == 1.0; /* pi = 1: recorded without sampling error */
	if (sign > 0) {
		c->samples++;
		c->exact += exact;
	} else {
		if (c->samples > 0)
			c->samples--;
		if (exact && c->exact > 0)
			c->exact--;
	}
}

/* The lock makes the table the recorders' only writer: plain adds to a
 * few cache lines, where the shared path's per-CPU stripes took seven
 * atomic read-modify-writes and as many cache misses. */
static void flush_sizes(stack_table *t)
{
	for (uint32_t i = 0; i < t->npend_size; i++)
		ap_hist_recorder_add_weight(t->rec_size, t->pend_size[i].size,
					    t->pend_size[i].w);
	t->npend_size = 0;
}

static void flush_frees(stack_table *t)
{
	for (uint32_t i = 0; i < t->npend_free; i++) {
		const struct table_pend_free *f = &t->pend_free[i];
		if (f->s)
			lifebins_add(t->a, &f->s->life, f->life_ns, f->w, f->size);
		ap_hist_recorder_add_weight(t->rec_lifetime, f->life_ns, f->w);
	}
	t->npend_free = 0;
}

int table_record_alloc_locked(stack_table *t, const uintptr_t *pcs, int depth,
			      uint64_t rate, const ap_sample_info *info,
			      uint64_t usable, sample_rec *rec, table_totals *after)
{
	double w = info->weight;
	uint64_t u = info->size - info->offset;
	stack *stk = intern_stack(t, pcs, depth);
	site *s = stk ? find_site(t, stk, info->size, rate) : NULL;
	if (!s)
		return AP_ENOMEM;
	apply(&s->alloc, 1.0, w, info->size, u, usable);
	apply(&s->inuse, 1.0, w, info->size, u, usable);
	t->tot.alloc_space += w * (double)info->size;
	t->tot.alloc_objects += w;
	t->tot.inuse_space += w * (double)info->size;
	t->tot.inuse_objects += w;
	if (t->tot.inuse_space > t->tot.peak_inuse_space)
		t->tot.peak_inuse_space = t->tot.inuse_space;
	t->tot.samples++;
	if (after) {
		*after = t->tot;
		after->nstacks = t->nstacks;
		after->nsites = t->nsites;
	}
	if (t->npend_size == TABLE_PEND)
		flush_sizes(t);
	t->pend_size[t->npend_size++] = (struct table_pend_size){ info->size, w };
	rec->site = s;
	rec->weight = w;
	rec->size = info->size;
	rec->u = u;
	rec->usable = usable;
	return 0;
}

int table_record_alloc(stack_table *t, const uintptr_t *pcs, int depth,
		       uint64_t rate, const ap_sample_info *info,
		       uint64_t usable, sample_rec *rec, table_totals *after)
{
	rt_lock_acquire(&t->lock);
	int rc = table_record_alloc_locked(t, pcs, depth, rate, info, usable, rec, after);
	rt_lock_release(&t->lock);
	return rc;
}

void table_record_free_locked(stack_table *t, const sample_rec *rec, uint64_t now_ns)
{
	site *s = rec->site;
	if (!s)
		return;
	apply(&s->inuse, -1.0, rec->weight, rec->size, rec->u, rec->usable);
	t->tot.inuse_space -= rec->weight * (double)rec->size;
	t->tot.inuse_objects -= rec->weight;
	t->tot.frees++;
	if (now_ns >= rec->t_ns) {
		if (t->npend_free == TABLE_PEND)
			flush_frees(t);
		t->pend_free[t->npend_free++] = (struct table_pend_free){
			t->life_on ? s : NULL, now_ns - rec->t_ns, rec->size,
			rec->weight };
	}
}

void table_record_free(stack_table *t, const sample_rec *rec, uint64_t now_ns)
{
	rt_lock_acquire(&t->lock);
	table_record_free_locked(t, rec, now_ns);
	rt_lock_release(&t->lock);
}

void table_flush_locked(stack_table *t)
{
	flush_sizes(t);
	flush_frees(t);
}

void table_flush(stack_table *t)
{
	rt_lock_acquire(&t->lock);
	table_flush_locked(t);
	rt_lock_release(&t->lock);
}

/*
 * The size a site reports: the HT-weighted average of its class's sizes
 * (space / objects, both estimates of the class's allocations), kept inside
 * the class's bounds against rounding; exactly the size when the class saw
 * only one.
 */
static uint64_t site_size(const site *s)
{
	uint64_t lo = 0, hi = UINT64_MAX;
	(void)ap_hist_key_bounds(SITE_SIZE_SIGBITS, (uint32_t)s->size_class, &lo, &hi);
	/* a fork child's inherited site has an empty alloc view: in-use's */
	const site_counts *c = s->alloc.objects > 0 ? &s->alloc : &s->inuse;
	double avg = c->objects > 0 ? c->space / c->objects : 0;
	if (!(avg > (double)lo)) /* also NaN */
		return lo;
	if (avg >= (double)hi)
		return hi;
	return (uint64_t)(avg + 0.5);
}

int table_snapshot(stack_table *t, arena *a, site_snap **out, size_t *n,
		   table_totals *tot)
{
	rt_lock_acquire(&t->lock);
	size_t cnt = t->nsites;
	site_snap *v = arena_alloc(a, (cnt ? cnt : 1) * sizeof *v);
	if (!v) {
		rt_lock_release(&t->lock);
		return AP_ENOMEM;
	}
	size_t i = 0;
	for (const site *s = t->all_sites; s && i < cnt; s = s->all_next, i++) {
		v[i].stk = s->stk;
		v[i].size = site_size(s);
		v[i].rate = s->rate;
		v[i].alloc = s->alloc;
		v[i].inuse = s->inuse;
	}
	if (tot) {
		*tot = t->tot;
		tot->nstacks = t->nstacks;
		tot->nsites = t->nsites;
	}
	rt_lock_release(&t->lock);
	*out = v;
	*n = i;
	return 0;
}

void table_totals_get(stack_table *t, table_totals *tot)
{
	rt_lock_acquire(&t->lock);
	*tot = t->tot;
	tot->nstacks = t->nstacks;
	tot->nsites = t->nsites;
	rt_lock_release(&t->lock);
}

void table_record_drop_locked(stack_table *t, const sample_rec *rec)
{
	site *s = rec->site;
	if (!s)
		return;
	apply(&s->alloc, -1.0, rec->weight, rec->size, rec->u, rec->usable);
	apply(&s->inuse, -1.0, rec->weight, rec->size, rec->u, rec->usable);
	double b = rec->weight * (double)rec->size;
	t->tot.alloc_space -= b;
	t->tot.alloc_objects -= rec->weight;
	t->tot.inuse_space -= b;
	t->tot.inuse_objects -= rec->weight;
	if (t->tot.samples > 0)
		t->tot.samples--;
}

void table_record_drop(stack_table *t, const sample_rec *rec)
{
	rt_lock_acquire(&t->lock);
	table_record_drop_locked(t, rec);
	rt_lock_release(&t->lock);
}

void table_reset_alloc(stack_table *t)
{
	rt_lock_acquire(&t->lock);
	for (site *s = t->all_sites; s; s = s->all_next)
		memset(&s->alloc, 0, sizeof s->alloc);
	t->tot.alloc_space = 0;
	t->tot.alloc_objects = 0;
	t->tot.samples = 0;
	t->npend_size = 0; /* the parent's, like the rest of the view */
	rt_lock_release(&t->lock);
	ap_hist_reset(t->hist_size); /* HT-weighted sizes of allocations */
}

void table_lock(stack_table *t)
{
	rt_lock_acquire(&t->lock);
}

void table_unlock(stack_table *t)
{
	rt_lock_release(&t->lock);
}
