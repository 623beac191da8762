/*
 * heapv2_test.c: the heap_v2 text codec (allocprof/heapv2.h): exact text of
 * a small profile, the jeprof transform's effect (jeprof's own scaling
 * applied to the written numbers gives the unbiased values back), round
 * trips, both text flavours, corrupt input with reasons, every prefix, and
 * allocation failure at every point.
 *
 * Hooks for tests/integration/pprof_tools_test.sh (jeprof): with
 * AP_WRITE_SAMPLE_HEAPV2=path the run writes a heap_v2 file there; with
 * AP_READ_HEAPV2=path it decodes that file, prints its totals and, with
 * AP_REENCODE_HEAPV2=out, writes it back out as heap_v2 (keeping the
 * original MAPPED_LIBRARIES mappings), with AP_CONVERT_PPROF=out as pprof. AP_WRITE_CORPUS=dir writes the fuzz
 * seed corpus into dir/heapv2/.
 */
#include "aptest.h"
#include "fmt_testutil.h"

#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "allocprof/heapv2.h"
#include "allocprof/profile.h"

#include <math.h>
#include <string.h>

#define R 524288.0

static void lfree(void *p, size_t n)
{
	ap_allocator_libc()->free(NULL, p, n);
}

/* HT values of k sampled allocations of size z: the exact per-byte
 * inclusion probability pi = 1 - (1 - 1/R)^z (STATISTICS.md section 2). */
static void ht(double k, double z, int64_t *objects, int64_t *bytes)
{
	double pi = -expm1(z * log1p(-1.0 / R));
	*objects = llround(k / pi);
	*bytes = llround(k * z / pi);
}

/*
 * A heap profile with n stacks of two frames: the leaf at 0x401000 + 16 i
 * and a caller stored as return address - 1 (0x402fff), inside one mapping.
 */
static ap_profile *make_heap(const int64_t (*vals)[4], size_t n)
{
	ap_profile *p;
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, (int64_t)R))
		return NULL;
	ap_mapping m = { .memory_start = 0x400000, .memory_limit = 0x500000,
			 .file_offset = 0x1000 };
	m.filename = ap_profile_intern(p, "/usr/bin/demo prog");
	uint64_t mid, caller;
	ap_location c = { .address = 0x402fff };
	int rc = ap_profile_add_mapping(p, &m, &mid);
	c.mapping_id = mid;
	if (!rc)
		rc = ap_profile_add_location(p, &c, &caller);
	for (size_t i = 0; i < n && !rc; i++) {
		ap_location leaf = { .mapping_id = mid,
				     .address = 0x401000 + 16 * i };
		uint64_t st[2] = { 0, caller };
		rc = ap_profile_add_location(p, &leaf, &st[0]);
		int64_t v[AP_HEAP_NVALUES] = { vals[i][0], vals[i][1], vals[i][2], vals[i][3] };
		if (!rc)
			rc = ap_profile_add_sample(p, st, 2, v, NULL, 0);
	}
	if (rc) {
		ap_profile_destroy(p);
		return NULL;
	}
	return p;
}

AP_TEST(encode_exact_text)
{
	int64_t v[1][4];
	ht(3, 4096, &v[0][0], &v[0][1]); /* alloc */
	ht(1, 4096, &v[0][2], &v[0][3]); /* inuse */
	ap_profile *p = make_heap(v, 1);
	AP_CHECK(p != NULL);
	char *txt;
	size_t len;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &txt, &len), 0);
	uint64_t ao, as, io, is;
	AP_CHECK_EQ_INT(ap_jeprof_transform((double)v[0][0], (double)v[0][1],
					    R, &ao, &as), 0);
	AP_CHECK_EQ_INT(ap_jeprof_transform((double)v[0][2], (double)v[0][3],
					    R, &io, &is), 0);
	char want[512];
	snprintf(want, sizeof want,
		 "heap_v2/524288\n"
		 "  t*: %llu: %llu [%llu: %llu]\n"
		 "@ 0x401000 0x403000\n"
		 "  t*: %llu: %llu [%llu: %llu]\n"
		 "\n"
		 "MAPPED_LIBRARIES:\n"
		 "400000-500000 r-xp 00001000 00:00 0 /usr/bin/demo prog\n",
		 (unsigned long long)io, (unsigned long long)is,
		 (unsigned long long)ao, (unsigned long long)as,
		 (unsigned long long)io, (unsigned long long)is,
		 (unsigned long long)ao, (unsigned long long)as);
	AP_CHECK_MSG(strcmp(txt, want) == 0, "got:\n%s\nwant:\n%s", txt, want);
	AP_CHECK_EQ_U64(len, strlen(want));
	/* Three 4 KiB samples: the count written is the sample count. */
	AP_CHECK_EQ_U64(ao, 3);
	AP_CHECK_EQ_U64(io, 1);
	maybe_write_corpus("heapv2", "exact_text", txt, len);
	lfree(txt, len + 1);

	AP_CHECK_EQ_INT(ap_heapv2_encode(p, "7f00-7f10 r-xp 0 08:01 5 /lib/x.so",
					 NULL, &txt, &len), 0);
	AP_CHECK(strstr(txt, "MAPPED_LIBRARIES:\n7f00-7f10 r-xp 0 08:01 5 "
			"/lib/x.so\n") != NULL);
	lfree(txt, len + 1);
	ap_profile_destroy(p);
}

/* jeprof's AdjustSamples (v2): n, s scaled by 1 / (1 - exp(-(s/n)/R)). */
static void jeprof_scale(double n, double s, double *n_out, double *s_out)
{
	double f = n ? 1.0 / (1.0 - exp(-(s / n) / R)) : 1.0;
	*n_out = n * f;
	*s_out = s * f;
}

/*
 * Tolerances from integer rounding. ap_jeprof_transform writes an integer
 * count c near c* = objects * f (f = 1 - exp(-avg/R)) and s = c * avg
 * rounded, so jeprof prints both values scaled by c / c*, and the rounding
 * of s moves its average, hence both printed values, by a relative 0.5 / s
 * at most (jeprof's scaling has elasticity between 0 and 1 in the
 * average). Add 1 for the final rounding to integers.
 */
static double line_tolerance(int64_t objects, int64_t bytes,
			     uint64_t c_written, uint64_t s_written)
{
	double f = -expm1(-((double)bytes / (double)objects) / R);
	double c_star = (double)objects * f;
	return fabs((double)c_written - c_star) / c_star +
	       0.5 / (double)s_written + 1e-12;
}

static void check_line(int64_t objects, int64_t bytes, double n_jeprof,
		       double s_jeprof, uint64_t c_written, uint64_t s_written,
		       int *ok)
{
	*ok = 1;
	if (!bytes) {
		*ok = n_jeprof == 0 && s_jeprof == 0;
		return;
	}
	double rel = line_tolerance(objects, bytes, c_written, s_written);
	if (fabs(s_jeprof - (double)bytes) > rel * (double)bytes + 1)
		*ok = 0;
	if (fabs(n_jeprof - (double)objects) > rel * (double)objects + 1)
		*ok = 0;
}

static const double sizes[] = { 8, 64, 1000, 65536, 363409, 524288,
				4e6, 1e8 };
static const double ks[] = { 1, 2, 7, 100, 5000 };
#define NS (sizeof sizes / sizeof sizes[0])
#define NK (sizeof ks / sizeof ks[0])

static void fill_grid(int64_t (*v)[4])
{
	for (size_t i = 0; i < NS; i++)
		for (size_t j = 0; j < NK; j++) {
			int64_t *x = v[i * NK + j];
			ht(ks[j], sizes[i], &x[0], &x[1]);
			ht(ks[j] > 1 ? ks[j] - 1 : 0, sizes[i], &x[2], &x[3]);
		}
}

AP_TEST(jeprof_scaling_recovers_unbiased_values)
{
	int64_t v[NS * NK][4];
	fill_grid(v);
	ap_profile *p = make_heap(v, NS * NK);
	AP_CHECK(p != NULL);
	char *txt;
	size_t len;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &txt, &len), 0);
	maybe_write_corpus("heapv2", "grid", txt, len);
	const char *s = strchr(txt, '@');
	for (size_t i = 0; i < NS * NK; i++) {
		AP_CHECK(s != NULL);
		s = strstr(s, "t*:");
		AP_CHECK(s != NULL);
		unsigned long long c[4];
		AP_CHECK(sscanf(s, "t*: %llu: %llu [%llu: %llu]", &c[0], &c[1],
				&c[2], &c[3]) == 4);
		double n, b;
		int ok;
		jeprof_scale((double)c[2], (double)c[3], &n, &b);
		check_line(v[i][0], v[i][1], n, b, c[2], c[3], &ok);
		AP_CHECK_MSG(ok, "alloc line %zu: wrote %llu/%llu, jeprof prints "
			     "%.1f/%.1f, want %lld/%lld", i, c[2], c[3], n, b,
			     (long long)v[i][0], (long long)v[i][1]);
		jeprof_scale((double)c[0], (double)c[1], &n, &b);
		check_line(v[i][2], v[i][3], n, b, c[0], c[1], &ok);
		AP_CHECK_MSG(ok, "inuse line %zu: jeprof prints %.1f/%.1f, want "
			     "%lld/%lld", i, n, b, (long long)v[i][2],
			     (long long)v[i][3]);
		/* For HT values of k samples the count written is k. */
		AP_CHECK_EQ_U64(c[2], (uint64_t)ks[i % NK]);
		s = strchr(s, '@');
	}
	lfree(txt, len + 1);
	ap_profile_destroy(p);
}

/*
 * One sampled 1 MiB object at R = 512 KiB: pi = 1 - e^-2 = 0.865, so its HT
 * object count 1.156 is stored rounded to 1 while bytes keep 1212396. The
 * average bytes/objects would then be 16% too large and jeprof, scaling by
 * 1 / (1 - exp(-avg/R)), would print bytes 3% off. With the sample's "bytes"
 * label the encoder uses the true size, so only integer rounding remains
 * (line_tolerance above).
 */
/* Encode p (then destroyed) and parse its first record's four counts into
 * c; the number of counts parsed (4 when well formed). */
static int first_record(ap_profile *p, unsigned long long c[4])
{
	char *txt;
	size_t len;
	int n = 0;
	if (ap_heapv2_encode(p, NULL, NULL, &txt, &len) == 0) {
		const char *at = strchr(txt, '@');
		const char *s = at ? strstr(at, "t*:") : NULL;
		n = s ? sscanf(s, "t*: %llu: %llu [%llu: %llu]", &c[0], &c[1],
			       &c[2], &c[3]) : 0;
		lfree(txt, len + 1);
	}
	ap_profile_destroy(p);
	return n;
}

AP_TEST(jeprof_scaling_uses_the_size_label_for_large_objects)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, (int64_t)R), 0);
	double z = 1048576, pi = -expm1(z * log1p(-1.0 / R));
	int64_t bytes = llround(z / pi);
	int64_t v[AP_HEAP_NVALUES] = { 1, bytes, 1, bytes };
	ap_location leaf = { .address = 0x401000 };
	uint64_t id;
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &leaf, &id), 0);
	ap_label lab = { .key = ap_profile_intern(p, "bytes"), .num = (int64_t)z };
	lab.num_unit = lab.key;
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, &id, 1, v, &lab, 1), 0);
	unsigned long long c[4];
	AP_CHECK_EQ_INT(first_record(p, c), 4);
	double no, nb;
	jeprof_scale((double)c[2], (double)c[3], &no, &nb);
	/* c = 1 written against c* = 1.156 * 0.865 = 1: rounding-free. */
	AP_CHECK_NEAR(nb, (double)bytes, 0.5 / (double)c[3] + 1e-9, 1);
}

/*
 * At rate 1 the object column is an exact count, so a sample whose sizes
 * differ (a size-class site: the in-use objects 200000, 201000 and 203000
 * against an allocated average of 200500) keeps its exact bytes; deriving
 * the count from the label would write 3 objects of 200500 bytes instead.
 */
AP_TEST(rate_1_uses_the_exact_object_column_for_mixed_sizes)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 1), 0);
	int64_t v[AP_HEAP_NVALUES] = { 6, 1203000, 3, 604000 };
	ap_location leaf = { .address = 0x401000 };
	uint64_t id;
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &leaf, &id), 0);
	ap_label lab = { .key = ap_profile_intern(p, "bytes"), .num = 200500 };
	lab.num_unit = lab.key;
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, &id, 1, v, &lab, 1), 0);
	unsigned long long c[4];
	AP_CHECK_EQ_INT(first_record(p, c), 4);
	AP_CHECK_EQ_U64(c[0], 3);
	AP_CHECK_EQ_U64(c[1], 604000);
	AP_CHECK_EQ_U64(c[2], 6);
	AP_CHECK_EQ_U64(c[3], 1203000);
}

AP_TEST(round_trip_values_stacks_mappings)
{
	int64_t v[NS * NK][4];
	fill_grid(v);
	ap_profile *p = make_heap(v, NS * NK), *q;
	AP_CHECK(p != NULL);
	char *txt;
	size_t len;
	char err[200];
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &txt, &len), 0);
	int rc = ap_heapv2_decode((unsigned char *)txt, len, NULL, &q, err,
				  sizeof err);
	AP_CHECK_MSG(rc == 0, "%d: %s", rc, err);
	AP_CHECK_EQ_U64(q->nsamples, NS * NK);
	AP_CHECK_EQ_INT(q->period, (int64_t)R);
	AP_CHECK_EQ_U64(q->nmappings, 1);
	AP_CHECK(strcmp(ap_profile_string(q, q->mappings[0].filename),
			"/usr/bin/demo prog") == 0);
	AP_CHECK_EQ_U64(q->mappings[0].file_offset, 0x1000);
	int ao = ap_profile_find_sample_type(q, AP_ST_ALLOC_OBJECTS);
	int as = ap_profile_find_sample_type(q, AP_ST_ALLOC_SPACE);
	int io = ap_profile_find_sample_type(q, AP_ST_INUSE_OBJECTS);
	int is = ap_profile_find_sample_type(q, AP_ST_INUSE_SPACE);
	AP_CHECK(ao >= 0 && as >= 0 && io >= 0 && is >= 0);
	for (size_t i = 0; i < q->nsamples; i++) {
		const ap_sample *s = &q->samples[i], *o = &p->samples[i];
		AP_CHECK_EQ_U64(s->nlocations, 2);
		for (size_t j = 0; j < 2; j++) {
			const ap_location *a = ap_profile_location(q, s->location_ids[j]);
			const ap_location *b = ap_profile_location(p, o->location_ids[j]);
			AP_CHECK_EQ_U64(a->address, b->address);
			AP_CHECK_EQ_U64(a->mapping_id, q->mappings[0].id);
		}
		/* The decoder rounds jeprof's values: check_line's bounds. */
		uint64_t c, sb;
		int ok;
		AP_CHECK_EQ_INT(ap_jeprof_transform((double)v[i][0],
						    (double)v[i][1], R, &c, &sb), 0);
		check_line(v[i][0], v[i][1], (double)s->values[ao],
			   (double)s->values[as], c, sb, &ok);
		AP_CHECK_MSG(ok, "sample %zu alloc %lld/%lld vs %lld/%lld", i,
			     (long long)s->values[ao], (long long)s->values[as],
			     (long long)v[i][0], (long long)v[i][1]);
		if (v[i][3]) {
			AP_CHECK_EQ_INT(ap_jeprof_transform((double)v[i][2],
				(double)v[i][3], R, &c, &sb), 0);
			check_line(v[i][2], v[i][3], (double)s->values[io],
				   (double)s->values[is], c, sb, &ok);
			AP_CHECK_MSG(ok, "sample %zu inuse", i);
		} else {
			AP_CHECK_EQ_INT(s->values[is], 0);
		}
		AP_CHECK_EQ_INT(s->nlabels, 1);
	}
	/* The caller frame is one shared location in both. */
	AP_CHECK_EQ_U64(q->nlocations, p->nlocations);
	/*
	 * Re-encoding the decoded profile writes the same stacks and counts.
	 * Byte values may move: the decoded object counts are integers, so
	 * each line's average shifts by up to 0.5 / objects relative.
	 */
	char *txt2;
	size_t len2;
	AP_CHECK_EQ_INT(ap_heapv2_encode(q, NULL, NULL, &txt2, &len2), 0);
	const char *a = strchr(txt, '@'), *b = strchr(txt2, '@');
	while (a && b) {
		AP_CHECK(strncmp(a, b, strcspn(a, "\n") + 1) == 0);
		unsigned long long x[4], y[4];
		AP_CHECK(sscanf(strstr(a, "t*:"), "t*: %llu: %llu [%llu: %llu]",
				&x[0], &x[1], &x[2], &x[3]) == 4);
		AP_CHECK(sscanf(strstr(b, "t*:"), "t*: %llu: %llu [%llu: %llu]",
				&y[0], &y[1], &y[2], &y[3]) == 4);
		AP_CHECK(x[0] == y[0] && x[2] == y[2]);
		a = strchr(a + 1, '@');
		b = strchr(b + 1, '@');
	}
	AP_CHECK(!a && !b);
	lfree(txt2, len2 + 1);
	lfree(txt, len + 1);
	ap_profile_destroy(p);
	ap_profile_destroy(q);
}

static const char jemalloc_text[] =
	"heap_v2/524288\n"
	"  t*: 3: 1574912 [0: 0]\n"
	"  t0: 3: 1574912 [0: 0]\n"
	"@ 0x55c282d19bbc 0x55c282d0b3c5 0x55c282d0a001\n"
	"  t*: 2: 1048576 [5: 2621440]\n"
	"  t0: 2: 1048576 [5: 2621440]\n"
	"@ 0x55c282d19bbc 0x55c282d0b3c6\r\n"
	"  t*: 1: 526336 [1: 526336]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"55c282c00000-55c282d2c000 r-xp 00000000 08:01 123 /usr/bin/server\n"
	"55c282d2c000-55c282d30000 rw-p 0012c000 08:01 123 /usr/bin/server\n"
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0\n"
	"garbage line that is not a mapping\n";

AP_TEST(decode_jemalloc_text_applies_jeprof_scaling)
{
	ap_profile *q;
	char err[200];
	maybe_write_corpus("heapv2", "jemalloc_text", jemalloc_text,
			   sizeof jemalloc_text - 1);
	int rc = ap_heapv2_decode((const unsigned char *)jemalloc_text,
				  sizeof jemalloc_text - 1, NULL, &q, err,
				  sizeof err);
	AP_CHECK_MSG(rc == 0, "%d: %s", rc, err);
	AP_CHECK_EQ_U64(q->nsamples, 2);
	AP_CHECK_EQ_U64(q->nmappings, 1);
	double n, s;
	jeprof_scale(5, 2621440, &n, &s);
	AP_CHECK_EQ_INT(q->samples[0].values[0], llround(n));
	AP_CHECK_EQ_INT(q->samples[0].values[1], llround(s));
	jeprof_scale(2, 1048576, &n, &s);
	AP_CHECK_EQ_INT(q->samples[0].values[2], llround(n));
	AP_CHECK_EQ_INT(q->samples[0].values[3], llround(s));
	AP_CHECK_EQ_INT(q->samples[0].labels[0].num, 524288);
	/* Leaf raw, callers minus one; the shared leaf is one location. */
	const ap_location *leaf = ap_profile_location(q, q->samples[0].location_ids[0]);
	const ap_location *c1 = ap_profile_location(q, q->samples[0].location_ids[1]);
	AP_CHECK_EQ_U64(leaf->address, 0x55c282d19bbcull);
	AP_CHECK_EQ_U64(c1->address, 0x55c282d0b3c4ull);
	AP_CHECK_EQ_U64(q->samples[1].location_ids[0], leaf->id);
	AP_CHECK_EQ_U64(leaf->mapping_id, q->mappings[0].id);
	AP_CHECK_EQ_U64(q->nlocations, 4);
	ap_profile_destroy(q);
}

AP_TEST(decode_gperftools_flavours)
{
	static const char v2[] =
		"heap profile:    1:   262144 [     2:   524288] @ heap_v2/524288\n"
		"     1:   262144 [     2:   524288] @ 0x1000 0x2001\n"
		"\n--- Memory map: ---\n"
		"00001000-00003000 r-xp 00000000 00:00 0 /bin/a\n";
	static const char exact[] =
		"heap profile:   3:   300 [   3:   300] @ heapprofile\n"
		"   3:   300 [   3:   300] @ 0x10 0x20 0x30\n";
	ap_profile *q;
	char err[200];
	maybe_write_corpus("heapv2", "gperf_v2", v2, sizeof v2 - 1);
	maybe_write_corpus("heapv2", "gperf_exact", exact, sizeof exact - 1);
	AP_CHECK_EQ_INT(ap_heapv2_decode((const unsigned char *)v2,
					 sizeof v2 - 1, NULL, &q, err,
					 sizeof err), 0);
	double n, s;
	jeprof_scale(2, 524288, &n, &s);
	AP_CHECK_EQ_INT(q->samples[0].values[1], llround(s));
	AP_CHECK_EQ_U64(q->nmappings, 1);
	AP_CHECK_EQ_U64(ap_profile_location(q, q->samples[0].location_ids[1])->address,
			0x2000);
	ap_profile_destroy(q);
	AP_CHECK_EQ_INT(ap_heapv2_decode((const unsigned char *)exact,
					 sizeof exact - 1, NULL, &q, err,
					 sizeof err), 0);
	AP_CHECK_EQ_INT(q->samples[0].values[1], 300);
	AP_CHECK_EQ_INT(q->samples[0].values[2], 3);
	AP_CHECK_EQ_U64(q->samples[0].nlocations, 3);
	ap_profile_destroy(q);
	static const char v1[] = "heap profile: 1: 2 [3: 4] @ heap/1048576\n";
	AP_CHECK_EQ_INT(ap_heapv2_decode((const unsigned char *)v1,
					 sizeof v1 - 1, NULL, &q, err,
					 sizeof err), AP_EUNSUPPORTED);
	AP_CHECK(strstr(err, "only heap_v2") != NULL);
}

static const struct {
	const char *name, *text, *reason;
} bad[] = {
	{ "empty", "", "empty input" },
	{ "not_heap", "hello\n", "not a heap profile" },
	{ "rate_zero", "heap_v2/0\n", "rate > 0" },
	{ "rate_word", "heap_v2/abc\n", "rate > 0" },
	{ "rate_overflow", "heap_v2/99999999999999999999\n", "rate > 0" },
	{ "no_counts", "heap_v2/10\n@ 0x1\n@ 0x2\n  t*: 1: 1 [1: 1]\n",
	  "line 2: stack without a t*" },
	{ "no_counts_last", "heap_v2/10\n@ 0x1\n", "stack without" },
	{ "two_counts", "heap_v2/10\n@ 0x1\n t*: 1: 1 [1: 1]\n t*: 1: 1 [1: 1]\n",
	  "line 4: second t*" },
	{ "bad_counts", "heap_v2/10\n@ 0x1\n  t*: 1: 1 [1 1]\n",
	  "line 3: malformed counts" },
	{ "count_overflow", "heap_v2/10\n@ 0x1\n t*: 1: 99999999999999999999 [0: 0]\n",
	  "malformed counts" },
	{ "bad_address", "heap_v2/10\n@ 0x1 0xzz\n t*: 1: 1 [1: 1]\n",
	  "line 2: bad address at column 7" },
	{ "long_address", "heap_v2/10\n@ 0x11112222333344445\n t*: 1: 1 [1: 1]\n",
	  "bad address" },
	{ "junk", "heap_v2/10\nfoo\n", "line 2: expected" },
	{ "zero_bytes", "heap_v2/10\n@ 0x1\n t*: 5: 0 [0: 0]\n",
	  "5 objects of 0 bytes" },
	{ "huge_value", "heap_v2/1\n@ 0x1\n t*: 1: 18446744073709551615 [0: 0]\n",
	  "out of range" },
	{ "gperf_bad_line", "heap profile: 1: 1 [1: 1] @ heapprofile\n1: 1 @ 0x1\n",
	  "line 2: expected" },
	{ "gperf_bad_type", "heap profile: 1: 1 [1: 1] @ 12\n", "" },
	{ "gzip_garbage", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff", "gzip" },
};

AP_TEST(corrupt_text_rejected_with_reason)
{
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ap_profile *q = (ap_profile *)1;
		char err[200] = "";
		size_t n = strlen(bad[i].text);
		maybe_write_corpus("heapv2", bad[i].name, bad[i].text, n);
		int rc = ap_heapv2_decode((const unsigned char *)bad[i].text, n,
					  NULL, &q, err, sizeof err);
		AP_CHECK_MSG(rc == AP_ECORRUPT || rc == AP_EUNSUPPORTED,
			     "%s: rc %d", bad[i].name, rc);
		AP_CHECK(q == NULL);
		AP_CHECK_MSG(err[0] && strstr(err, bad[i].reason) != NULL,
			     "%s: reason \"%s\" lacks \"%s\"", bad[i].name, err,
			     bad[i].reason);
	}
}

AP_TEST(every_prefix_decodes_or_fails_cleanly)
{
	const size_t len = sizeof jemalloc_text - 1;
	for (size_t n = 0; n <= len; n++) {
		ap_profile *q = NULL;
		char err[200] = "";
		int rc = ap_heapv2_decode((const unsigned char *)jemalloc_text,
					  n, NULL, &q, err, sizeof err);
		AP_CHECK_MSG(rc == 0 || (rc == AP_ECORRUPT && err[0]),
			     "prefix %zu: rc %d", n, rc);
		/* Cut inside the first stack's lines: never a full profile. */
		if (rc == 0 && n < 100)
			AP_CHECK(q->nsamples < 2);
		ap_profile_destroy(q);
	}
}

AP_TEST(empty_stack_written_as_null_address)
{
	ap_profile *p, *q;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, (int64_t)R), 0);
	int64_t v[AP_HEAP_NVALUES] = { 1, 1000000, 1, 1000000 };
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, NULL, 0, v, NULL, 0), 0);
	char *txt;
	size_t len;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &txt, &len), 0);
	AP_CHECK(strstr(txt, "\n@ 0x0\n  t*: 1: ") != NULL);
	AP_CHECK_EQ_INT(ap_heapv2_decode((unsigned char *)txt, len, NULL, &q,
					 NULL, 0), 0);
	AP_CHECK_EQ_U64(q->nsamples, 1);
	AP_CHECK_EQ_U64(ap_profile_location(q, q->samples[0].location_ids[0])->address, 0);
	lfree(txt, len + 1);
	ap_profile_destroy(q);
	ap_profile_destroy(p);
}

AP_TEST(decode_any_sniffs_text_pprof_and_gzip)
{
	ap_profile *p, *q;
	bool text = false;
	char err[200];
	const unsigned char *t = (const unsigned char *)jemalloc_text;
	size_t tlen = sizeof jemalloc_text - 1;
	AP_CHECK_EQ_INT(ap_profile_decode_any(t, tlen, NULL, &q, &text, err,
					      sizeof err), 0);
	AP_CHECK(text && q->nsamples == 2);
	unsigned char *pb, *gz;
	size_t pblen, gzlen;
	AP_CHECK_EQ_INT(ap_pprof_encode(q, false, NULL, &pb, &pblen), 0);
	AP_CHECK_EQ_INT(ap_profile_decode_any(pb, pblen, NULL, &p, &text, err,
					      sizeof err), 0);
	AP_CHECK(!text && profiles_differ(p, q) == NULL);
	ap_profile_destroy(p);
	AP_CHECK_EQ_INT(ap_gzip_compress(t, tlen, 6, NULL, &gz, &gzlen), 0);
	AP_CHECK_EQ_INT(ap_profile_decode_any(gz, gzlen, NULL, &p, &text, err,
					      sizeof err), 0);
	AP_CHECK(text && profiles_differ(p, q) == NULL);
	ap_profile_destroy(p);
	/* Garbage is reported as a pprof problem. */
	AP_CHECK_EQ_INT(ap_profile_decode_any((const unsigned char *)"\x0f", 1,
					      NULL, &p, &text, err, sizeof err),
			AP_ECORRUPT);
	AP_CHECK(!text && p == NULL && strstr(err, "wire type") != NULL);
	lfree(gz, gzlen + 1);
	lfree(pb, pblen + 1);
	ap_profile_destroy(q);
}

AP_TEST(encode_rejects_non_heap_profiles)
{
	ap_profile *p;
	char *t = (char *)1;
	size_t n = 1;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	p->period = 100;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &t, &n), AP_EINVAL);
	AP_CHECK(t == NULL && n == 0);
	ap_profile_destroy(p);
	int64_t v[1][4] = { { -1, 10, 0, 0 } };
	p = make_heap(v, 1);
	AP_CHECK(p != NULL);
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &t, &n), AP_EINVAL);
	ap_profile_destroy(p);
	int64_t w[1][4] = { { 0, 10, 0, 0 } }; /* bytes without objects */
	p = make_heap(w, 1);
	AP_CHECK(p != NULL);
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &t, &n), AP_EINVAL);
	p->period = 0;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &t, &n), AP_EINVAL);
	ap_profile_destroy(p);
}

AP_TEST(allocation_failure_at_every_point)
{
	int64_t v[NS * NK][4];
	fill_grid(v);
	ap_profile *p = make_heap(v, NS * NK);
	AP_CHECK(p != NULL);
	char *txt;
	size_t len;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &txt, &len), 0);
	struct fail_alloc fa;
	long n;
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		ap_profile *q = NULL;
		int rc = ap_heapv2_decode((unsigned char *)txt, len, &a, &q,
					  NULL, 0);
		if (!fa.failed) {
			AP_CHECK_EQ_INT(rc, 0);
			ap_profile_destroy(q);
			AP_CHECK_EQ_INT(fa.live, 0);
			break;
		}
		AP_CHECK_MSG(rc == AP_ENOMEM, "decode fail at %ld: %d", n, rc);
		AP_CHECK_EQ_INT(fa.live, 0);
	}
	AP_CHECK(n > 5);
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		char *t2;
		size_t l2;
		int rc = ap_heapv2_encode(p, NULL, &a, &t2, &l2);
		if (!fa.failed) {
			AP_CHECK(rc == 0 && l2 == len && !memcmp(t2, txt, len));
			a.free(a.ctx, t2, l2 + 1);
			break;
		}
		AP_CHECK_MSG(rc == AP_ENOMEM, "encode fail at %ld: %d", n, rc);
		AP_CHECK_EQ_INT(fa.live, 0);
	}
	lfree(txt, len + 1);
	ap_profile_destroy(p);
}

/*
 * The file jeprof reads in pprof_tools_test.sh: HT values of two stacks
 * (1 KiB and 1 MiB allocations), as a real allocprof profile has. Prints
 * the totals jeprof must show and the relative tolerance check_line's
 * rounding argument allows for them (the worst line's bound).
 */
AP_TEST(integration_hook_write_sample)
{
	const char *path = getenv("AP_WRITE_SAMPLE_HEAPV2");
	if (!path)
		return;
	int64_t v[2][4];
	ht(300, 1024, &v[0][0], &v[0][1]);
	ht(100, 1024, &v[0][2], &v[0][3]);
	ht(200, 1048576, &v[1][0], &v[1][1]);
	ht(150, 1048576, &v[1][2], &v[1][3]);
	ap_profile *p = make_heap(v, 2);
	AP_CHECK(p != NULL);
	char *txt;
	size_t len;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, NULL, NULL, &txt, &len), 0);
	AP_CHECK_EQ_INT(write_bytes(path, txt, len), 0);
	double tol = 0;
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 4; k += 2) {
			uint64_t c, sb;
			AP_CHECK_EQ_INT(ap_jeprof_transform((double)v[i][k],
				(double)v[i][k + 1], R, &c, &sb), 0);
			double rel = line_tolerance(v[i][k], v[i][k + 1], c, sb);
			tol = rel > tol ? rel : tol;
		}
	printf("expect alloc_objects=%lld alloc_space=%lld inuse_objects=%lld "
	       "inuse_space=%lld tol=%.9f\n", (long long)(v[0][0] + v[1][0]),
	       (long long)(v[0][1] + v[1][1]), (long long)(v[0][2] + v[1][2]),
	       (long long)(v[0][3] + v[1][3]), tol);
	lfree(txt, len + 1);
	ap_profile_destroy(p);
}

/* Decode a heap_v2 file (a real jemalloc dump in the integration test). */
AP_TEST(integration_hook_read)
{
	const char *path = getenv("AP_READ_HEAPV2");
	if (!path)
		return;
	FILE *f = fopen(path, "rb");
	AP_CHECK_MSG(f != NULL, "cannot open %s", path);
	static unsigned char data[64 << 20];
	size_t len = fread(data, 1, sizeof data, f);
	fclose(f);
	ap_profile *q;
	char err[200];
	int rc = ap_heapv2_decode(data, len, NULL, &q, err, sizeof err);
	AP_CHECK_MSG(rc == 0, "decode %s: %s", path, err);
	long long sum[4] = { 0, 0, 0, 0 };
	for (size_t i = 0; i < q->nsamples; i++)
		for (int k = 0; k < 4; k++)
			sum[k] += q->samples[i].values[k];
	printf("decoded samples=%zu mappings=%zu alloc_objects=%lld "
	       "alloc_space=%lld inuse_objects=%lld inuse_space=%lld\n",
	       q->nsamples, q->nmappings, sum[0], sum[1], sum[2], sum[3]);
	const char *out = getenv("AP_REENCODE_HEAPV2");
	if (out) {
		char *txt;
		size_t n;
		AP_CHECK_EQ_INT(ap_heapv2_encode(q, NULL, NULL, &txt, &n), 0);
		AP_CHECK_EQ_INT(write_bytes(out, txt, n), 0);
		lfree(txt, n + 1);
	}
	const char *pb = getenv("AP_CONVERT_PPROF");
	if (pb) {
		unsigned char *buf;
		size_t n;
		AP_CHECK_EQ_INT(ap_pprof_encode(q, true, NULL, &buf, &n), 0);
		AP_CHECK_EQ_INT(write_bytes(pb, buf, n), 0);
		lfree(buf, n + 1);
	}
	ap_profile_destroy(q);
}
