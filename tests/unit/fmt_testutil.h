/*
 * fmt_testutil.h: helpers shared by the profile, pprof, heap_v2 and codec
 * tests: an allocator that fails its N-th allocation and counts live blocks
 * (so every failure path is shown to leak nothing), one that counts the
 * bytes live at once and their peak, semantic profile equality, and small
 * file helpers for writing sample files and corpora.
 */
#ifndef ALLOCPROF_FMT_TESTUTIL_H
#define ALLOCPROF_FMT_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/profile.h"

/* Fails the allocation (or growing realloc) numbered fail_at (0-based). */
struct fail_alloc {
	long fail_at; /* -1 = never */
	long calls;   /* allocations and reallocs attempted */
	long live;    /* blocks currently allocated */
	int failed;   /* whether the injected failure happened */
};

static inline int fa_should_fail(struct fail_alloc *f)
{
	if (f->calls++ == f->fail_at) {
		f->failed = 1;
		return 1;
	}
	return 0;
}

static inline void *fa_alloc(void *ctx, size_t n)
{
	struct fail_alloc *f = ctx;
	if (fa_should_fail(f))
		return NULL;
	void *p = malloc(n ? n : 1);
	if (p)
		f->live++;
	return p;
}

static inline void *fa_realloc(void *ctx, void *p, size_t old_n, size_t new_n)
{
	struct fail_alloc *f = ctx;
	(void)old_n;
	if (fa_should_fail(f))
		return NULL;
	return realloc(p, new_n ? new_n : 1);
}

static inline void fa_free(void *ctx, void *p, size_t n)
{
	struct fail_alloc *f = ctx;
	(void)n;
	if (p)
		f->live--;
	free(p);
}

static inline ap_allocator fa_make(struct fail_alloc *f, long fail_at)
{
	memset(f, 0, sizeof *f);
	f->fail_at = fail_at;
	ap_allocator a = { fa_alloc, fa_realloc, fa_free, f };
	return a;
}

/* Counts the bytes live at once, and their peak, from the sizes the
 * callers pass (so it also checks that frees give the sizes allocated). */
struct peak_alloc {
	size_t live, peak;
};

static inline void pa_note(struct peak_alloc *c)
{
	if (c->live > c->peak)
		c->peak = c->live;
}

static inline void *pa_alloc(void *ctx, size_t n)
{
	struct peak_alloc *c = ctx;
	c->live += n;
	pa_note(c);
	return malloc(n ? n : 1);
}

static inline void *pa_realloc(void *ctx, void *p, size_t old_n, size_t new_n)
{
	struct peak_alloc *c = ctx;
	c->live += new_n - old_n;
	pa_note(c);
	return realloc(p, new_n ? new_n : 1);
}

static inline void pa_free(void *ctx, void *p, size_t n)
{
	struct peak_alloc *c = ctx;
	c->live -= n;
	free(p);
}

static inline ap_allocator pa_make(struct peak_alloc *c)
{
	c->live = c->peak = 0;
	ap_allocator a = { pa_alloc, pa_realloc, pa_free, c };
	return a;
}

static inline int str_eq(const ap_profile *a, int64_t i, const ap_profile *b,
			 int64_t j)
{
	return strcmp(ap_profile_string(a, i), ap_profile_string(b, j)) == 0;
}

/*
 * Same content, comparing strings by value (string indices may differ).
 * Returns NULL when equal, else a short description of the first difference.
 */
static inline const char *profiles_differ(const ap_profile *a,
					  const ap_profile *b)
{
	if (a->nsample_types != b->nsample_types)
		return "nsample_types";
	for (size_t i = 0; i < a->nsample_types; i++)
		if (!str_eq(a, a->sample_types[i].type, b, b->sample_types[i].type) ||
		    !str_eq(a, a->sample_types[i].unit, b, b->sample_types[i].unit))
			return "sample_types";
	if (a->nsamples != b->nsamples)
		return "nsamples";
	for (size_t i = 0; i < a->nsamples; i++) {
		const ap_sample *x = &a->samples[i], *y = &b->samples[i];
		if (x->nlocations != y->nlocations || x->nlabels != y->nlabels)
			return "sample shape";
		for (size_t j = 0; j < x->nlocations; j++)
			if (x->location_ids[j] != y->location_ids[j])
				return "sample location ids";
		for (size_t j = 0; j < a->nsample_types; j++)
			if (x->values[j] != y->values[j])
				return "sample values";
		for (size_t j = 0; j < x->nlabels; j++) {
			const ap_label *l = &x->labels[j], *m = &y->labels[j];
			if (!str_eq(a, l->key, b, m->key) ||
			    !str_eq(a, l->str, b, m->str) || l->num != m->num ||
			    !str_eq(a, l->num_unit, b, m->num_unit))
				return "sample labels";
		}
	}
	if (a->nmappings != b->nmappings)
		return "nmappings";
	for (size_t i = 0; i < a->nmappings; i++) {
		const ap_mapping *x = &a->mappings[i], *y = &b->mappings[i];
		if (x->id != y->id || x->memory_start != y->memory_start ||
		    x->memory_limit != y->memory_limit ||
		    x->file_offset != y->file_offset ||
		    !str_eq(a, x->filename, b, y->filename) ||
		    !str_eq(a, x->build_id, b, y->build_id) ||
		    x->has_functions != y->has_functions ||
		    x->has_filenames != y->has_filenames ||
		    x->has_line_numbers != y->has_line_numbers ||
		    x->has_inline_frames != y->has_inline_frames)
			return "mappings";
	}
	if (a->nlocations != b->nlocations)
		return "nlocations";
	for (size_t i = 0; i < a->nlocations; i++) {
		const ap_location *x = &a->locations[i], *y = &b->locations[i];
		if (x->id != y->id || x->mapping_id != y->mapping_id ||
		    x->address != y->address || x->nlines != y->nlines ||
		    x->is_folded != y->is_folded)
			return "locations";
		for (size_t j = 0; j < x->nlines; j++)
			if (x->lines[j].function_id != y->lines[j].function_id ||
			    x->lines[j].line != y->lines[j].line ||
			    x->lines[j].column != y->lines[j].column)
				return "location lines";
	}
	if (a->nfunctions != b->nfunctions)
		return "nfunctions";
	for (size_t i = 0; i < a->nfunctions; i++) {
		const ap_function *x = &a->functions[i], *y = &b->functions[i];
		if (x->id != y->id || !str_eq(a, x->name, b, y->name) ||
		    !str_eq(a, x->system_name, b, y->system_name) ||
		    !str_eq(a, x->filename, b, y->filename) ||
		    x->start_line != y->start_line)
			return "functions";
	}
	if (a->ncomments != b->ncomments)
		return "ncomments";
	for (size_t i = 0; i < a->ncomments; i++)
		if (!str_eq(a, a->comments[i], b, b->comments[i]))
			return "comments";
	if (a->nexts != b->nexts)
		return "nexts";
	for (size_t i = 0; i < a->nexts; i++)
		if (strcmp(a->exts[i].name, b->exts[i].name) ||
		    a->exts[i].len != b->exts[i].len ||
		    (a->exts[i].len &&
		     memcmp(a->exts[i].data, b->exts[i].data, a->exts[i].len)))
			return "exts";
	if (!str_eq(a, a->drop_frames, b, b->drop_frames) ||
	    !str_eq(a, a->keep_frames, b, b->keep_frames) ||
	    !str_eq(a, a->period_type.type, b, b->period_type.type) ||
	    !str_eq(a, a->period_type.unit, b, b->period_type.unit) ||
	    !str_eq(a, a->default_sample_type, b, b->default_sample_type) ||
	    !str_eq(a, a->doc_url, b, b->doc_url))
		return "top-level strings";
	if (a->time_nanos != b->time_nanos ||
	    a->duration_nanos != b->duration_nanos || a->period != b->period)
		return "top-level numbers";
	return NULL;
}

/* Write len bytes to path; 0 on success. */
static inline int write_bytes(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(buf, 1, len, f);
	return (fclose(f) != 0 || w != len) ? -1 : 0;
}

/* Write a corpus file dir/name when AP_WRITE_CORPUS=dir is set. */
static inline void maybe_write_corpus(const char *sub, const char *name,
				      const void *buf, size_t len)
{
	const char *dir = getenv("AP_WRITE_CORPUS");
	if (!dir)
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
	if (write_bytes(path, buf, len))
		fprintf(stderr, "cannot write corpus file %s\n", path);
}

#endif
