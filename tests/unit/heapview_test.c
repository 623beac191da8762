/*
 * heapview_test.c: the heap view (src/cli/heapview.c), profile merging
 * (profmerge.c), loading (profload.c), the key map (keymap.c) and the JSON
 * writer (json.c), from the command's object library. The profiles here
 * are already symbolized, so loading them never opens a binary.
 */
#define _GNU_SOURCE
#include "allocprof/heapv2.h"
#include "cli_util.h"
#include "heapview.h"
#include "json.h"
#include "keymap.h"
#include "profload.h"
#include "profmerge.h"

#include <unistd.h>
#include <zlib.h>

#include "../stats/report_synth.h"
#include "aptest.h"

static const synth_site three[] = {
	{"parse_node", "src/parse.c", 42, 48, 1000, 2},
	{"cache_put", "src/cache.c", 7, 4096, 100, 4},
	{"big_array", "src/big.c", 99, 1 << 20, 3, 1},
};

static hv_view *view_of(const ap_profile *p, hv_kind k, hv_by by)
{
	hv_options o;
	hv_view *v = NULL;
	char err[256];
	hv_options_default(&o);
	o.view = k;
	o.by = by;
	if (hv_build(p, &o, &v, err, sizeof err))
		fprintf(stderr, "hv_build: %s\n", err);
	return v;
}

static const hv_site *site_named(const hv_view *v, const char *name)
{
	for (size_t i = 0; i < hv_nsites(v); i++) {
		const hv_site *s = hv_site_at(v, i);
		if (s && !strcmp(s->name, name))
			return s;
	}
	return NULL;
}

static double sbytes(const hv_view *v, const char *name)
{
	const hv_site *s = site_named(v, name);
	return s ? s->stat.bytes : -1;
}

/* At rate 1 every estimate is the truth and every interval collapses. */
AP_TEST(rate_one_report_equals_truth)
{
	ap_profile *p;
	synth_truth t[3];
	AP_CHECK(synth_profile(three, 3, 1, 7, 0, &p, t) == 0);
	for (int k = 0; k < 2; k++) {
		hv_view *v = view_of(p, k ? HV_ALLOC : HV_INUSE, HV_BY_FUNCTION);
		AP_CHECK(v);
		AP_CHECK_EQ_U64(hv_nsites(v), 3);
		double tb = 0;
		for (size_t i = 0; i < 3; i++) {
			const hv_site *s = site_named(v, three[i].function);
			double want = k ? t[i].alloc_bytes : t[i].inuse_bytes;
			double wanto = k ? t[i].alloc_objects : t[i].inuse_objects;
			AP_CHECK(s);
			AP_CHECK_EQ_U64(s->stat.bytes, want);
			AP_CHECK_EQ_U64(s->stat.bytes_lo, want);
			AP_CHECK_EQ_U64(s->stat.bytes_hi, want);
			AP_CHECK_EQ_U64(s->stat.objects, wanto);
			AP_CHECK_EQ_U64(s->stat.objects_lo, wanto);
			AP_CHECK_EQ_U64(s->stat.samples, wanto);
			AP_CHECK(s->stat.method == AP_CI_EXACT);
			AP_CHECK(!strcmp(s->file, three[i].file));
			AP_CHECK_EQ_INT(s->line, three[i].line);
			/* malloc dropped: the stack starts at the site */
			AP_CHECK_EQ_U64(s->nstack, 2);
			AP_CHECK(!strcmp(s->stack[1].function, "main"));
			tb += want;
		}
		AP_CHECK_EQ_U64(hv_total(v)->bytes, tb);
		AP_CHECK_EQ_U64(hv_total(v)->bytes_hi, tb);
		/* largest first: the 3 MiB array leads both views */
		const hv_site *top = hv_site_at(v, 0);
		AP_CHECK(top && !strcmp(top->name, "big_array"));
		AP_CHECK(!hv_view_approximate(v));
		hv_destroy(v);
	}
	ap_profile_destroy(p);
}

AP_TEST(aggregation_by_function_line_and_stack)
{
	static const synth_site s[] = {
		{"f", "a.c", 10, 100, 10, 0},
		{"f", "a.c", 20, 200, 10, 0},
		{"g", "b.c", 5, 50, 10, 0},
	};
	ap_profile *p;
	AP_CHECK(synth_profile(s, 3, 1, 1, 0, &p, NULL) == 0);
	hv_view *v = view_of(p, HV_ALLOC, HV_BY_FUNCTION);
	AP_CHECK(v && hv_nsites(v) == 2);
	AP_CHECK_NEAR(sbytes(v, "f"), 3000, 0, 0);
	/* representative line: the largest contribution (line 20) */
	const hv_site *f = site_named(v, "f");
	AP_CHECK(f && f->line == 20);
	hv_destroy(v);
	v = view_of(p, HV_ALLOC, HV_BY_LINE);
	AP_CHECK(v && hv_nsites(v) == 3);
	AP_CHECK(site_named(v, "f a.c:10") && site_named(v, "f a.c:20"));
	AP_CHECK_NEAR(sbytes(v, "f a.c:10"), 1000, 0, 0);
	hv_destroy(v);
	v = view_of(p, HV_ALLOC, HV_BY_STACK);
	/* same names root-first: "main;f" twice merges into one stack */
	AP_CHECK(v && hv_nsites(v) == 2 && hv_nstacks(v) == 2);
	AP_CHECK(site_named(v, "main;f") && site_named(v, "main;g"));
	const hv_site *st0 = hv_stack_at(v, 0);
	AP_CHECK(st0 && !strcmp(st0->name, "main;f"));
	hv_destroy(v);
	ap_profile_destroy(p);
}

/* Two functions of one name in two files (C static functions) are one row
 * by function, which says its file and line speak for part of it only. */
AP_TEST(one_name_in_two_files)
{
	static const synth_site s[] = {
		{"helper", "a.c", 3, 1000, 10, 0},
		{"helper", "b.c", 3, 3000, 10, 0},
		{"g", "b.c", 5, 50, 10, 0},
		{"g", "b.c", 9, 70, 10, 0},
		{"g", "", 0, 30, 10, 0}, /* no line information: no file */
	};
	ap_profile *p;
	AP_CHECK(synth_profile(s, 5, 1, 1, 0, &p, NULL) == 0);
	hv_view *v = view_of(p, HV_ALLOC, HV_BY_FUNCTION);
	AP_CHECK(v && hv_nsites(v) == 2);
	const hv_site *h = site_named(v, "helper"), *g = site_named(v, "g");
	AP_CHECK(h && g);
	AP_CHECK_NEAR(h->stat.bytes, 40000, 0, 0);
	AP_CHECK(h->several_files);
	AP_CHECK(!strcmp(h->file, "b.c")); /* the largest part's */
	AP_CHECK(!g->several_files); /* two lines of one file, one unknown */
	hv_destroy(v);
	v = view_of(p, HV_ALLOC, HV_BY_LINE);
	const hv_site *la = v ? site_named(v, "helper a.c:3") : NULL;
	AP_CHECK(la && v && site_named(v, "helper b.c:3"));
	AP_CHECK(la && !la->several_files);
	hv_destroy(v);
	ap_profile_destroy(p);
}

AP_TEST(filters_focus_ignore_size)
{
	ap_profile *p;
	hv_options o;
	hv_view *v;
	char err[256];
	AP_CHECK(synth_profile(three, 3, 1, 3, 0, &p, NULL) == 0);
	hv_options_default(&o);
	o.view = HV_ALLOC;
	o.focus = "^(parse|cache)_";
	AP_CHECK(hv_build(p, &o, &v, err, sizeof err) == 0);
	AP_CHECK_EQ_U64(hv_nsites(v), 2);
	AP_CHECK_EQ_U64(hv_total(v)->bytes, 48 * 1000 + 4096 * 100);
	hv_destroy(v);
	o.focus = NULL;
	o.ignore = "^main$"; /* every stack has main: nothing left */
	AP_CHECK(hv_build(p, &o, &v, err, sizeof err) == 0);
	AP_CHECK_EQ_U64(hv_nsites(v), 0);
	AP_CHECK_EQ_U64(hv_total(v)->bytes, 0);
	hv_destroy(v);
	o.ignore = NULL;
	o.size_min = 49;
	o.size_max = 4096;
	AP_CHECK(hv_build(p, &o, &v, err, sizeof err) == 0);
	AP_CHECK_EQ_U64(hv_nsites(v), 1);
	const hv_site *only = hv_site_at(v, 0);
	AP_CHECK(only && !strcmp(only->name, "cache_put"));
	hv_destroy(v);
	o.size_min = 0;
	o.size_max = UINT64_MAX;
	o.focus = "([unclosed";
	AP_CHECK_EQ_INT(hv_build(p, &o, &v, err, sizeof err), AP_EINVAL);
	AP_CHECK(v == NULL && strstr(err, "--focus"));
	o.focus = NULL;
	o.level = 1.0;
	AP_CHECK_EQ_INT(hv_build(p, &o, &v, err, sizeof err), AP_EINVAL);
	ap_profile_destroy(p);
}

AP_TEST(allocator_frames_are_recognised)
{
	AP_CHECK(hv_is_alloc_frame("malloc"));
	AP_CHECK(hv_is_alloc_frame("operator new(unsigned long)"));
	AP_CHECK(hv_is_alloc_frame("operator new[](unsigned long)"));
	AP_CHECK(hv_is_alloc_frame("_ZnwmSt11align_val_t"));
	AP_CHECK(hv_is_alloc_frame("ap_runtime_dump"));
	AP_CHECK(hv_is_alloc_frame("liballocprof_preload.so+0x1234"));
	AP_CHECK(!hv_is_alloc_frame("malloc_wrapper_of_mine"));
	AP_CHECK(!hv_is_alloc_frame("operator newline"));
	AP_CHECK(!hv_is_alloc_frame("main"));
	AP_CHECK(!hv_is_alloc_frame("ap_make_dirstr")); /* Apache httpd's prefix */
	AP_CHECK(!hv_is_alloc_frame(""));
	AP_CHECK(!hv_is_alloc_frame(NULL));
}

AP_TEST(stat_finish_edge_cases)
{
	hv_stat s;
	memset(&s, 0, sizeof s);
	/* no sample: not "exact" but the zero-sample bound of its rate,
	 * ln(0.05) / ln(1 - 1/R) ~ 3.0 R bytes, objects unbounded without a
	 * size floor (STATISTICS.md section 5) */
	s.rate_max = 524288;
	hv_stat_finish(&s, 0.95);
	AP_CHECK(s.method == AP_CI_NONE && s.bytes_lo == 0);
	AP_CHECK_NEAR(s.bytes_hi, log(0.05) / log1p(-1.0 / 524288), 1e-9, 0);
	AP_CHECK(isinf(s.objects_hi));
	/* one sample at R = 512 KiB of a 100-byte object: NB interval, wide */
	memset(&s, 0, sizeof s);
	double pi = ap_prob_sampled(100, 524288);
	s.bytes = 100 / pi;
	s.objects = 1 / pi;
	s.var_bytes = (1 - pi) / (pi * pi) * 1e4;
	s.var_objects = (1 - pi) / (pi * pi);
	s.samples = 1;
	s.u = 50;
	s.rates[0] = (ap_nb_group){1, 50, 524288};
	s.nrates = 1;
	hv_stat_finish(&s, 0.95);
	AP_CHECK(s.method == AP_CI_NB);
	AP_CHECK(s.bytes_lo <= s.bytes && s.bytes <= s.bytes_hi);
	AP_CHECK(s.bytes_hi > 5 * s.bytes_lo);
	AP_CHECK(s.objects_lo < s.objects && s.objects < s.objects_hi);
	/* a corrupt variance gives NaN bounds, never a crash */
	s.samples = 100;
	s.var_bytes = (double)NAN;
	hv_stat_finish(&s, 0.95);
	AP_CHECK(isnan(s.bytes_lo) && isnan(s.bytes_hi));
	/* stat_add keeps rates apart and sums them */
	hv_stat a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	hv_stat_add_group(&a, 100, 2, 10);
	hv_stat_add_group(&b, 100, 3, 5);
	hv_stat_add_group(&b, 200, 1, 1);
	hv_stat_add(&a, &b);
	AP_CHECK_EQ_U64(a.nrates, 2);
	AP_CHECK_EQ_U64(a.rates[0].samples, 5);
	AP_CHECK_NEAR(a.rates[0].u, 15, 0, 0);
	for (int r = 0; r < HV_MAX_RATES + 2; r++)
		hv_stat_add_group(&a, 1000 + r, 1, 1);
	AP_CHECK(a.rates_overflow && a.nrates == HV_MAX_RATES);
}

/* Profiles sampled at different rates merge into one with rate labels. */
AP_TEST(merge_keeps_each_samples_rate)
{
	ap_profile *a, *b, *m;
	synth_truth ta[3], tb[3];
	char err[256];
	AP_CHECK(synth_profile(three, 3, 1, 1, 0, &a, ta) == 0);
	AP_CHECK(synth_profile(three, 3, 1, 2, 4096, &b, tb) == 0);
	ap_profile *const in[2] = {a, b};
	AP_CHECK(hv_profile_merge(in, 2, &m, err, sizeof err) == 0);
	AP_CHECK_EQ_INT(m->period, 1);
	hv_view *v = view_of(m, HV_ALLOC, HV_BY_FUNCTION);
	AP_CHECK(v && hv_mixed_rates(v));
	for (size_t i = 0; i < 3; i++)
		AP_CHECK_NEAR(sbytes(v, three[i].function),
			      ta[i].alloc_bytes + tb[i].alloc_bytes, 0, 0);
	/* samples from b carry rate 4096: its groups are kept apart */
	const hv_site *pn = site_named(v, "parse_node");
	AP_CHECK(pn && pn->stat.nrates == 2);
	hv_destroy(v);
	/* merging a merge with itself doubles every value */
	ap_profile *m2;
	ap_profile *const in2[2] = {m, m};
	AP_CHECK(hv_profile_merge(in2, 2, &m2, err, sizeof err) == 0);
	AP_CHECK_EQ_U64(m2->nsamples, m->nsamples);
	v = view_of(m2, HV_ALLOC, HV_BY_FUNCTION);
	AP_CHECK(v);
	AP_CHECK_EQ_U64(hv_total(v)->bytes,
			2 * (ta[0].alloc_bytes + ta[1].alloc_bytes + ta[2].alloc_bytes +
			     tb[0].alloc_bytes + tb[1].alloc_bytes + tb[2].alloc_bytes));
	hv_destroy(v);
	ap_profile_destroy(m2);
	ap_profile_destroy(m);
	ap_profile_destroy(a);
	ap_profile_destroy(b);
}

AP_TEST(merge_rejects_different_sample_types)
{
	ap_profile *a, *b, *m = NULL;
	char err[256];
	AP_CHECK(synth_profile(three, 1, 1, 1, 0, &a, NULL) == 0);
	AP_CHECK(ap_profile_create(NULL, &b) == 0);
	AP_CHECK(ap_profile_add_sample_type(b, "cpu", "nanoseconds") == 0);
	ap_profile *const in[2] = {a, b};
	AP_CHECK_EQ_INT(hv_profile_merge(in, 2, &m, err, sizeof err), AP_EINVAL);
	AP_CHECK(m == NULL && strstr(err, "profile 2"));
	AP_CHECK_EQ_INT(hv_profile_merge(in, 0, &m, err, sizeof err), AP_EINVAL);
	ap_profile_destroy(a);
	ap_profile_destroy(b);
}

/* A Go-style profile (4 standard types only): derived, marked approximate. */
AP_TEST(go_profile_is_read_approximately)
{
	ap_profile *p;
	uint64_t loc, fid;
	AP_CHECK(ap_profile_create(NULL, &p) == 0);
	AP_CHECK(ap_profile_add_sample_type(p, "alloc_objects", "count") == 0);
	AP_CHECK(ap_profile_add_sample_type(p, "alloc_space", "bytes") == 1);
	AP_CHECK(ap_profile_add_sample_type(p, "inuse_objects", "count") == 2);
	AP_CHECK(ap_profile_add_sample_type(p, "inuse_space", "bytes") == 3);
	p->period = 524288;
	ap_function f = {0, ap_profile_intern(p, "main.alloc"), 0,
			 ap_profile_intern(p, "main.go"), 3};
	AP_CHECK(ap_profile_add_function(p, &f, &fid) == 0);
	ap_line ln = {fid, 5, 0};
	ap_location l = {0, 0, 0x400000, &ln, 1, false};
	AP_CHECK(ap_profile_add_location(p, &l, &loc) == 0);
	/* 2000 objects of 1024 bytes estimated: pi ~ 0.00195, ~3.9 samples */
	int64_t vals[4] = {2000, 2048000, 1000, 1024000};
	AP_CHECK(ap_profile_add_sample(p, &loc, 1, vals, NULL, 0) == 0);
	hv_view *v = view_of(p, HV_ALLOC, HV_BY_FUNCTION);
	AP_CHECK(v && hv_view_approximate(v));
	const hv_stat *t = hv_total(v);
	AP_CHECK_EQ_U64(t->bytes, 2048000);
	AP_CHECK_EQ_U64(t->samples, 4); /* 2000 * (1 - exp(-1024/524288)) = 3.9 */
	AP_CHECK(t->method == AP_CI_NB && t->bytes_lo < t->bytes && t->bytes < t->bytes_hi);
	hv_destroy(v);
	/* usable view needs the usable types: a clear error */
	hv_options o;
	char err[256];
	hv_options_default(&o);
	o.value = HV_USABLE;
	AP_CHECK_EQ_INT(hv_build(p, &o, &v, err, sizeof err), AP_EINVAL);
	AP_CHECK(strstr(err, "usable"));
	ap_profile_destroy(p);
}

static char *write_tmp(const void *buf, size_t len)
{
	char *path = strdup("/tmp/heapview_test.XXXXXX");
	int fd = path ? mkstemp(path) : -1;
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

/* Every kind of bad file gives an error naming it, never a crash. */
AP_TEST(load_rejects_bad_files)
{
	static const struct { const char *data; size_t len; const char *why; } bad[] = {
		{"", 0, "empty"},
		{"hello, not a profile\n", 21, "not a valid pprof"},
		{"\x1f\x8b\x08\x00\x00\x00", 6, "not a valid pprof"},
	};
	char err[512];
	ap_profile *p;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *path = write_tmp(bad[i].data, bad[i].len);
		AP_CHECK(path);
		const char *paths[1] = {path};
		int rc = hv_load_profiles(paths, 1, &p, err, sizeof err);
		unlink(path);
		AP_CHECK_MSG(rc != 0 && strstr(err, path) && strstr(err, bad[i].why),
			     "case %zu: rc %d err '%s'", i, rc, err);
		free(path);
	}
	const char *missing[1] = {"/nonexistent/profile.pb.gz"};
	AP_CHECK_EQ_INT(hv_load_profiles(missing, 1, &p, err, sizeof err), AP_EIO);
	AP_CHECK(strstr(err, "No such file"));
	/* a valid pprof that is not a heap profile */
	ap_profile *cpu;
	unsigned char *enc;
	size_t len;
	AP_CHECK(ap_profile_create(NULL, &cpu) == 0);
	AP_CHECK(ap_profile_add_sample_type(cpu, "cpu", "nanoseconds") == 0);
	AP_CHECK(ap_pprof_encode(cpu, true, NULL, &enc, &len) == 0);
	char *path = write_tmp(enc, len);
	free(enc);
	ap_profile_destroy(cpu);
	const char *paths[1] = {path};
	AP_CHECK_EQ_INT(hv_load_profiles(paths, 1, &p, err, sizeof err), AP_ECORRUPT);
	unlink(path);
	free(path);
	AP_CHECK(strstr(err, "not a heap profile") && strstr(err, "cpu/nanoseconds"));
}

/* Truncating a valid gzip'd profile anywhere is an error, never a crash. */
AP_TEST(load_rejects_every_truncation)
{
	ap_profile *p;
	unsigned char *enc;
	size_t len;
	char err[512];
	AP_CHECK(synth_profile(three, 3, 1, 5, 0, &p, NULL) == 0);
	AP_CHECK(ap_pprof_encode(p, true, NULL, &enc, &len) == 0);
	ap_profile_destroy(p);
	for (size_t cut = 1; cut < len; cut += 7) {
		char *path = write_tmp(enc, cut);
		const char *paths[1] = {path};
		ap_profile *q = NULL;
		int rc = hv_load_profiles(paths, 1, &q, err, sizeof err);
		unlink(path);
		free(path);
		AP_CHECK_MSG(rc != 0 && q == NULL, "truncated at %zu accepted", cut);
	}
	free(enc);
}

/* gzip (RFC 1952) of (in, n) into a malloc'd buffer; NULL on failure. */
static unsigned char *gzip_bytes(const void *in, size_t n, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	uLong cap = deflateBound(&z, (uLong)n) + 32;
	unsigned char *out = malloc(cap);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	int rc = out ? deflate(&z, Z_FINISH) : Z_MEM_ERROR;
	*out_len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

/* A gzip'd heap_v2 text profile loads exactly like the plain one (the
 * loader once sniffed the text header before gunzipping and sent it to
 * the pprof decoder). */
AP_TEST(load_reads_gzipped_heap_v2)
{
	ap_profile *p, *a = NULL, *b = NULL;
	char *text = NULL, err[512];
	size_t len = 0, gzlen = 0;
	AP_CHECK(synth_profile(three, 3, 4096, 5, 0, &p, NULL) == 0);
	AP_CHECK(ap_heapv2_encode(p, "", NULL, &text, &len) == 0);
	ap_profile_destroy(p);
	unsigned char *gz = text ? gzip_bytes(text, len, &gzlen) : NULL;
	AP_CHECK(gz);
	char *plain_path = write_tmp(text, len), *gz_path = write_tmp(gz, gzlen);
	const char *pp[1] = {plain_path}, *gp[1] = {gz_path};
	AP_CHECK_EQ_INT(hv_load_profiles(pp, 1, &a, err, sizeof err), 0);
	AP_CHECK_MSG(hv_load_profiles(gp, 1, &b, err, sizeof err) == 0, "%s", err);
	if (a && b) {
		AP_CHECK_EQ_U64(a->nsamples, b->nsamples);
		AP_CHECK_EQ_U64(a->nsample_types, b->nsample_types);
		for (size_t i = 0; i < a->nsamples && i < b->nsamples; i++)
			for (size_t k = 0; k < a->nsample_types; k++)
				AP_CHECK(a->samples[i].values[k] ==
					 b->samples[i].values[k]);
	}
	ap_profile_destroy(a);
	ap_profile_destroy(b);
	unlink(plain_path);
	unlink(gz_path);
	free(plain_path);
	free(gz_path);
	free(text);
	free(gz);
}

AP_TEST(json_escapes_and_nests)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_writer w;
	AP_CHECK(f);
	json_init(&w, f);
	json_begin_object(&w);
	json_key(&w, "s");
	json_string(&w, "a\"b\\c\n\x01\xff\xc3\xa9");
	json_key(&w, "n");
	json_begin_array(&w);
	json_number(&w, 1.0);
	json_number(&w, (double)NAN);
	json_number(&w, 0.25);
	json_int(&w, -3);
	json_end_array(&w);
	json_key(&w, "e");
	json_begin_object(&w);
	json_end_object(&w);
	json_end_object(&w);
	AP_CHECK(json_ok(&w));
	fclose(f);
	AP_CHECK_MSG(!strcmp(buf, "{\"s\":\"a\\\"b\\\\c\\n\\u0001\\ufffd\xc3\xa9\","
				  "\"n\":[1,null,0.25,-3],\"e\":{}}"),
		     "got %s", buf);
	free(buf);
}

AP_TEST(keymap_stores_many_keys)
{
	hv_keymap *m = hv_keymap_new();
	AP_CHECK(m);
	for (size_t i = 0; i < 10000; i++)
		AP_CHECK(hv_keymap_put(m, &i, sizeof i, i * 3) == 0);
	for (size_t i = 0; i < 10000; i++)
		AP_CHECK_EQ_U64(hv_keymap_get(m, &i, sizeof i), i * 3);
	size_t absent = 10001;
	AP_CHECK(hv_keymap_get(m, &absent, sizeof absent) == SIZE_MAX);
	AP_CHECK(hv_keymap_get(m, "", 0) == SIZE_MAX);
	AP_CHECK(hv_keymap_put(m, "", 0, 5) == 0 && hv_keymap_get(m, "", 0) == 5);
	hv_keymap_free(m);
}

/* Frames in liballocprof_preload.so are dropped whatever their names. */
AP_TEST(runtime_frames_are_dropped_by_mapping)
{
	ap_profile *p;
	uint64_t mid, fids[2], locs[2];
	AP_CHECK(ap_profile_create(NULL, &p) == 0);
	AP_CHECK(ap_profile_init_heap(p, 1) == 0);
	ap_mapping m = {0};
	m.memory_start = 0x7000;
	m.memory_limit = 0x8000;
	m.filename = ap_profile_intern(p, "/usr/lib/liballocprof_preload.so");
	AP_CHECK(ap_profile_add_mapping(p, &m, &mid) == 0);
	const char *names[2] = {"record_slow_path", "load_config"};
	for (int i = 0; i < 2; i++) {
		ap_function f = {0, ap_profile_intern(p, names[i]), 0, 0, 0};
		AP_CHECK(ap_profile_add_function(p, &f, &fids[i]) == 0);
		ap_line ln = {fids[i], 3, 0};
		ap_location l = {0, i ? 0 : mid, 0x7100 + (uint64_t)i, &ln, 1, false};
		AP_CHECK(ap_profile_add_location(p, &l, &locs[i]) == 0);
	}
	int64_t vals[AP_HEAP_NVALUES] = {0};
	vals[ap_profile_find_sample_type(p, AP_ST_ALLOC_OBJECTS)] = 1;
	vals[ap_profile_find_sample_type(p, AP_ST_ALLOC_SPACE)] = 10;
	AP_CHECK(ap_profile_add_sample(p, locs, 2, vals, NULL, 0) == 0);
	hv_view *v = view_of(p, HV_ALLOC, HV_BY_FUNCTION);
	AP_CHECK(v && hv_nsites(v) == 1);
	const hv_site *s = hv_site_at(v, 0);
	AP_CHECK(s && !strcmp(s->function, "load_config") && s->nstack == 1);
	hv_destroy(v);
	ap_profile_destroy(p);
}
