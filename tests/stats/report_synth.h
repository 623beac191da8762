/*
 * report_synth.h: synthetic allocprof heap profiles for the report tests
 * and benchmark. An allocation stream from named "sites" goes through the
 * REAL sampler (allocprof/sampler.h) and the sampled allocations are turned
 * into a profile exactly as the runtime does it: per (stack, size) the
 * additive HT sums (objects 1/pi, bytes Z/pi, variance estimates
 * (1-pi)/pi^2 * Z^2 and (1-pi)/pi^2), sample counts and u = sum (Z - offset),
 * for the alloc view and, for objects still live, the inuse view, laid out
 * as sample values by the library's ap_heap_sums_encode like the runtime's
 * profiles. Frames are
 * already symbolized (Function/Line filled; addresses synthetic), with a
 * "malloc" leaf frame that reports must drop and "main" as the root.
 *
 * Header-only (static functions) so unit tests, statistical tests and the
 * benchmark share it without a library.
 */
#ifndef ALLOCPROF_TESTS_REPORT_SYNTH_H
#define ALLOCPROF_TESTS_REPORT_SYNTH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/profile.h"
#include "allocprof/sampler.h"

typedef struct synth_site {
	const char *function; /* leaf function after "malloc" */
	const char *file;
	int line;
	uint64_t size;  /* bytes per allocation */
	uint64_t count; /* allocations */
	unsigned live_every; /* every k-th allocation stays live (0 = none) */
} synth_site;

/* Truth per site: bytes/objects allocated and still live. */
typedef struct synth_truth {
	double alloc_bytes, alloc_objects, inuse_bytes, inuse_objects;
} synth_truth;

/*
 * Per-site running sums of the alloc and inuse views, in the library's
 * ap_heap_sums; ap_heap_sums_encode turns them into the sample's values,
 * the same call the runtime makes (src/preload/dump.c), so the tests check
 * the layout the runtime really writes.
 */
struct synth_acc {
	ap_heap_sums alloc, inuse;
};

static void synth_add(ap_heap_sums *c, double w, double z, double u,
		      double vo)
{
	c->objects += w;
	c->space += w * z;
	c->usable += w * z;
	c->samples++;
	c->u += u;
	c->space_var += vo * z * z;
	c->objects_var += vo;
}

static void synth_record(struct synth_acc *a, const ap_sample_info *in,
			 bool live)
{
	double z = (double)in->size, pi = in->prob, w = in->weight;
	double vo = (1 - pi) / (pi * pi);
	double u = (double)(in->size - in->offset);
	synth_add(&a->alloc, w, z, u, vo);
	if (live)
		synth_add(&a->inuse, w, z, u, vo);
}

/* Add a function + location for name, returning the location id. */
static int synth_loc(ap_profile *p, const char *name, const char *file,
		     int line, uint64_t addr, uint64_t *loc)
{
	ap_function f = {0, ap_profile_intern(p, name), ap_profile_intern(p, name),
			 ap_profile_intern(p, file), line};
	uint64_t fid;
	int rc = ap_profile_add_function(p, &f, &fid);
	if (rc)
		return rc;
	ap_line ln = {fid, line, 0};
	ap_location l = {0, 0, addr, &ln, 1, false};
	return ap_profile_add_location(p, &l, loc);
}

/*
 * Run the stream (sites interleaved round robin so their bytes mix in one
 * sampler stream, like one thread) at rate with seed; write the profile to
 * *out and the truth per site to truth[] (may be NULL). When rate_label is
 * nonzero every sample carries it as its "rate" label (merge tests).
 */
static int synth_profile(const synth_site *sites, size_t n, uint64_t rate,
			 uint64_t seed, int64_t period, ap_profile **out,
			 synth_truth *truth)
{
	ap_sampler_config cfg;
	ap_sampler s;
	ap_profile *p = NULL;
	struct synth_acc *acc = calloc(n, sizeof *acc);
	uint64_t *done = calloc(n, sizeof *done), mloc, root;
	int rc = acc && done ? 0 : AP_ENOMEM;
	ap_sampler_config_default(&cfg);
	cfg.rate = rate;
	cfg.seed = seed;
	if (!rc)
		rc = ap_sampler_init(&s, &cfg);
	if (!rc)
		rc = ap_profile_create(NULL, &p);
	if (!rc)
		rc = ap_profile_init_heap(p, period ? period : (int64_t)rate);
	if (!rc)
		rc = synth_loc(p, "malloc", "malloc.c", 1, 0x1000, &mloc);
	if (!rc)
		rc = synth_loc(p, "main", "main.c", 10, 0x2000, &root);
	if (truth)
		memset(truth, 0, n * sizeof *truth);
	for (bool more = true; !rc && more;) {
		more = false;
		for (size_t i = 0; i < n; i++) {
			if (done[i] >= sites[i].count)
				continue;
			more = true;
			bool live = sites[i].live_every &&
				    done[i] % sites[i].live_every == 0;
			done[i]++;
			if (truth) {
				truth[i].alloc_bytes += (double)sites[i].size;
				truth[i].alloc_objects += 1;
				truth[i].inuse_bytes += live ? (double)sites[i].size : 0;
				truth[i].inuse_objects += live;
			}
			if (!ap_sampler_should_sample(&s, sites[i].size))
				continue;
			ap_sample_info info;
			ap_sampler_sample(&s, sites[i].size, &info);
			if (info.count)
				synth_record(&acc[i], &info, live);
		}
	}
	int64_t kbytes = rc ? 0 : ap_profile_intern(p, "bytes");
	for (size_t i = 0; !rc && i < n; i++) {
		if (acc[i].alloc.samples == 0)
			continue;
		uint64_t locs[3] = {mloc, 0, root};
		rc = synth_loc(p, sites[i].function, sites[i].file, sites[i].line,
			       0x10000 + 16 * (uint64_t)i, &locs[1]);
		int64_t vals[AP_HEAP_NVALUES];
		ap_heap_sums_encode(&acc[i].alloc, &acc[i].inuse, rate,
				    ap_round_key(NULL, 0, (uint32_t)i), vals);
		ap_label lb = {kbytes, 0, (int64_t)sites[i].size, kbytes};
		if (!rc)
			rc = ap_profile_add_sample(p, locs, 3, vals, &lb, 1);
	}
	free(acc);
	free(done);
	if (rc) {
		ap_profile_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

#endif
