/*
 * profile_test.c: the profile model's builders, interning, id maps,
 * validation and allocation-failure behaviour (allocprof/profile.h).
 */
#include "aptest.h"
#include "fmt_testutil.h"

#include "allocprof/heapv2.h"
#include "allocprof/profile.h"

#include <stdlib.h>
#include <string.h>

AP_TEST(create_has_empty_string_zero)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_U64(p->nstrings, 1);
	AP_CHECK(strcmp(p->strings[0], "") == 0);
	AP_CHECK_EQ_INT(ap_profile_intern(p, ""), 0);
	AP_CHECK_EQ_INT(ap_profile_validate(p, NULL, 0), 0);
	ap_profile_destroy(p);
	ap_profile_destroy(NULL);
	AP_CHECK_EQ_INT(ap_profile_create(NULL, NULL), AP_EINVAL);
}

AP_TEST(intern_deduplicates_and_survives_rehash)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	char buf[32];
	/* 20000 strings force many rehashes of the string table. */
	for (int i = 0; i < 20000; i++) {
		snprintf(buf, sizeof buf, "s%d", i);
		int64_t idx = ap_profile_intern(p, buf);
		AP_CHECK_EQ_INT(idx, i + 1);
	}
	for (int i = 0; i < 20000; i += 7) {
		snprintf(buf, sizeof buf, "s%d", i);
		AP_CHECK_EQ_INT(ap_profile_intern(p, buf), i + 1);
		AP_CHECK(strcmp(ap_profile_string(p, i + 1), buf) == 0);
	}
	AP_CHECK_EQ_U64(p->nstrings, 20001);
	/* Length-bounded interning matches on exactly n bytes. */
	AP_CHECK_EQ_INT(ap_profile_intern_n(p, "s12345", 3), 13);
	AP_CHECK_EQ_INT(ap_profile_intern_n(p, "s20000xyz", 6), 20001);
	AP_CHECK(strcmp(ap_profile_string(p, 20001), "s20000") == 0);
	ap_profile_destroy(p);
}

AP_TEST(intern_rejects_nul_and_null)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_intern_n(p, "a\0b", 3), AP_EINVAL);
	AP_CHECK(strstr(ap_profile_error(p), "NUL") != NULL);
	AP_CHECK_EQ_INT(ap_profile_intern(p, NULL), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_intern_n(p, NULL, 0), 0);
	AP_CHECK_EQ_U64(p->nstrings, 1);
	AP_CHECK(strcmp(ap_profile_string(p, -1), "") == 0);
	AP_CHECK(strcmp(ap_profile_string(p, 99), "") == 0);
	AP_CHECK(strcmp(ap_profile_string(NULL, 0), "") == 0);
	ap_profile_destroy(p);
}

AP_TEST(ids_assigned_explicit_and_large)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	ap_mapping m = { 0 };
	uint64_t id;
	AP_CHECK_EQ_INT(ap_profile_add_mapping(p, &m, &id), 0);
	AP_CHECK_EQ_U64(id, 1);
	m.id = 1000;
	AP_CHECK_EQ_INT(ap_profile_add_mapping(p, &m, &id), 0);
	m.id = 0;
	AP_CHECK_EQ_INT(ap_profile_add_mapping(p, &m, &id), 0);
	AP_CHECK_EQ_U64(id, 1001);
	m.id = UINT64_MAX;
	AP_CHECK_EQ_INT(ap_profile_add_mapping(p, &m, &id), 0);
	m.id = 0;
	AP_CHECK_EQ_INT(ap_profile_add_mapping(p, &m, &id), AP_ERANGE);
	AP_CHECK(ap_profile_mapping(p, UINT64_MAX) == &p->mappings[3]);
	AP_CHECK(ap_profile_mapping(p, 1000)->id == 1000);
	AP_CHECK(ap_profile_mapping(p, 0) == NULL);
	AP_CHECK(ap_profile_mapping(p, 5) == NULL);
	AP_CHECK_EQ_U64(p->nmappings, 4);
	ap_profile_destroy(p);
}

AP_TEST(duplicates_and_dangling_references_rejected_unchanged)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	ap_function f = { .id = 7, .name = 0 };
	AP_CHECK_EQ_INT(ap_profile_add_function(p, &f, NULL), 0);
	AP_CHECK_EQ_INT(ap_profile_add_function(p, &f, NULL), AP_EINVAL);
	AP_CHECK(strstr(ap_profile_error(p), "duplicate function id 7"));
	f.id = 8;
	f.name = 5; /* no such string */
	AP_CHECK_EQ_INT(ap_profile_add_function(p, &f, NULL), AP_EINVAL);
	AP_CHECK(strstr(ap_profile_error(p), "string index 5"));
	AP_CHECK_EQ_U64(p->nfunctions, 1);

	ap_line ln = { .function_id = 9, .line = 3 };
	ap_location loc = { .id = 7, .mapping_id = 3, .lines = &ln, .nlines = 1 };
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, NULL), AP_EINVAL);
	AP_CHECK(strcmp(ap_profile_error(p),
			"location 7 references unknown mapping 3") == 0);
	loc.mapping_id = 0;
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, NULL), AP_EINVAL);
	AP_CHECK(strstr(ap_profile_error(p), "unknown function 9"));
	ln.function_id = 7;
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, NULL), 0);
	AP_CHECK_EQ_U64(p->nlocations, 1);
	AP_CHECK(ap_profile_location(p, 7)->lines != &ln); /* copied */

	AP_CHECK(ap_profile_add_sample_type(p, "alloc_space", "bytes") == 0);
	uint64_t locs[] = { 7, 8 };
	int64_t v = 1;
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, locs, 2, &v, NULL, 0), AP_EINVAL);
	AP_CHECK(strstr(ap_profile_error(p), "unknown location 8"));
	ap_label bad = { .key = 999 };
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, locs, 1, &v, &bad, 1), AP_EINVAL);
	AP_CHECK(strstr(ap_profile_error(p), "label of sample 0: string index "
			"999 out of range") != NULL);
	AP_CHECK_EQ_U64(p->nsamples, 0);
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, locs, 1, &v, NULL, 0), 0);
	/* Sample types cannot change once samples exist. */
	AP_CHECK_EQ_INT(ap_profile_add_sample_type(p, "x", "y"), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_validate(p, NULL, 0), 0);
	ap_profile_destroy(p);
}

AP_TEST(samples_copy_their_arrays)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_add_sample_type(p, "a", "count"), 0);
	AP_CHECK_EQ_INT(ap_profile_add_sample_type(p, "b", "bytes"), 1);
	ap_location loc = { .address = 0x1234 };
	uint64_t id;
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, &id), 0);
	uint64_t locs[3] = { id, id, id };
	int64_t vals[2] = { -5, INT64_MAX };
	ap_label lab = { .key = ap_profile_intern(p, "bytes"), .num = 64 };
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, locs, 3, vals, &lab, 1), 0);
	vals[0] = 0;
	locs[0] = 99;
	const ap_sample *s = &p->samples[0];
	AP_CHECK_EQ_INT(s->values[0], -5);
	AP_CHECK_EQ_INT(s->values[1], INT64_MAX);
	AP_CHECK_EQ_U64(s->location_ids[0], id);
	AP_CHECK_EQ_U64(s->nlocations, 3);
	AP_CHECK_EQ_INT(s->labels[0].num, 64);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, "b"), 1);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, "c"), AP_ENOTFOUND);
	ap_profile_destroy(p);
}

AP_TEST(many_locations_lookup)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	/* Ids spaced by a large odd stride, so the id hash is exercised. */
	for (uint64_t i = 1; i <= 50000; i++) {
		ap_location loc = { .id = i * 0x9e3779b97f4a7c15ull,
				    .address = i };
		AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, NULL), 0);
	}
	for (uint64_t i = 1; i <= 50000; i++) {
		const ap_location *l =
			ap_profile_location(p, i * 0x9e3779b97f4a7c15ull);
		AP_CHECK(l != NULL);
		AP_CHECK_EQ_U64(l->address, i);
	}
	AP_CHECK(ap_profile_location(p, 12345) == NULL);
	AP_CHECK_EQ_INT(ap_profile_validate(p, NULL, 0), 0);
	ap_profile_destroy(p);
}

AP_TEST(init_heap_sets_types_and_period)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 0), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 524288), 0);
	AP_CHECK_EQ_U64(p->nsample_types, AP_HEAP_NVALUES);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, AP_ST_ALLOC_OBJECTS), 0);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, AP_ST_INUSE_SPACE), 3);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, AP_ST_INUSE_USABLE), 13);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, AP_ST_ALLOC_EXACT), 14);
	AP_CHECK_EQ_INT(ap_profile_find_sample_type(p, AP_ST_INUSE_OBJECTS_VAR2),
			19);
	AP_CHECK(strcmp(ap_profile_string(p, p->period_type.type), "space") == 0);
	AP_CHECK(strcmp(ap_profile_string(p, p->sample_types[1].unit), "bytes") == 0);
	AP_CHECK_EQ_INT(p->period, 524288);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 524288), AP_EINVAL);
	ap_profile_destroy(p);
}

AP_TEST(validate_reports_broken_references)
{
	ap_profile *p;
	char err[160];
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_add_comment(p, "hello"), 0);
	p->doc_url = 42; /* a caller scribbling on the public fields */
	AP_CHECK_EQ_INT(ap_profile_validate(p, err, sizeof err), AP_ECORRUPT);
	AP_CHECK(strstr(err, "doc_url") != NULL);
	p->doc_url = 0;
	p->comments[0] = -1;
	AP_CHECK_EQ_INT(ap_profile_validate(p, err, sizeof err), AP_ECORRUPT);
	AP_CHECK(strstr(err, "comment 0: string index -1") != NULL);
	p->comments[0] = 1;
	AP_CHECK_EQ_INT(ap_profile_validate(p, err, sizeof err), 0);
	AP_CHECK_EQ_INT(ap_profile_validate(NULL, err, sizeof err), AP_ECORRUPT);
	ap_profile_destroy(p);
}

/* A small profile touching every builder; 0 or the first error. */
static int build_small(ap_profile *p)
{
	int rc = ap_profile_init_heap(p, 4096);
	ap_mapping m = { .memory_start = 0x1000, .memory_limit = 0x2000 };
	m.filename = ap_profile_intern(p, "/bin/prog");
	if (rc || m.filename < 0)
		return rc ? rc : (int)m.filename;
	uint64_t mid, fid, lid;
	if ((rc = ap_profile_add_mapping(p, &m, &mid)))
		return rc;
	ap_function f = { .name = ap_profile_intern(p, "main") };
	if (f.name < 0 || (rc = ap_profile_add_function(p, &f, &fid)))
		return f.name < 0 ? (int)f.name : rc;
	for (int i = 0; i < 40; i++) {
		ap_line ln = { .function_id = fid, .line = i };
		ap_location loc = { .mapping_id = mid, .address = 0x1000u + i,
				    .lines = &ln, .nlines = 1 };
		if ((rc = ap_profile_add_location(p, &loc, &lid)))
			return rc;
		int64_t v[AP_HEAP_NVALUES] = { i, i * 10 };
		if ((rc = ap_profile_add_sample(p, &lid, 1, v, NULL, 0)))
			return rc;
		char c[32];
		snprintf(c, sizeof c, "comment %d", i);
		if ((rc = ap_profile_add_comment(p, c)))
			return rc;
	}
	return 0;
}

AP_TEST(allocation_failure_at_every_point_leaks_nothing)
{
	struct fail_alloc fa;
	long n;
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		ap_profile *p = NULL;
		int rc = ap_profile_create(&a, &p);
		if (!rc)
			rc = build_small(p);
		if (!fa.failed) {
			AP_CHECK_EQ_INT(rc, 0);
			AP_CHECK_EQ_INT(ap_profile_validate(p, NULL, 0), 0);
			ap_profile_destroy(p);
			AP_CHECK_EQ_INT(fa.live, 0);
			break;
		}
		AP_CHECK_MSG(rc == AP_ENOMEM, "fail at %ld: rc %d", n, rc);
		/* What was built before the failure is still consistent. */
		if (p)
			AP_CHECK_EQ_INT(ap_profile_validate(p, NULL, 0), 0);
		ap_profile_destroy(p);
		AP_CHECK_MSG(fa.live == 0, "fail at %ld: %ld blocks leaked", n,
			     fa.live);
	}
	AP_CHECK(n > 5); /* the loop really injected failures */
}

AP_TEST(allocator_without_hooks_rejected)
{
	ap_allocator a = { NULL, NULL, NULL, NULL };
	ap_profile *p = (ap_profile *)&a;
	AP_CHECK_EQ_INT(ap_profile_create(&a, &p), AP_EINVAL);
	AP_CHECK(p == NULL);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/*
 * Count calls into libc's allocator while counting is set: this executable
 * interposes the malloc family and forwards to glibc's internal entry
 * points. Sanitizers replace malloc themselves, so there the check is off.
 */
#define AP_COUNT_LIBC_MALLOC 1
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
static volatile int counting;
static volatile long libc_calls;

void *malloc(size_t n)
{
	libc_calls += counting;
	return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	libc_calls += counting;
	return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	libc_calls += counting;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	libc_calls += counting && p;
	__libc_free(p);
}

/* A bump allocator over a static buffer: what the runtime's arena is to
 * these modules, minus the recycling. */
static unsigned char bump_buf[8 << 20];
static size_t bump_used;

static void *bump_alloc(void *ctx, size_t n)
{
	(void)ctx;
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof bump_buf - bump_used)
		return NULL;
	void *p = bump_buf + bump_used;
	bump_used += n;
	return p;
}

static void *bump_realloc(void *ctx, void *p, size_t old_n, size_t new_n)
{
	void *q = bump_alloc(ctx, new_n);
	if (q && p)
		memcpy(q, p, old_n < new_n ? old_n : new_n);
	return q;
}

static void bump_free(void *ctx, void *p, size_t n)
{
	(void)ctx, (void)p, (void)n;
}
#endif

/*
 * The preload runtime hands these modules its own arena and must never
 * reach the malloc it intercepts: building a profile, pprof encode (with
 * zlib) and decode, and heap_v2 encode and decode with a custom allocator
 * make no call into libc's malloc family.
 */
AP_TEST(custom_allocator_never_reaches_libc_malloc)
{
#ifdef AP_COUNT_LIBC_MALLOC
	ap_allocator a = { bump_alloc, bump_realloc, bump_free, NULL };
	ap_profile *p = NULL, *q = NULL, *r = NULL;
	unsigned char *buf = NULL;
	char *txt = NULL, err[160];
	size_t len = 0, tlen = 0;
	counting = 1;
	int rc = ap_profile_create(&a, &p);
	if (!rc)
		rc = build_small(p);
	if (!rc)
		rc = ap_pprof_encode(p, true, NULL, &buf, &len);
	if (!rc)
		rc = ap_pprof_decode(buf, len, &a, &q, err, sizeof err);
	if (!rc)
		rc = ap_heapv2_encode(q, NULL, NULL, &txt, &tlen);
	if (!rc)
		rc = ap_heapv2_decode((unsigned char *)txt, tlen, &a, &r, err,
				      sizeof err);
	ap_profile_destroy(p);
	ap_profile_destroy(q);
	ap_profile_destroy(r);
	counting = 0;
	AP_CHECK_EQ_INT(rc, 0);
	AP_CHECK(bump_used > 0);
	AP_CHECK_EQ_INT(libc_calls, 0);
	/* The counter works: one libc allocation is seen. */
	counting = 1;
	void *volatile probe = malloc(16);
	free(probe);
	counting = 0;
	AP_CHECK_EQ_INT(libc_calls, 2);
#endif
}
