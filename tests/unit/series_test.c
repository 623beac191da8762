/*
 * series_test.c: the heap over time (src/cli/series.c), leak verdicts
 * over it (leakview.c) and the timeline writers (timeline.c,
 * timeline_svg.c), from the command's object library. Dumps are built
 * here at rate 1 (every allocation recorded, so every estimate is the
 * truth and every variance 0) with a process identity and a time, and
 * written to a temporary directory as the runtime would. The SVG's
 * well-formedness under a real XML parser is checked end to end by
 * tests/integration/timeline_cli_test.sh (xmllint).
 */
#define _GNU_SOURCE
#include "cli_util.h"
#include "leakview.h"
#include "series.h"
#include "symmemo.h"
#include "timeline.h"
#include "allocprof/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../stats/report_synth.h"
#include "aptest.h"

#define START_NS 1700000000000000000ull

/* p written to dir/name as the runtime writes a dump at START + t_s. */
static int write_profile(ap_profile *p, const char *dir, const char *name,
			 double t_s)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	p->time_nanos = (int64_t)(START_NS + (uint64_t)(t_s * 1e9));
	int rc = ap_pprof_encode(p, true, NULL, &buf, &len);
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!rc)
		rc = ap_file_write_atomic(path, buf, len, 0644);
	if (buf)
		ap_profile_allocator(p)->free(ap_profile_allocator(p)->ctx, buf,
					      len + 1);
	return rc;
}

/* Dump k of process pid: "grow" holds 10 k blocks of 1000 B, "flat" 5
 * blocks of 4000 B, "early" 3 blocks of 64 B only while k < 3; written to
 * dir/name with the dump's time START + t_s. */
static int write_dump(const char *dir, const char *name, int64_t pid,
		      uint64_t seq, double t_s, int k)
{
	synth_site sites[3] = {
		{"grow", "g.c", 1, 1000, 10 * (uint64_t)k, 1},
		{"flat", "f.c", 2, 4000, 5, 1},
		{"early", "e.c", 3, 64, k < 3 ? 3 : 0, 1}};
	ap_profile *p = NULL;
	int rc = synth_profile(sites, 3, 1, 1, 0, &p, NULL);
	ap_process_id id = {pid, START_NS, "boot-1", seq};
	if (!rc)
		rc = ap_profile_set_process(p, &id);
	if (!rc)
		rc = write_profile(p, dir, name, t_s);
	ap_profile_destroy(p);
	return rc;
}

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/ap_series.XXXXXX";
	char *d = mkdtemp(tmpl);
	return d ? strdup(d) : NULL;
}

static void rmtree(char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	free(dir);
}

/* Five dumps of pid 42 at t = 1..5 s, file names out of order. */
static char *five_dumps(void)
{
	char *d = tmpdir();
	static const char *const names[] = {"d.e", "d.d", "d.c", "d.b", "d.a"};
	for (int k = 1; d && k <= 5; k++)
		if (write_dump(d, names[k - 1], 42, (uint64_t)k, k, k))
			return NULL;
	return d;
}

static ts_series *load(const char *const *paths, size_t n, int64_t pid,
		       int *rc, char *err, size_t errlen)
{
	ts_options o;
	ts_options_default(&o);
	o.pid = pid;
	ts_series *s = NULL;
	*rc = ts_series_load(paths, n, &o, &s, err, errlen);
	return s;
}

/* five_dumps loaded (by function); *dir for rmtree. NULL on failure. */
static ts_series *load_five(char **dir)
{
	char err[512] = "";
	int rc = -1;
	*dir = five_dumps();
	const char *paths[] = {*dir};
	ts_series *s = *dir ? load(paths, 1, -1, &rc, err, sizeof err) : NULL;
	if (rc)
		fprintf(stderr, "load_five: %s\n", err);
	return s;
}

static size_t site_named(const ts_series *s, const char *name)
{
	for (size_t j = 0; j < ts_nsites(s); j++)
		if (!strcmp(ts_site_at(s, j)->name, name))
			return j;
	return SIZE_MAX;
}

AP_TEST(a_directory_of_dumps_is_a_series_in_sequence_order)
{
	char *d;
	ts_series *s = load_five(&d);
	AP_CHECK(s);
	AP_CHECK_EQ_U64(ts_npoints(s), 5);
	AP_CHECK_EQ_INT(ts_process(s)->pid, 42);
	/* sites keyed as the report keys them: the malloc leaf is skipped */
	AP_CHECK_EQ_U64(ts_nsites(s), 3);
	size_t g = site_named(s, "grow"), f = site_named(s, "flat"),
	       e = site_named(s, "early");
	AP_CHECK(g != SIZE_MAX && f != SIZE_MAX && e != SIZE_MAX);
	for (size_t i = 0; i < 5; i++) {
		const ts_point *p = ts_point_at(s, i);
		AP_CHECK_NEAR(p->t_s, (double)(i + 1), 0, 1e-6);
		AP_CHECK_EQ_U64(p->seq, i + 1);
		ts_cell cg = ts_cell_at(s, i, g), cf = ts_cell_at(s, i, f);
		ts_cell ce = ts_cell_at(s, i, e);
		AP_CHECK_EQ_U64(cg.v.bytes, 10000 * (i + 1));
		AP_CHECK_EQ_U64(cg.v.objects, 10 * (i + 1));
		AP_CHECK_EQ_U64(cg.v.var_bytes, 0); /* rate 1: exact */
		AP_CHECK_EQ_U64(cg.lo, cg.v.bytes);
		AP_CHECK_EQ_U64(cf.v.bytes, 20000);
		/* absent from a dump: nothing live there */
		AP_CHECK_EQ_U64(ce.v.bytes, i + 1 < 3 ? 192 : 0);
		AP_CHECK_EQ_U64(p->total.v.bytes,
				cg.v.bytes + cf.v.bytes + ce.v.bytes);
	}
	AP_CHECK_EQ_U64(ts_peak(s), 4);
	AP_CHECK_EQ_U64(ts_site_at(s, g)->max_bytes, 50000);
	AP_CHECK_EQ_U64(ts_site_at(s, e)->max_bytes, 192);
	ts_series_free(s);
	rmtree(d);
}

AP_TEST(sites_by_stack_and_a_dump_given_twice)
{
	char *d = five_dumps(), err[512] = "", again[600];
	AP_CHECK(d);
	snprintf(again, sizeof again, "%s/d.c", d);
	const char *paths[] = {d, again};
	ts_options o;
	ts_options_default(&o);
	o.hv.by = HV_BY_STACK;
	ts_series *s = NULL;
	int rc = ts_series_load(paths, 2, &o, &s, err, sizeof err);
	AP_CHECK_MSG(rc == 0, "%s", err);
	AP_CHECK_EQ_U64(ts_npoints(s), 5); /* d.c counted once */
	AP_CHECK(site_named(s, "main;grow") != SIZE_MAX);
	AP_CHECK(!strcmp(ts_site_at(s, site_named(s, "main;grow"))->function,
			 "grow"));
	ts_series_free(s);
	rmtree(d);
}

AP_TEST(files_that_are_not_profiles_are_skipped_in_a_directory_only)
{
	char *d = five_dumps(), err[512] = "", junk[600];
	AP_CHECK(d);
	snprintf(junk, sizeof junk, "%s/notes.txt", d);
	AP_CHECK_EQ_INT(ap_file_write_atomic(junk, "hello\n", 6, 0644), 0);
	int rc;
	const char *dir[] = {d}, *file[] = {junk};
	ts_series *s = load(dir, 1, -1, &rc, err, sizeof err);
	AP_CHECK_MSG(rc == 0, "%s", err);
	AP_CHECK_EQ_U64(ts_npoints(s), 5);
	ts_series_free(s);
	s = load(file, 1, -1, &rc, err, sizeof err);
	AP_CHECK(rc != 0 && !s && strstr(err, "notes.txt"));
	rmtree(d);
}

AP_TEST(errors_name_the_problem)
{
	char *d = tmpdir(), err[512] = "", path[600];
	AP_CHECK(d);
	int rc;
	const char *dir[] = {d};
	/* an empty directory */
	AP_CHECK(!load(dir, 1, -1, &rc, err, sizeof err));
	AP_CHECK_MSG(rc == AP_EINVAL && strstr(err, "no heap profile"), "%s", err);
	/* a single point */
	AP_CHECK_EQ_INT(write_dump(d, "a", 7, 1, 1.0, 1), 0);
	AP_CHECK(!load(dir, 1, -1, &rc, err, sizeof err));
	AP_CHECK_MSG(rc == AP_ECORRUPT && strstr(err, "only one dump"), "%s", err);
	/* times going backwards as the sequence goes on */
	AP_CHECK_EQ_INT(write_dump(d, "b", 7, 2, 0.5, 2), 0);
	AP_CHECK(!load(dir, 1, -1, &rc, err, sizeof err));
	AP_CHECK_MSG(rc == AP_ECORRUPT && strstr(err, "not increasing"), "%s", err);
	/* two processes: refused without a pid, either chosen with one */
	snprintf(path, sizeof path, "%s/b", d);
	unlink(path);
	AP_CHECK_EQ_INT(write_dump(d, "b", 7, 2, 2.0, 2), 0);
	AP_CHECK_EQ_INT(write_dump(d, "c", 8, 1, 1.0, 1), 0);
	AP_CHECK_EQ_INT(write_dump(d, "e", 8, 2, 2.0, 2), 0);
	AP_CHECK(!load(dir, 1, -1, &rc, err, sizeof err));
	AP_CHECK_MSG(rc == AP_EINVAL && strstr(err, "2 processes (pids 7, 8)") &&
			     strstr(err, "--pid"), "%s", err);
	ts_series *s = load(dir, 1, 8, &rc, err, sizeof err);
	AP_CHECK_MSG(rc == 0 && ts_process(s)->pid == 8, "%s", err);
	ts_series_free(s);
	AP_CHECK(!load(dir, 1, 9, &rc, err, sizeof err));
	AP_CHECK_MSG(rc == AP_EINVAL && strstr(err, "no dump of pid 9"), "%s", err);
	rmtree(d);
}

/* A series of one site, name, added directly at t = 1 and 2.5 s (the
 * second point's source "ring"); *p keeps the profile used. */
static ts_series *one_site(const char *name, ap_profile **p)
{
	synth_site one = {name, "w.c", 1, 100, 4, 1};
	ts_options o;
	ts_options_default(&o);
	ts_series *s = NULL;
	char err[256] = "";
	*p = NULL;
	if (synth_profile(&one, 1, 1, 1, 0, p, NULL) || ts_series_new(&o, NULL, &s) ||
	    ts_series_add_profile(s, *p, 1.0, 0, NULL, err, sizeof err) ||
	    ts_series_add_profile(s, *p, 2.5, 0, "ring", err, sizeof err)) {
		fprintf(stderr, "one_site: %s\n", err);
		ts_series_free(s);
		return NULL;
	}
	return s;
}

/* The entry point of other sources: a profile per point, in time order. */
AP_TEST(points_added_directly_must_move_forward)
{
	ap_profile *p;
	ts_series *s = one_site("work", &p);
	char err[256] = "";
	AP_CHECK(s);
	AP_CHECK(ts_process(s) == NULL);
	AP_CHECK_EQ_INT(ts_series_add_profile(s, p, 2.5, 0, NULL, err, sizeof err),
			AP_EINVAL);
	AP_CHECK(strstr(err, "not after"));
	AP_CHECK_EQ_U64(ts_npoints(s), 2);
	AP_CHECK(!strcmp(ts_point_at(s, 1)->source, "ring"));
	AP_CHECK_EQ_U64(ts_cell_at(s, 1, 0).v.bytes, 400);
	ts_series_free(s);
	ap_profile_destroy(p);
}

AP_TEST(rates_read_per_hour_in_one_unit)
{
	char b[96];
	double mib_h = 1048576.0 / 3600;
	lk_format_rate(38 * mib_h, 29.1 * mib_h, 47.2 * mib_h, b, sizeof b);
	AP_CHECK_MSG(!strcmp(b, "+38.0 MiB/h [29.1, 47.2]"), "%s", b);
	lk_format_rate(-2.5 * mib_h, -900 * mib_h / 1024, 1.5 * mib_h, b, sizeof b);
	AP_CHECK_MSG(!strcmp(b, "-2.50 MiB/h [-0.88, 1.50]"), "%s", b);
	lk_format_rate(0.01, -(double)INFINITY, (double)INFINITY, b, sizeof b);
	AP_CHECK_MSG(!strcmp(b, "+36 B/h [-inf, +inf]"), "%s", b);
	lk_format_rate((double)NAN, 0, 0, b, sizeof b);
	AP_CHECK(!strcmp(b, "n/a"));
}

/* At rate 1 the series is exact: "grow" rises linearly (a leak, p = 0),
 * "flat" and "early" (flat in the later half) are not leaks. */
AP_TEST(leak_verdicts_over_the_series)
{
	char *d, err[512] = "";
	ts_series *s = load_five(&d);
	AP_CHECK(s);
	lk_result r;
	AP_CHECK_EQ_INT(lk_analyse(s, 0.05, &r, err, sizeof err), 0);
	AP_CHECK_EQ_U64(r.n, 3);
	AP_CHECK_EQ_U64(r.nleaks, 1);
	AP_CHECK(!strcmp(ts_site_at(s, r.rows[0].site)->name, "grow"));
	AP_CHECK(r.rows[0].r.leak && r.is_leak[r.rows[0].site]);
	AP_CHECK_NEAR(r.rows[0].r.rate, 10000, 1e-9, 0);
	AP_CHECK_NEAR(r.t_from, 3, 0, 1e-6); /* midpoint 3 s */
	AP_CHECK(!r.rows[1].r.leak && !r.rows[2].r.leak);
	char *txt = NULL, *json = NULL;
	size_t n;
	FILE *f = open_memstream(&txt, &n);
	AP_CHECK_EQ_INT(lk_write_text(s, &r, 0, f), 0);
	fclose(f);
	AP_CHECK(strstr(txt, "LEAK    +34.3 MiB/h [34.3, 34.3]"));
	f = open_memstream(&json, &n);
	AP_CHECK_EQ_INT(lk_write_json(s, &r, 0, f), 0);
	fclose(f);
	AP_CHECK(strstr(json, "\"sites\":[{\"function\":\"grow\",\"site\":\"grow\","
			      "\"leak\":true,\"rate\":10000,"));
	AP_CHECK(strstr(json, "\"q\":"));
	AP_CHECK(strstr(json, "\"process\":{\"pid\":42,"));
	free(txt);
	free(json);
	lk_free(&r);
	ts_series_free(s);
	rmtree(d);
}

static char *render(const ts_series *s, const lk_result *lk, const tl_sel *sel,
		    int which)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return NULL;
	int rc = which == 0   ? tl_write_svg(s, lk, sel, NULL, f)
		 : which == 1 ? tl_write_json(s, lk, sel, f)
			      : tl_write_text(s, lk, sel, f);
	fclose(f);
	if (rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

AP_TEST(timeline_draws_leaks_first_and_sums_the_rest)
{
	char *d, err[512] = "";
	ts_series *s = load_five(&d);
	AP_CHECK(s);
	lk_result r;
	tl_sel sel;
	AP_CHECK_EQ_INT(lk_analyse(s, 0.05, &r, err, sizeof err), 0);
	/* "flat" is larger at first, but the leak is drawn first */
	AP_CHECK_EQ_INT(tl_select(s, &r, 1, &sel), 0);
	AP_CHECK_EQ_U64(sel.n, 1);
	AP_CHECK_EQ_U64(sel.nrest, 2);
	AP_CHECK(!sel.unlisted); /* dumps list every site */
	AP_CHECK(!strcmp(ts_site_at(s, sel.site[0])->name, "grow"));
	for (size_t i = 0; i < 5; i++)
		AP_CHECK_EQ_U64(sel.other[i].v.bytes, 20000 + (i < 2 ? 192 : 0));
	char *svg = render(s, &r, &sel, 0);
	AP_CHECK(svg);
	AP_CHECK(strstr(svg, "<g id=\"peak\" data-i=\"4\" data-t=\"5\" "
			     "data-b=\"70000\""));
	AP_CHECK(strstr(svg, "data-leak=\"1\" data-n=\"grow\""));
	AP_CHECK(strstr(svg, "data-n=\"other\""));
	AP_CHECK(strstr(svg, "class=\"leakline\""));
	AP_CHECK(strstr(svg, "LEAK +34.3 MiB/h [34.3, 34.3]"));
	AP_CHECK(strstr(svg, "data-t=\"1,2,3,4,5\""));
	/* timeline.js is embedded without its leading // description, and
	 * its HINT is the text the C side writes into #details */
	AP_CHECK(!strstr(svg, "// timeline.js"));
	const char *det = strstr(svg, "<text id=\"details\"");
	AP_CHECK(det);
	det = strchr(det, '>') + 1;
	char want[256];
	snprintf(want, sizeof want, "var HINT = '%.*s';\n",
		 (int)(strstr(det, "</text>") - det), det);
	AP_CHECK_MSG(strlen(want) > 30 && strstr(svg, want), "%s", want);
	char *json = render(s, &r, &sel, 1), *txt = render(s, &r, &sel, 2);
	AP_CHECK(json && txt);
	AP_CHECK(strstr(json, "\"times\":[1,2,3,4,5]"));
	AP_CHECK(strstr(json, "\"peak\":{\"index\":4,\"t\":5,\"value\":{\"bytes\":70000,"));
	AP_CHECK(strstr(json, "\"other\":{\"sites\":2,"));
	AP_CHECK(strstr(txt, "#1  grow  LEAK +34.3 MiB/h"));
	AP_CHECK(strstr(txt, "Peak: 68.4 KiB [68.4 KiB, 68.4 KiB] at 5.0 s (point 5 of 5)"));
	free(svg);
	free(json);
	free(txt);
	tl_sel_free(&sel);
	lk_free(&r);
	ts_series_free(s);
	rmtree(d);
}

AP_TEST(hostile_site_names_are_escaped_in_the_svg)
{
	ap_profile *p;
	ts_series *s = one_site("<a&b>\"'", &p);
	char err[256] = "";
	AP_CHECK(s);
	lk_result r;
	tl_sel sel;
	AP_CHECK_EQ_INT(lk_analyse(s, 0.05, &r, err, sizeof err), 0);
	AP_CHECK_EQ_INT(tl_select(s, &r, 0, &sel), 0);
	AP_CHECK_EQ_U64(sel.nrest, 0);
	char *svg = render(s, &r, &sel, 0);
	AP_CHECK(svg);
	AP_CHECK(!strstr(svg, "<a&b>"));
	AP_CHECK(strstr(svg, "data-n=\"&lt;a&amp;b&gt;&quot;&apos;\""));
	AP_CHECK(!strstr(svg, "data-n=\"other\"")); /* nothing left over */
	free(svg);
	tl_sel_free(&sel);
	lk_free(&r);
	ts_series_free(s);
	ap_profile_destroy(p);
}

/* An unsymbolized profile of a binary that is not there: one sample per
 * address in addrs. */
static ap_profile *raw_profile(const uint64_t *addrs, size_t n)
{
	ap_profile *p = NULL;
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, 1))
		return NULL;
	ap_mapping m = {0, 0x400000, 0x800000, 0,
			ap_profile_intern(p, "/nonexistent/prog"), 0, false, false,
			false, false};
	uint64_t mid, lid;
	if (ap_profile_add_mapping(p, &m, &mid))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		ap_location l = {0, mid, addrs[i], NULL, 0, false};
		ap_heap_sums a = {.objects = 1, .space = 64, .u = 64, .usable = 64,
				  .samples = 1, .exact = 1};
		int64_t v[AP_HEAP_NVALUES];
		ap_heap_sums_encode(&a, &a, 1, ap_round_key(&addrs[i], 1, 0), v);
		if (ap_profile_add_location(p, &l, &lid) ||
		    ap_profile_add_sample(p, &lid, 1, v, NULL, 0))
			return NULL;
	}
	return p;
}

AP_TEST(the_memo_symbolizes_each_address_once)
{
	uint64_t a[] = {0x401000, 0x402000, 0x403000};
	ap_profile *p2 = raw_profile(a, 2), *p3 = raw_profile(a, 3);
	AP_CHECK(p2 && p3);
	sym_memo *m = sym_memo_new();
	AP_CHECK(m);
	sym_options so;
	sym_options_default(&so);
	so.warn = false;
	so.require_main = false; /* the binary is not there */
	char err[256] = "";
	ap_profile *out = NULL;
	AP_CHECK_EQ_INT(sym_memo_symbolize(m, p2, &so, &out, err, sizeof err), 0);
	AP_CHECK_EQ_U64(sym_memo_misses(m), 1);
	AP_CHECK_EQ_U64(out->nlocations, 2);
	ap_profile_destroy(out);
	/* the same addresses again: from the memo */
	AP_CHECK_EQ_INT(sym_memo_symbolize(m, p2, &so, &out, err, sizeof err), 0);
	AP_CHECK_EQ_U64(sym_memo_misses(m), 1);
	AP_CHECK_EQ_U64(out->nlocations, 2);
	AP_CHECK_EQ_U64(out->nsamples, 2);
	AP_CHECK(out->locations[0].address == 0x401000 ||
		 out->locations[1].address == 0x401000);
	ap_profile_destroy(out);
	/* one address more: the symbolizer again, then known */
	AP_CHECK_EQ_INT(sym_memo_symbolize(m, p3, &so, &out, err, sizeof err), 0);
	AP_CHECK_EQ_U64(sym_memo_misses(m), 2);
	ap_profile_destroy(out);
	AP_CHECK_EQ_INT(sym_memo_symbolize(m, p3, &so, &out, err, sizeof err), 0);
	AP_CHECK_EQ_U64(sym_memo_misses(m), 2);
	AP_CHECK_EQ_U64(out->nlocations, 3);
	ap_profile_destroy(out);
	sym_memo_free(m);
	ap_profile_destroy(p2);
	ap_profile_destroy(p3);
}

/* ---- the runtime's timeline ring as a series ----------------------- */

/* The Location addresses of sample i of p (leaf first) into a[]. */
static size_t sample_addrs(const ap_profile *p, size_t i, uint64_t *a,
			   size_t max)
{
	const ap_sample *s = &p->samples[i];
	size_t n = s->nlocations < max ? s->nlocations : max;
	for (size_t k = 0; k < n; k++)
		a[k] = ap_profile_location(p, s->location_ids[k])->address;
	return n;
}

/* Exact sums (rate 1) of n objects of size bytes. */
static ap_heap_sums exact_sums(double n, double size)
{
	return (ap_heap_sums){.objects = n, .space = n * size, .u = n * size,
			      .usable = n * size, .samples = (uint64_t)n,
			      .exact = (uint64_t)n};
}

/*
 * One dump of pid 42 with a "timeline" extension of 6 points at
 * t = 1..6 s: "grow" listed everywhere with 10 k blocks of 1000 B,
 * "flat" (5 x 4000 B) listed at every point but the second and the last
 * (the ring's top-sites cut: absent is unknown, not 0), "early" never listed (inside "other",
 * 3 x 64 B). The dump's own samples say nothing about the ring.
 */
#define FLAT_LISTED(k) ((k) != 1 && (k) != 5)
static char *ring_dump(void)
{
	synth_site sites[3] = {{"grow", "g.c", 1, 1000, 10, 1},
			       {"flat", "f.c", 2, 4000, 5, 1},
			       {"early", "e.c", 3, 64, 3, 1}};
	ap_profile *p = NULL;
	char *d = tmpdir();
	int rc = d ? synth_profile(sites, 3, 1, 1, 0, &p, NULL) : AP_ENOMEM;
	ap_process_id id = {42, START_NS, "boot-1", 7};
	if (!rc)
		rc = ap_profile_set_process(p, &id);
	if (!rc && p->nsamples != 3)
		rc = AP_ECORRUPT;
	uint64_t addrs[3][16];
	ap_tl_stack st[3];
	for (size_t i = 0; !rc && i < 3; i++) /* samples in sites[] order */
		st[i] = (ap_tl_stack){addrs[i], sample_addrs(p, i, addrs[i], 16)};
	ap_tl_site ts[6][2];
	ap_tl_point pts[6];
	for (size_t k = 0; k < 6; k++) {
		ap_heap_sums g = exact_sums(10.0 * (double)(k + 1), 1000);
		ap_heap_sums f = exact_sums(5, 4000), e = exact_sums(3, 64);
		ts[k][0] = (ap_tl_site){0, 1, g};
		ts[k][1] = (ap_tl_site){1, 1, f};
		pts[k] = (ap_tl_point){(k + 1) * 1000000000ull, g, e, ts[k],
				       FLAT_LISTED(k) ? 2 : 1};
		ap_heap_sums *t = &pts[k].total;
		t->objects += 8;
		t->space += 20000 + 192;
		t->u += 20000 + 192;
		t->samples += 8;
		t->exact += 8;
		if (!FLAT_LISTED(k)) /* "flat" in "other" when not listed */
			pts[k].other = (ap_heap_sums){.objects = 8,
				.space = 20192, .u = 20192, .samples = 8, .exact = 8};
	}
	ap_timeline tl = {.version = AP_TIMELINE_VERSION, .period = 1,
			  .cadence_ns = 1000000000, .stacks = st, .nstacks = 3,
			  .points = pts, .npoints = 6};
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;
	if (!rc)
		rc = ap_timeline_encode(&tl, NULL, &buf, &len, &cap);
	if (!rc)
		rc = ap_profile_ext_add(p, AP_TIMELINE_EXT, buf, len);
	free(buf);
	if (!rc)
		rc = write_profile(p, d, "p.pb.gz", 6.5);
	ap_profile_destroy(p);
	if (rc && d) {
		rmtree(d);
		return NULL;
	}
	return d;
}

AP_TEST(a_single_dump_with_a_timeline_is_a_series_of_its_ring)
{
	char *d = ring_dump();
	AP_CHECK(d);
	if (!d)
		return;
	const char *paths[] = {d};
	char err[512] = "";
	int rc;
	ts_series *s = load(paths, 1, -1, &rc, err, sizeof err);
	AP_CHECK_EQ_INT(rc, 0);
	AP_CHECK(s);
	if (!s) {
		fprintf(stderr, "%s\n", err);
		rmtree(d);
		return;
	}
	AP_CHECK_EQ_U64(ts_npoints(s), 6);
	size_t g = site_named(s, "grow"), f = site_named(s, "flat");
	AP_CHECK(g != SIZE_MAX && f != SIZE_MAX);
	AP_CHECK(site_named(s, "early") == SIZE_MAX); /* only in "other" */
	for (size_t i = 0; i < 6; i++) {
		const ts_point *pt = ts_point_at(s, i);
		AP_CHECK_EQ_U64((uint64_t)(pt->t_s * 1000 + 0.5), (i + 1) * 1000);
		AP_CHECK(pt->partial);
		/* the ring's total, "other" included */
		AP_CHECK_EQ_U64((uint64_t)pt->total.v.bytes,
				10000 * (i + 1) + 20192);
		AP_CHECK_EQ_U64((uint64_t)ts_cell_at(s, i, g).v.bytes,
				10000 * (i + 1));
		AP_CHECK(ts_cell_known(s, i, g));
		AP_CHECK(ts_cell_known(s, i, f) == FLAT_LISTED(i));
		AP_CHECK_EQ_U64((uint64_t)ts_cell_at(s, i, f).v.bytes,
				FLAT_LISTED(i) ? 20000 : 0);
	}
	/* "flat" read as 0 at the last point would fall by 20000 B over the
	 * later half; with its unknown points left out it is flat (its later
	 * half: the known points at 3, 4 and 5 s), its last value 20000 B */
	lk_result r;
	AP_CHECK_EQ_INT(lk_analyse(s, 0.05, &r, err, sizeof err), 0);
	AP_CHECK(r.is_leak[g]);
	AP_CHECK(!r.is_leak[f]);
	for (size_t k = 0; k < ts_nsites(s); k++)
		if (r.rows[k].site == f) {
			AP_CHECK(r.rows[k].r.rate == 0);
			AP_CHECK_EQ_U64(r.rows[k].r.points, 3);
			AP_CHECK_EQ_U64((uint64_t)r.rows[k].last_bytes, 20000);
		}
	/* The areas stack up to the ring's total. With every listed site
	 * drawn, "other" is what the ring did not list: "early" (3 x 64 B)
	 * everywhere, and "flat" (5 x 4000 B) where the cut left it out;
	 * all exact, so its interval is the value itself. */
	tl_sel sel;
	AP_CHECK_EQ_INT(tl_select(s, &r, 0, &sel), 0);
	AP_CHECK_EQ_U64(sel.n, 2);
	AP_CHECK_EQ_U64(sel.nrest, 0);
	AP_CHECK(sel.unlisted);
	for (size_t i = 0; i < 6; i++) {
		const ts_cell *o = &sel.other[i];
		AP_CHECK_EQ_U64((uint64_t)(o->v.bytes + 0.5),
				FLAT_LISTED(i) ? 192 : 20192);
		AP_CHECK_EQ_U64((uint64_t)(o->v.objects + 0.5),
				FLAT_LISTED(i) ? 3 : 8);
		AP_CHECK(o->v.var_bytes == 0 && o->lo == o->v.bytes &&
			 o->hi == o->v.bytes);
	}
	char *svg = render(s, &r, &sel, 0), *json = render(s, &r, &sel, 1),
	     *txt = render(s, &r, &sel, 2);
	AP_CHECK(svg && json && txt);
	AP_CHECK(svg && strstr(svg, "other (sites the ring did not list)"));
	AP_CHECK(json && strstr(json, "\"other\":{\"sites\":0,\"unlisted\":true,"));
	AP_CHECK(txt && strstr(txt, "other: the sites the ring did not list\n"));
	free(svg);
	free(json);
	free(txt);
	tl_sel_free(&sel);
	/* One site drawn (the leak first): "flat" joins the rest, which is
	 * then the same 20192 B at every point. */
	AP_CHECK_EQ_INT(tl_select(s, &r, 1, &sel), 0);
	AP_CHECK_EQ_U64(sel.nrest, 1);
	AP_CHECK(sel.unlisted);
	for (size_t i = 0; i < 6; i++)
		AP_CHECK_EQ_U64((uint64_t)(sel.other[i].v.bytes + 0.5), 20192);
	txt = render(s, &r, &sel, 2);
	AP_CHECK(txt && strstr(txt, "other: 1 more site and those the ring "
				   "did not list\n"));
	free(txt);
	tl_sel_free(&sel);
	lk_free(&r);
	ts_series_free(s);
	/* A filter sees only the listed sites (the ring's "other" has no
	 * stacks): the totals are then those of the listed sites that pass,
	 * and nothing is left over for "other". */
	ts_options o;
	ts_options_default(&o);
	o.hv.focus = "^grow$";
	s = NULL;
	AP_CHECK_EQ_INT(ts_series_load(paths, 1, &o, &s, err, sizeof err), 0);
	AP_CHECK(s);
	for (size_t i = 0; s && i < ts_npoints(s); i++)
		AP_CHECK_EQ_U64((uint64_t)(ts_point_at(s, i)->total.v.bytes + 0.5),
				10000 * (i + 1));
	AP_CHECK(s && tl_select(s, NULL, 0, &sel) == 0);
	AP_CHECK(s && !sel.unlisted && sel.nrest == 0);
	if (s)
		tl_sel_free(&sel);
	ts_series_free(s);
	rmtree(d);
}
