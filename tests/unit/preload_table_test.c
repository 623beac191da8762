/*
 * preload_table_test.c: stack interning, the additive per-site counters
 * (src/preload/stack_table.h) and the profile the dumper builds from them
 * (src/preload/dump.h), fed a fixed sequence of fake samples whose expected
 * Horvitz-Thompson values are computed here independently.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "allocprof/hist.h"
#include "allocprof/profile.h"
#include "aptest.h"
#include "dump.h"
#include "lifebins.h"
#include "stack_table.h"

static ap_sample_info info_for(uint64_t size, uint64_t offset, double rate)
{
	ap_sample_info in;
	memset(&in, 0, sizeof in);
	in.size = size;
	in.offset = offset;
	in.count = 1;
	in.prob = -expm1((double)size * log1p(-1.0 / rate));
	in.weight = 1.0 / in.prob;
	return in;
}

static const uintptr_t stack_a[] = { 0x1000, 0x2000, 0x3000 };
static const uintptr_t stack_b[] = { 0x5000 };

AP_TEST(same_frames_intern_to_one_stack_and_sizes_split_sites)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	ap_sample_info i100 = info_for(100, 10, 1000), i200 = info_for(200, 0, 1000);
	sample_rec r1, r2, r3, r4;
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i100, 112, &r1, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i100, 112, &r2, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i200, 208, &r3, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 4000, &i200, 208, &r4, NULL), 0);
	AP_CHECK(r1.site == r2.site);
	AP_CHECK(r1.site != r3.site); /* another size */
	AP_CHECK(r3.site != r4.site); /* another rate */
	AP_CHECK(r1.site->stk == r3.site->stk);
	table_totals tot;
	table_totals_get(&t, &tot);
	AP_CHECK_EQ_U64(tot.nstacks, 1);
	AP_CHECK_EQ_U64(tot.nsites, 3);
	AP_CHECK_EQ_U64(tot.samples, 4);
	AP_CHECK_EQ_U64(r1.u, 90);
	AP_CHECK_EQ_U64(r1.usable, 112);
}

/*
 * Sites hold a size class, not one size: 100..103 share a class at
 * SITE_SIZE_SIGBITS = 4 (16 classes per power of two), sizes below 32 do
 * not share, and a stack allocating thousands of distinct sizes makes a
 * bounded number of sites. The counters are still exact sums of each
 * sample's own contributions, and a free takes out exactly what its own
 * size put in.
 */
AP_TEST(sizes_of_one_class_share_a_site_with_exact_sums)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	const double rate = 1000;
	ap_sample_info i100 = info_for(100, 0, rate), i103 = info_for(103, 0, rate);
	ap_sample_info i104 = info_for(104, 0, rate);
	ap_sample_info i20 = info_for(20, 0, rate), i21 = info_for(21, 0, rate);
	sample_rec r100, r103, r104, r20, r21;
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i100, 112, &r100, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i103, 112, &r103, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i104, 112, &r104, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i20, 32, &r20, NULL), 0);
	AP_CHECK_EQ_INT(table_record_alloc(&t, stack_a, 3, 1000, &i21, 32, &r21, NULL), 0);
	AP_CHECK(r100.site == r103.site);
	AP_CHECK(r100.site != r104.site);
	AP_CHECK(r20.site != r21.site);
	AP_CHECK_EQ_U64(r103.size, 103);

	/* The shared site's size is the HT-weighted average of 100 and 103. */
	double w100 = i100.weight, w103 = i103.weight;
	double avg = (w100 * 100 + w103 * 103) / (w100 + w103);
	site_snap *snap;
	size_t n;
	AP_CHECK_EQ_INT(table_snapshot(&t, &a, &snap, &n, NULL), 0);
	AP_CHECK_EQ_U64(n, 4);
	bool seen_shared = false;
	for (size_t i = 0; i < n; i++) {
		if (snap[i].alloc.samples == 2) {
			seen_shared = true;
			AP_CHECK_EQ_U64(snap[i].size, (uint64_t)llround(avg));
			AP_CHECK_NEAR(snap[i].alloc.space, w100 * 100 + w103 * 103, 1e-12, 0);
		} else {
			AP_CHECK(snap[i].size == 104 || snap[i].size == 20 || snap[i].size == 21);
		}
	}
	AP_CHECK(seen_shared);
	arena_free(&a, snap);

	/* Freeing the 103-byte sample leaves exactly the 100-byte one. */
	table_record_free(&t, &r103, 0);
	AP_CHECK_NEAR(r100.site->inuse.space, w100 * 100, 1e-12, 1e-9);
	AP_CHECK_NEAR(r100.site->inuse.objects, w100, 1e-12, 1e-12);
	AP_CHECK_NEAR(r100.site->inuse.space_var, (w100 * w100 - w100) * 100 * 100, 1e-12, 1e-6);

	/* 10000 distinct sizes from 1 KiB to 41 KiB: about 16 classes for each
	 * of the 5.4 powers of two they span, not 10000 sites. */
	table_totals before;
	table_totals_get(&t, &before);
	for (uint64_t z = 1024; z < 1024 + 40000; z += 4) {
		ap_sample_info in = info_for(z, 0, rate);
		sample_rec r;
		AP_CHECK_EQ_INT(table_record_alloc(&t, stack_b, 1, 1000, &in, z, &r, NULL), 0);
	}
	table_totals after;
	table_totals_get(&t, &after);
	AP_CHECK(after.nsites - before.nsites <= 16 * 6);
	AP_CHECK(after.nsites - before.nsites >= 16 * 5);
}

AP_TEST(many_stacks_survive_table_growth)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	ap_sample_info in = info_for(64, 0, 1);
	in.weight = 1;
	in.prob = 1;
	for (uintptr_t k = 1; k <= 5000; k++) {
		uintptr_t pcs[2] = { k * 16, 0x77 };
		sample_rec r;
		AP_CHECK_EQ_INT(table_record_alloc(&t, pcs, 2, 1, &in, 64, &r, NULL), 0);
		AP_CHECK_EQ_U64(r.site->stk->id, k);
	}
	/* Re-interning finds the old entries. */
	uintptr_t pcs[2] = { 1234 * 16, 0x77 };
	sample_rec r;
	table_record_alloc(&t, pcs, 2, 1, &in, 64, &r, NULL);
	AP_CHECK_EQ_U64(r.site->stk->id, 1234);
	table_totals tot;
	table_totals_get(&t, &tot);
	AP_CHECK_EQ_U64(tot.nstacks, 5000);
	AP_CHECK_NEAR(tot.alloc_space, 5001.0 * 64, 0, 0);
}

/* Two samples of 300 bytes (usable 320, u 177) at rate 777 on stack_b. */
static int two_samples(stack_table *t, arena *a, ap_sample_info *in,
		       sample_rec *r1, sample_rec *r2)
{
	arena_init(a);
	*in = info_for(300, 123, 777);
	int rc = table_init(t, a);
	if (!rc)
		rc = table_record_alloc(t, stack_b, 1, 777, in, 320, r1, NULL);
	if (!rc)
		rc = table_record_alloc(t, stack_b, 1, 777, in, 320, r2, NULL);
	return rc;
}

AP_TEST(freeing_subtracts_exactly_what_allocating_added)
{
	arena a;
	stack_table t;
	ap_sample_info in;
	sample_rec r1, r2;
	AP_CHECK_EQ_INT(two_samples(&t, &a, &in, &r1, &r2), 0);
	r1.t_ns = 1000;
	table_record_free(&t, &r1, 5000);
	const site *s = r1.site;
	double w = in.weight;
	AP_CHECK_EQ_U64(s->alloc.samples, 2);
	AP_CHECK_EQ_U64(s->inuse.samples, 1);
	AP_CHECK_NEAR(s->alloc.objects, 2 * w, 1e-12, 0);
	AP_CHECK_NEAR(s->inuse.objects, w, 1e-12, 0);
	AP_CHECK_NEAR(s->inuse.space, w * 300, 1e-12, 0);
	AP_CHECK_NEAR(s->inuse.u, 177, 1e-12, 0);
	AP_CHECK_NEAR(s->inuse.usable, w * 320, 1e-12, 0);
	AP_CHECK_NEAR(s->inuse.space_var, (w * w - w) * 300.0 * 300.0, 1e-12, 0);
	table_totals tot;
	table_totals_get(&t, &tot);
	AP_CHECK_EQ_U64(tot.frees, 1);
	AP_CHECK_NEAR(tot.peak_inuse_space, 2 * w * 300, 1e-12, 0);
	/* A bootstrap record (no site) is ignored. */
	sample_rec boot;
	memset(&boot, 0, sizeof boot);
	table_record_free(&t, &boot, 1);
	table_totals_get(&t, &tot);
	AP_CHECK_EQ_U64(tot.frees, 1);
}

/*
 * A sample the runtime cannot track leaves both views (it used to stay
 * in alloc while leaving in-use); a fork child's alloc view starts empty
 * while in-use keeps the inherited blocks (issue 12).
 */
AP_TEST(untracked_samples_leave_both_views_and_fork_resets_alloc)
{
	arena a;
	stack_table t;
	ap_sample_info in;
	sample_rec r1, r2;
	AP_CHECK_EQ_INT(two_samples(&t, &a, &in, &r1, &r2), 0);
	table_record_drop(&t, &r2);
	const site *s = r1.site;
	double w = in.weight;
	AP_CHECK_EQ_U64(s->alloc.samples, 1);
	AP_CHECK_EQ_U64(s->inuse.samples, 1);
	AP_CHECK_NEAR(s->alloc.objects, w, 1e-12, 0);
	AP_CHECK_NEAR(s->inuse.objects, w, 1e-12, 0);
	AP_CHECK_NEAR(s->alloc.space_var2, pow((w * w - w) * 9e4, 2), 1e-12, 0);
	table_totals tot;
	table_totals_get(&t, &tot);
	AP_CHECK_EQ_U64(tot.samples, 1);
	AP_CHECK_NEAR(tot.alloc_space, w * 300, 1e-12, 0);
	AP_CHECK_NEAR(tot.inuse_space, w * 300, 1e-12, 0);
	table_reset_alloc(&t);
	table_totals_get(&t, &tot);
	AP_CHECK_EQ_U64(s->alloc.samples, 0);
	AP_CHECK(s->alloc.objects == 0 && s->alloc.space_var2 == 0);
	AP_CHECK_EQ_U64(s->inuse.samples, 1);
	AP_CHECK(tot.alloc_space == 0 && tot.samples == 0);
	AP_CHECK_NEAR(tot.inuse_space, w * 300, 1e-12, 0);
	/* the inherited block freed in the child: in-use only */
	table_record_free(&t, &r1, 0);
	AP_CHECK_EQ_U64(s->inuse.samples, 0);
	AP_CHECK_EQ_U64(s->alloc.samples, 0);
}

/* Count in a histogram, read as a dump or a scrape reads it: flushed. */
static uint64_t hist_count(stack_table *t, ap_hist *h)
{
	table_flush(t);
	ap_hist_snap *s = NULL;
	if (ap_hist_snapshot(h, NULL, &s) != 0)
		return UINT64_MAX;
	uint64_t n = ap_hist_snap_count(s);
	ap_hist_snap_destroy(s);
	return n;
}

/*
 * The histograms and lifetime bins take records in batches of TABLE_PEND:
 * none is lost or counted twice across several batches and a partial one,
 * each lifetime lands in its own site's bins, and a fork child's reset
 * drops the parent's pending sizes with the rest of the alloc view.
 */
AP_TEST(batched_histogram_and_lifetime_records_are_all_applied_once)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	t.life_on = true;
	ap_sample_info in = info_for(100, 0, 1);
	in.weight = 1;
	in.prob = 1;
	enum { N = 3 * TABLE_PEND + 5 };
	sample_rec r[N];
	for (int i = 0; i < N; i++) {
		const uintptr_t *stk = i % 2 ? stack_a : stack_b;
		AP_CHECK_EQ_INT(table_record_alloc(&t, stk, i % 2 ? 3 : 1, 1, &in,
						   112, &r[i], NULL), 0);
		r[i].t_ns = 1000;
	}
	AP_CHECK_EQ_U64(hist_count(&t, t.hist_size), N);
	AP_CHECK_EQ_U64(hist_count(&t, t.hist_size), N); /* a flush is idempotent */
	/* Lifetimes 1..N ns: stack_a's blocks (odd i) lived i + 1. */
	for (int i = 0; i < N; i++)
		table_record_free(&t, &r[i], 1000 + (uint64_t)i + 1);
	AP_CHECK_EQ_U64(hist_count(&t, t.hist_lifetime), N);
	for (int k = 0; k < 2; k++) {
		const life_bins *b = r[k].site->life;
		AP_CHECK(b != NULL);
		uint64_t n = 0;
		double w = 0;
		for (uint32_t i = 0; i < b->n; i++) {
			n += lifebins_at(b, i)->n;
			w += lifebins_at(b, i)->w;
		}
		uint64_t want = k ? N / 2 : N - N / 2; /* odd i : even i */
		AP_CHECK_EQ_U64(n, want);
		AP_CHECK(w == (double)want);
	}
	/* A partial batch of sizes, then the fork child's reset. */
	for (int i = 0; i < 5; i++)
		AP_CHECK_EQ_INT(table_record_alloc(&t, stack_b, 1, 1, &in, 112,
						   &r[i], NULL), 0);
	table_reset_alloc(&t);
	AP_CHECK_EQ_U64(hist_count(&t, t.hist_size), 0);
	AP_CHECK_EQ_U64(hist_count(&t, t.hist_lifetime), N);
}

/* ---- the profile ------------------------------------------------------------ */

static int64_t value(const ap_profile *p, const ap_sample *s, const char *type)
{
	int i = ap_profile_find_sample_type(p, type);
	return i < 0 ? -1 : s->values[i];
}

static const ap_sample *sample_with_size(const ap_profile *p, int64_t size)
{
	int64_t key = ap_profile_intern((ap_profile *)p, "bytes");
	for (size_t i = 0; i < p->nsamples; i++)
		for (size_t l = 0; l < p->samples[i].nlabels; l++)
			if (p->samples[i].labels[l].key == key &&
			    p->samples[i].labels[l].num == size)
				return &p->samples[i];
	return NULL;
}

AP_TEST(profile_carries_ht_values_for_a_fake_sample_sequence)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	const double R = 4096;
	/* Site A: three samples of 1000 bytes, one freed. Site B: one 64 KiB
	 * sample drawn at another rate. */
	ap_sample_info ia = info_for(1000, 400, R), ib = info_for(65536, 5, 512);
	sample_rec r[4];
	for (int i = 0; i < 3; i++)
		table_record_alloc(&t, stack_a, 3, (uint64_t)R, &ia, 1008, &r[i], NULL);
	table_record_alloc(&t, stack_b, 1, 512, &ib, 65536, &r[3], NULL);
	r[0].t_ns = 0;
	table_record_free(&t, &r[0], 2000000);

	dump_input in = { .table = &t, .a = &a, .period = (uint64_t)R,
			  .format = 0, .start_realtime_ns = 0, .with_mappings = false };
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(dump_build_profile(&in, &p), 0);
	char err[200];
	AP_CHECK_MSG(ap_profile_validate(p, err, sizeof err) == 0, "%s", err);
	AP_CHECK_EQ_INT(p->period, 4096);
	AP_CHECK(strcmp(ap_profile_string(p, p->default_sample_type), "inuse_space") == 0);
	AP_CHECK(strcmp(ap_profile_string(p, p->sample_types[0].type), "alloc_objects") == 0);
	AP_CHECK(strcmp(ap_profile_string(p, p->sample_types[3].type), "inuse_space") == 0);
	AP_CHECK_EQ_U64(p->nsamples, 2);

	const ap_sample *sa = sample_with_size(p, 1000);
	AP_CHECK(sa != NULL);
	double w = ia.weight; /* 1 / (1 - (1 - 1/R)^1000) */
	/* Written rounded without bias (dump.c): floor or ceil of the sum. */
#define NEAR1(name, x) AP_CHECK_MSG(fabs((double)value(p, sa, name) - (x)) < 1, \
				    "%s = %lld, want %.3f", name,            \
				    (long long)value(p, sa, name), (double)(x))
	NEAR1("alloc_objects", 3 * w);
	NEAR1("alloc_space", 3 * w * 1000);
	NEAR1("inuse_objects", 2 * w);
	NEAR1("inuse_space", 2 * w * 1000);
	AP_CHECK_EQ_INT(value(p, sa, "alloc_samples"), 3);
	AP_CHECK_EQ_INT(value(p, sa, "alloc_u"), 3 * 600);
	AP_CHECK_EQ_INT(value(p, sa, "inuse_samples"), 2);
	AP_CHECK_EQ_INT(value(p, sa, "inuse_u"), 2 * 600);
	NEAR1("alloc_space_var", 3 * (w * w - w) * 1e6);
	NEAR1("inuse_objects_var", 2 * (w * w - w));
	NEAR1("alloc_usable_space", 3 * w * 1008);
	NEAR1("inuse_usable_space", 2 * w * 1008);
	/* The row types: no exact sample; squared variance terms in
	 * ap_var2_encode units of the line's rate. */
	AP_CHECK_EQ_INT(value(p, sa, "alloc_exact_samples"), 0);
	double vb = (w * w - w) * 1e6, vo = w * w - w;
	NEAR1("alloc_space_var2", ap_var2_encode(3 * vb * vb, R));
	NEAR1("inuse_objects_var2", ap_var2_encode(2 * vo * vo, R));
#undef NEAR1
	/* Leaf first, each address one below the return address. */
	AP_CHECK_EQ_U64(sa->nlocations, 3);
	AP_CHECK_EQ_U64(ap_profile_location(p, sa->location_ids[0])->address, 0x0fff);
	AP_CHECK_EQ_U64(ap_profile_location(p, sa->location_ids[2])->address, 0x2fff);
	AP_CHECK_EQ_U64(sa->nlabels, 1); /* drawn at the profile's rate */

	const ap_sample *sb = sample_with_size(p, 65536);
	AP_CHECK(sb != NULL);
	AP_CHECK_EQ_U64(sb->nlabels, 2);
	AP_CHECK(strcmp(ap_profile_string(p, sb->labels[1].key), "rate") == 0);
	AP_CHECK_EQ_INT(sb->labels[1].num, 512);
	AP_CHECK_EQ_INT(value(p, sb, "inuse_space"), llround(ib.weight * 65536));
	ap_profile_destroy(p);
}

AP_TEST(profile_embeds_decodable_histograms)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	ap_sample_info in = info_for(5000, 0, 1);
	in.weight = 1;
	in.prob = 1;
	sample_rec r;
	for (int i = 0; i < 7; i++)
		table_record_alloc(&t, stack_b, 1, 1, &in, 5000, &r, NULL);
	r.t_ns = 100;
	table_record_free(&t, &r, 1100);
	dump_input din = { .table = &t, .a = &a, .period = 1, .with_mappings = false };
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(dump_build_profile(&din, &p), 0);
	/* As extensions, none as comments (pprof would print them). */
	for (size_t i = 0; i < p->ncomments; i++)
		AP_CHECK(strstr(ap_profile_string(p, p->comments[i]), "hist") == NULL);
	int found = 0;
	size_t cur = 0;
	char *name = NULL;
	ap_hist_snap *s = NULL;
	while (ap_profile_hist_next(p, &cur, NULL, &name, &s) == 0) {
		bool size = strcmp(name, "alloc_size") == 0;
		bool life = strcmp(name, "lifetime_ns") == 0;
		AP_CHECK(size || life);
		AP_CHECK(cur <= p->nexts);
		uint64_t lo, hi;
		ap_hist_snap_max(s, &hi);
		ap_hist_snap_min(s, &lo);
		if (size) {
			AP_CHECK_EQ_U64(ap_hist_snap_count(s), 7);
			AP_CHECK_EQ_U64(lo, 5000);
		} else {
			AP_CHECK_EQ_U64(ap_hist_snap_count(s), 1);
			AP_CHECK_EQ_U64(hi, 1000);
		}
		ap_hist_snap_destroy(s);
		free(name);
		found++;
	}
	AP_CHECK_EQ_INT(found, 2);
	ap_profile_destroy(p);
}

AP_TEST(profile_with_mappings_names_the_test_binary_first)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	/* A real return address inside this executable. */
	uintptr_t pcs[1] = { (uintptr_t)&value + 1 };
	ap_sample_info in = info_for(10, 0, 1);
	in.weight = 1;
	sample_rec r;
	table_record_alloc(&t, pcs, 1, 1, &in, 16, &r, NULL);
	dump_input din = { .table = &t, .a = &a, .period = 1, .with_mappings = true };
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(dump_build_profile(&din, &p), 0);
	AP_CHECK(p->nmappings >= 2); /* this test and libc at least */
	const char *first = ap_profile_string(p, p->mappings[0].filename);
	AP_CHECK_MSG(strstr(first, "preload_table_test") != NULL, "first mapping %s", first);
	AP_CHECK(!p->mappings[0].has_functions);
	AP_CHECK(strlen(ap_profile_string(p, p->mappings[0].build_id)) >= 16);
	const ap_location *loc = ap_profile_location(p, p->samples[0].location_ids[0]);
	AP_CHECK_EQ_U64(loc->mapping_id, p->mappings[0].id);
	ap_profile_destroy(p);
}
