/*
 * preload_series_test.c: the runtime's timeline ring and peak snapshot
 * (src/preload/series.h) driven with fake times: points at the cadence,
 * the largest SERIES_SITES sites listed and the rest summed into "other",
 * the ring thinned (every other point dropped, the cadence doubled) so it
 * never holds more than SERIES_POINTS points however long the run, and
 * the peak snapshot kept at the highest in-use total.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "allocprof/timeline.h"
#include "aptest.h"
#include "tlring.h"
#include "stack_table.h"

static ap_sample_info info_for(uint64_t size)
{
	ap_sample_info in;
	memset(&in, 0, sizeof in);
	in.size = size;
	in.count = 1;
	in.prob = 0.5;
	in.weight = 2;
	return in;
}

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static ap_timeline *decode_blob(arena *a)
{
	unsigned char *data = NULL;
	size_t len = 0;
	if (series_timeline_blob(a, &data, &len) != 0 || !data)
		return NULL;
	ap_timeline *tl = NULL;
	char err[200];
	int rc = ap_timeline_decode(data, len, NULL, &tl, err, sizeof err);
	arena_free(a, data);
	return rc ? NULL : tl;
}

AP_TEST(ring_lists_top_sites_and_thins)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	/* 20 stacks; stack i holds i + 1 blocks of 1000 bytes (weight 2) */
	uintptr_t pcs[20][2];
	sample_rec rec;
	for (int i = 0; i < 20; i++) {
		pcs[i][0] = 0x1000 + 16 * (uintptr_t)i;
		pcs[i][1] = 0x9000;
		ap_sample_info in = info_for(1000);
		for (int k = 0; k <= i; k++)
			AP_CHECK_EQ_INT(table_record_alloc(&t, pcs[i], 2, 512, &in, 1000,
							   &rec, NULL), 0);
	}
	const uint64_t cad = 1000000; /* 1 ms */
	series_configure(&t, &a, 512, cad, false, 0, 0, false);
	uint64_t t0 = mono();
	/* 1000 ticks: the ring fills at 256 and thins twice (stride 4) */
	for (uint64_t k = 1; k <= 1000; k++)
		series_poll(t0 + k * cad + cad / 2);
	ap_timeline *tl = decode_blob(&a);
	AP_CHECK(tl != NULL);
	AP_CHECK(tl->npoints <= SERIES_POINTS + 1); /* the ring + "now" */
	AP_CHECK(tl->npoints >= SERIES_POINTS / 2);
	AP_CHECK_EQ_U64(tl->cadence_ns, 4 * cad);
	AP_CHECK_EQ_U64(tl->period, 512);
	/* points of the ring are evenly spaced at the final stride */
	for (size_t i = 2; i + 1 < tl->npoints; i++)
		AP_CHECK_EQ_U64(tl->points[i].t_ns - tl->points[i - 1].t_ns, 4 * cad);
	const ap_tl_point *p = &tl->points[tl->npoints / 2];
	AP_CHECK_EQ_U64(p->nsites, SERIES_SITES);
	/* total: 210 blocks of weight 2 and 1000 bytes */
	AP_CHECK_NEAR(p->total.space, 420000, 0, 0);
	AP_CHECK_EQ_U64(p->total.samples, 210);
	/* the largest first: stack 19 (40000 bytes), then 18, ... */
	AP_CHECK_NEAR(p->sites[0].inuse.space, 40000, 0, 0);
	AP_CHECK_NEAR(p->sites[SERIES_SITES - 1].inuse.space,
		      2000.0 * (20 - SERIES_SITES + 1), 0, 0);
	AP_CHECK_EQ_U64(tl->stacks[p->sites[0].stack].addrs[0], 0x1000 + 16 * 19 - 1);
	/* other = the 4 smallest: 1 + 2 + 3 + 4 blocks */
	AP_CHECK_NEAR(p->other.space, 20000, 1e-6, 0);
	AP_CHECK_EQ_U64(p->other.samples, 10);
	ap_timeline_free(tl);
	series_configure(NULL, &a, 0, 0, false, 0, 0, false); /* forget t */
	arena_destroy(&a);
}

AP_TEST(peak_snapshot_keeps_the_highest_total)
{
	arena a;
	arena_init(&a);
	stack_table t;
	AP_CHECK_EQ_INT(table_init(&t, &a), 0);
	series_configure(&t, &a, 512, 0, true, 0, 0, false);
	uintptr_t pc[1] = {0x4000};
	ap_sample_info in = info_for(1000);
	sample_rec recs[10];
	table_totals after;
	uint64_t now = mono();
	for (int i = 0; i < 10; i++) {
		AP_CHECK_EQ_INT(table_record_alloc(&t, pc, 1, 512, &in, 1000, &recs[i],
						   &after), 0);
		(void)series_wants_wake(&after);
		series_poll(now + (uint64_t)i);
	}
	for (int i = 0; i < 6; i++)
		table_record_free(&t, &recs[i], now);
	series_poll(now + 100);
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(series_add_extensions(p, &t, &a), 0);
	size_t cur = 0;
	const ap_profile_ext *e = ap_profile_ext_next(p, AP_PEAK_EXT, false, &cur);
	AP_CHECK(e != NULL);
	ap_timeline *tl = NULL;
	AP_CHECK_EQ_INT(ap_timeline_decode(e->data, e->len, NULL, &tl, NULL, 0), 0);
	AP_CHECK_EQ_U64(tl->npoints, 1);
	AP_CHECK_NEAR(tl->points[0].total.space, 20000, 0, 0); /* 10 blocks */
	AP_CHECK_NEAR(tl->max_space, 20000, 0, 0);
	AP_CHECK_EQ_U64(tl->candidates, 10); /* 10 sampled allocations */
	AP_CHECK_EQ_U64(tl->points[0].nsites, 1);
	ap_timeline_free(tl);
	ap_profile_destroy(p);
	series_configure(NULL, &a, 0, 0, false, 0, 0, false); /* forget t */
	arena_destroy(&a);
}
