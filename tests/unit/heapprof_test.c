/*
 * heapprof_test.c: the allocprof heap profile conventions the runtime, the
 * command and the statistical tests share (src/lib/heapprof.c): the layout
 * and rounding of a sample's values, the histogram comments, and the one
 * decoder entry point for every supported profile format.
 */
#include <stdlib.h>
#include <string.h>

#include "allocprof/codec.h"
#include "allocprof/estimate.h"
#include "allocprof/heapv2.h"
#include "allocprof/hist.h"
#include "allocprof/profile.h"
#include "aptest.h"
#include "fmt_testutil.h"

/* Each value lands at the sample type ap_profile_init_heap gives it. */
AP_TEST(values_follow_the_heap_sample_types)
{
	/* var2 sums are stored in ap_var2_encode units of the rate:
	 * 2^32 var2 / R^4, so at R = 4096 a var2 of k * 2^16 stores k. */
	ap_heap_sums a = { .objects = 11, .space = 12, .u = 13, .space_var = 14,
			   .objects_var = 15, .usable = 16, .samples = 17,
			   .exact = 18, .space_var2 = 19 * 65536.0,
			   .objects_var2 = 20 * 65536.0 };
	ap_heap_sums u = { .objects = 21, .space = 22, .u = 23, .space_var = 24,
			   .objects_var = 25, .usable = 26, .samples = 27,
			   .exact = 28, .space_var2 = 29 * 65536.0,
			   .objects_var2 = 30 * 65536.0 };
	static const struct {
		const char *type;
		int64_t want;
	} exp[AP_HEAP_NVALUES] = {
		{ AP_ST_ALLOC_OBJECTS, 11 }, { AP_ST_ALLOC_SPACE, 12 },
		{ AP_ST_ALLOC_U, 13 }, { AP_ST_ALLOC_SPACE_VAR, 14 },
		{ AP_ST_ALLOC_OBJECTS_VAR, 15 }, { AP_ST_ALLOC_USABLE, 16 },
		{ AP_ST_ALLOC_SAMPLES, 17 }, { AP_ST_INUSE_OBJECTS, 21 },
		{ AP_ST_INUSE_SPACE, 22 }, { AP_ST_INUSE_U, 23 },
		{ AP_ST_INUSE_SPACE_VAR, 24 }, { AP_ST_INUSE_OBJECTS_VAR, 25 },
		{ AP_ST_INUSE_USABLE, 26 }, { AP_ST_INUSE_SAMPLES, 27 },
		{ AP_ST_ALLOC_EXACT, 18 }, { AP_ST_ALLOC_SPACE_VAR2, 19 },
		{ AP_ST_ALLOC_OBJECTS_VAR2, 20 }, { AP_ST_INUSE_EXACT, 28 },
		{ AP_ST_INUSE_SPACE_VAR2, 29 }, { AP_ST_INUSE_OBJECTS_VAR2, 30 },
	};
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 4096), 0);
	AP_CHECK_EQ_U64(p->nsample_types, AP_HEAP_NVALUES);
	int64_t v[AP_HEAP_NVALUES];
	ap_heap_sums_encode(&a, &u, 4096, 1, v);
	for (size_t i = 0; i < AP_HEAP_NVALUES; i++) {
		int k = ap_profile_find_sample_type(p, exp[i].type);
		AP_CHECK_MSG(k >= 0 && v[k] == exp[i].want, "%s: index %d",
			     exp[i].type, k);
	}
	ap_profile_destroy(p);
}

AP_TEST(whole_values_are_kept_and_residue_is_zero)
{
	ap_heap_sums a = { .objects = 3, .space = 4096, .u = -1e-9,
			   .space_var = 1e300, .objects_var = (double)NAN,
			   .usable = 0, .samples = 3 };
	int64_t v[AP_HEAP_NVALUES];
	ap_heap_sums_encode(&a, &a, 4096, 7, v);
	AP_CHECK_EQ_INT(v[0], 3);          /* whole values round to themselves */
	AP_CHECK_EQ_INT(v[1], 4096);
	AP_CHECK_EQ_INT(v[5], 0);          /* negative residue */
	AP_CHECK_EQ_INT(v[6], INT64_MAX);  /* saturates */
	AP_CHECK_EQ_INT(v[7], 0);          /* NaN */
	AP_CHECK_EQ_INT(v[12], 0);
	AP_CHECK_EQ_INT(v[4], 3);
	/* An inuse view whose samples were all freed reports 0 everywhere,
	 * whatever float residue its sums kept. */
	ap_heap_sums freed = { .objects = 3.0000000001, .space = 7,
			       .u = 2, .space_var = 1, .objects_var = 1,
			       .usable = 9, .samples = 0, .exact = 4,
			       .space_var2 = 1, .objects_var2 = 1 };
	ap_heap_sums_encode(&a, &freed, 4096, 7, v);
	static const int inuse[] = { 2, 3, 8, 9, 10, 11, 13, 17, 18, 19 };
	for (size_t i = 0; i < sizeof inuse / sizeof inuse[0]; i++)
		AP_CHECK_EQ_INT(v[inuse[i]], 0);
}

/*
 * Fractions are rounded without bias: over many lines (keys) the written
 * objects average the true 1.2 (a weight of an object sampled with
 * probability 1/1.2), where round-to-nearest would write 1 every time.
 * n = 20000 keys: the mean's SD is sqrt(0.2 * 0.8 / n) = 0.0028, so 4 SD
 * is 0.0113. The same key always writes the same value.
 */
AP_TEST(fractions_round_without_bias)
{
	const int n = 20000;
	double sum = 0;
	for (int i = 0; i < n; i++) {
		ap_heap_sums a = { .objects = 1.2, .space = 1.2, .samples = 1 };
		int64_t v[AP_HEAP_NVALUES], w[AP_HEAP_NVALUES];
		uint64_t key = ap_round_key(NULL, 0, (uint32_t)i) ^ 0x5eed;
		ap_heap_sums_encode(&a, &a, 4096, key, v);
		ap_heap_sums_encode(&a, &a, 4096, key, w);
		AP_CHECK(v[0] == w[0] && (v[0] == 1 || v[0] == 2));
		sum += (double)v[0];
	}
	AP_CHECK_NEAR(sum / n, 1.2, 0, 0.0113);
}

static ap_hist_snap *sample_snap(void)
{
	ap_hist *h;
	ap_hist_snap *s = NULL;
	if (ap_hist_create(&h, 5, NULL))
		return NULL;
	for (uint64_t x = 1; x < 100000; x = x * 3 + 1)
		(void)ap_hist_add_n(h, x, x % 7 + 1);
	(void)ap_hist_snapshot(h, NULL, &s);
	ap_hist_destroy(h);
	return s;
}

AP_TEST(hist_comment_round_trips)
{
	ap_hist_snap *s = sample_snap();
	AP_CHECK(s != NULL);
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_add_comment(p, "plain note"), 0);
	AP_CHECK_EQ_INT(ap_profile_hist_comment_add(p, "alloc_size", s), 0);
	AP_CHECK_EQ_U64(p->ncomments, 2);
	const char *c = ap_profile_string(p, p->comments[1]);
	AP_CHECK(!strncmp(c, "allocprof.hist.alloc_size=", 26));
	char *name = (char *)1;
	ap_hist_snap *t = (ap_hist_snap *)1;
	AP_CHECK_EQ_INT(ap_profile_hist_comment_decode(
				ap_profile_string(p, p->comments[0]), NULL,
				&name, &t), AP_ENOTFOUND);
	AP_CHECK(name == NULL && t == NULL);
	AP_CHECK_EQ_INT(ap_profile_hist_comment_decode(c, NULL, &name, &t), 0);
	AP_CHECK(!strcmp(name, "alloc_size") && ap_hist_snap_equal(s, t));
	free(name); /* NULL allocator: libc */
	ap_hist_snap_destroy(t);
	/* Through the pprof encoding, as the runtime writes and the CLI reads. */
	unsigned char *buf;
	size_t len;
	ap_profile *q;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, true, NULL, &buf, &len), 0);
	AP_CHECK_EQ_INT(ap_pprof_decode(buf, len, NULL, &q, NULL, 0), 0);
	AP_CHECK_EQ_INT(ap_profile_hist_comment_decode(
				ap_profile_string(q, q->comments[1]), NULL,
				&name, &t), 0);
	AP_CHECK(!strcmp(name, "alloc_size") && ap_hist_snap_equal(s, t));
	free(name);
	ap_hist_snap_destroy(t);
	free(buf);
	ap_profile_destroy(q);
	/* Names the decoder could not read back are refused. */
	AP_CHECK_EQ_INT(ap_profile_hist_comment_add(p, "", s), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_hist_comment_add(p, "a=b", s), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_hist_comment_add(p, "x", NULL), AP_EINVAL);
	AP_CHECK_EQ_U64(p->ncomments, 2);
	ap_profile_destroy(p);
	ap_hist_snap_destroy(s);
}

/* ap_profile_hist_next reads the extensions, then the comments of
 * earlier versions, and steps over a malformed one of either. */
AP_TEST(hist_next_reads_extensions_and_old_comments)
{
	ap_hist_snap *s = sample_snap();
	AP_CHECK(s != NULL);
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_add_comment(p, "plain note"), 0);
	AP_CHECK_EQ_INT(ap_profile_hist_comment_add(p, "lifetime_ns", s), 0);
	AP_CHECK_EQ_INT(ap_profile_add_comment(p, "allocprof.hist.bad=QUJD"), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "other", "x", 1), 0);
	AP_CHECK_EQ_INT(ap_profile_hist_add(p, "alloc_size", s), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "hist.broken", "xyz", 3), 0);
	AP_CHECK_EQ_INT(ap_profile_hist_add(p, "", s), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_hist_add(p, "has space", s), AP_EINVAL);
	AP_CHECK_EQ_U64(p->ncomments, 3);
	AP_CHECK(!strcmp(p->exts[1].name, "hist.alloc_size"));
	/* Through the pprof encoding. */
	unsigned char *buf;
	size_t len;
	ap_profile *q;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, true, NULL, &buf, &len), 0);
	AP_CHECK_EQ_INT(ap_pprof_decode(buf, len, NULL, &q, NULL, 0), 0);
	free(buf);
	static const struct { int rc; const char *name; } want[] = {
		{ 0, "alloc_size" }, { AP_ECORRUPT, NULL }, { 0, "lifetime_ns" },
		{ AP_ECORRUPT, NULL }, { AP_ENOTFOUND, NULL }, { AP_ENOTFOUND, NULL } };
	size_t cur = 0;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *name = (char *)1;
		ap_hist_snap *t = (ap_hist_snap *)1;
		int rc = ap_profile_hist_next(q, &cur, NULL, &name, &t);
		AP_CHECK_MSG(rc == want[i].rc, "step %zu: %d", i, rc);
		if (rc == 0) {
			AP_CHECK(!strcmp(name, want[i].name) && ap_hist_snap_equal(s, t));
			free(name);
			ap_hist_snap_destroy(t);
		} else {
			AP_CHECK(name == NULL && t == NULL);
		}
	}
	ap_profile_destroy(q);
	ap_profile_destroy(p);
	ap_hist_snap_destroy(s);
}

AP_TEST(hist_comment_rejects_malformed_ones)
{
	static const struct {
		const char *comment;
		int rc;
	} cases[] = {
		{ "allocprof.hist.", AP_ENOTFOUND },
		{ "allocprof.hist.=QUJD", AP_ENOTFOUND },   /* no name */
		{ "allocprof.hist.x", AP_ENOTFOUND },       /* no '=' */
		{ "allocprof.histx=QUJD", AP_ENOTFOUND },
		{ "allocprof.hist.x=***", AP_ECORRUPT },    /* not base64 */
		{ "allocprof.hist.x=QUJD", AP_ECORRUPT },   /* "ABC": no hist */
		{ "allocprof.hist.x=", AP_ECORRUPT },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *name = NULL;
		ap_hist_snap *t = NULL;
		int rc = ap_profile_hist_comment_decode(cases[i].comment, NULL,
							&name, &t);
		AP_CHECK_MSG(rc == cases[i].rc && !name && !t, "%s: %d",
			     cases[i].comment, rc);
	}
}

AP_TEST(hist_comment_survives_allocation_failure)
{
	ap_hist_snap *s = sample_snap();
	AP_CHECK(s != NULL);
	struct fail_alloc fa;
	long n;
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		ap_profile *p;
		/* The profile's own allocations come first; count from there. */
		int rc = ap_profile_create(&a, &p);
		if (rc) {
			AP_CHECK_EQ_INT(rc, AP_ENOMEM);
			continue;
		}
		rc = ap_profile_hist_comment_add(p, "lifetime_ns", s);
		char *name = NULL;
		ap_hist_snap *t = NULL;
		int rc2 = rc ? 0 : ap_profile_hist_comment_decode(
			ap_profile_string(p, p->comments[0]), &a, &name, &t);
		bool failed = fa.failed;
		if (!rc && !rc2) {
			AP_CHECK(ap_hist_snap_equal(s, t));
			a.free(a.ctx, name, strlen(name) + 1);
			ap_hist_snap_destroy(t);
		}
		ap_profile_destroy(p);
		AP_CHECK_EQ_INT(fa.live, 0);
		if (!failed)
			break;
		/* Some failures are absorbed (a shrinking realloc); none may
		 * surface as anything but AP_ENOMEM. */
		AP_CHECK_MSG((rc == 0 || rc == AP_ENOMEM) &&
				     (rc2 == 0 || rc2 == AP_ENOMEM),
			     "fail at %ld: %d %d", n, rc, rc2);
	}
	AP_CHECK(n > 4);
	ap_hist_snap_destroy(s);
}

/* One entry point reads every format, plain or gzip'd. */
AP_TEST(decode_any_reads_every_supported_format)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_init_heap(p, 4096), 0);
	ap_location loc = { .address = 0x1000 };
	uint64_t id;
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, &id), 0);
	ap_heap_sums a = { .objects = 4, .space = 40960, .u = 100,
			   .samples = 2, .usable = 40960 };
	int64_t v[AP_HEAP_NVALUES];
	ap_heap_sums_encode(&a, &a, 4096, 1, v);
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, &id, 1, v, NULL, 0), 0);
	char *text;
	size_t tlen;
	unsigned char *pb, *pbgz, *textgz;
	size_t pblen, pbgzlen, textgzlen;
	AP_CHECK_EQ_INT(ap_heapv2_encode(p, "", NULL, &text, &tlen), 0);
	AP_CHECK_EQ_INT(ap_pprof_encode(p, false, NULL, &pb, &pblen), 0);
	AP_CHECK_EQ_INT(ap_pprof_encode(p, true, NULL, &pbgz, &pbgzlen), 0);
	AP_CHECK_EQ_INT(ap_gzip_compress(text, tlen, 6, NULL, &textgz,
					 &textgzlen), 0);
	const struct {
		const unsigned char *buf;
		size_t len;
		bool text;
	} in[] = {
		{ pb, pblen, false },
		{ pbgz, pbgzlen, false },
		{ (const unsigned char *)text, tlen, true },
		{ textgz, textgzlen, true },
	};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		ap_profile *q = NULL;
		bool is_text = !in[i].text;
		char err[200];
		AP_CHECK_MSG(ap_profile_decode_any(in[i].buf, in[i].len, NULL,
						   &q, &is_text, err,
						   sizeof err) == 0,
			     "input %zu: %s", i, err);
		AP_CHECK(is_text == in[i].text);
		/* The same profile as the format's own decoder reads. */
		ap_profile *r = NULL;
		AP_CHECK_EQ_INT(in[i].text ? ap_heapv2_decode(in[i].buf, in[i].len,
							      NULL, &r, NULL, 0)
					   : ap_pprof_decode(in[i].buf, in[i].len,
							     NULL, &r, NULL, 0),
				0);
		const char *why = profiles_differ(q, r);
		AP_CHECK_MSG(why == NULL, "input %zu: %s", i, why);
		AP_CHECK(q->nsamples == 1);
		ap_profile_destroy(q);
		ap_profile_destroy(r);
	}
	free(text);
	free(pb);
	free(pbgz);
	free(textgz);
	ap_profile_destroy(p);
}
