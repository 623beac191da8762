/*
 * timeview_test.c: the time extensions read back by the command
 * (src/cli/timeview.h): the peak's sites become the profile's samples
 * (Locations found by address, or added), the peak interval's formula, the
 * lifetimes grouped by function with Kaplan-Meier values computed by hand,
 * and bad or missing extensions refused with a reason.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocprof/timeline.h"
#include "aptest.h"
#include "timeview.h"

/* A profile with functions alpha (0x1000) and beta (0x2000), one sample. */
static ap_profile *base_profile(void)
{
	ap_profile *p;
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, 1000))
		return NULL;
	const char *names[2] = {"alpha", "beta"};
	uint64_t locs[2];
	for (int i = 0; i < 2; i++) {
		uint64_t fid;
		ap_function f = {0, ap_profile_intern(p, names[i]), 0, 0, 0};
		if (ap_profile_add_function(p, &f, &fid))
			return NULL;
		ap_line ln = {fid, 7, 0};
		ap_location l = {0, 0, 0x1000 * (uint64_t)(i + 1), &ln, 1, false};
		if (ap_profile_add_location(p, &l, &locs[i]))
			return NULL;
	}
	int64_t vals[AP_HEAP_NVALUES] = {0};
	vals[ap_profile_find_sample_type(p, AP_ST_ALLOC_OBJECTS)] = 1;
	vals[ap_profile_find_sample_type(p, AP_ST_ALLOC_SPACE)] = 10;
	if (ap_profile_add_sample(p, locs, 1, vals, NULL, 0))
		return NULL;
	return p;
}

/* Write p (encoded) to a temporary file; the path is malloc'd. */
static char *write_profile(ap_profile *p)
{
	unsigned char *enc;
	size_t len;
	char *path = strdup("/tmp/timeview_test.XXXXXX");
	int fd = path ? mkstemp(path) : -1;
	if (fd < 0 || ap_pprof_encode(p, true, NULL, &enc, &len)) {
		free(path);
		return NULL;
	}
	ssize_t w = write(fd, enc, len);
	close(fd);
	free(enc);
	if (w != (ssize_t)len) {
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

static ap_heap_sums live(double space, uint64_t samples)
{
	ap_heap_sums s;
	memset(&s, 0, sizeof s);
	s.space = space;
	s.objects = space / 100;
	s.space_var = space * 1000;
	s.objects_var = space / 10;
	s.u = (double)samples * 500;
	s.samples = samples;
	return s;
}

static const uint64_t a_alpha[] = {0x1000}, a_beta[] = {0x2000}, a_new[] = {0x3000};
static const ap_tl_stack stacks[] = {{a_alpha, 1}, {a_beta, 1}, {a_new, 1}};

AP_TEST(peak_sites_become_samples)
{
	ap_profile *p = base_profile();
	AP_CHECK(p != NULL);
	ap_tl_site sites[3] = {{0, 1000, live(40000, 40)}, {1, 1000, live(20000, 20)},
			       {2, 1000, live(10000, 10)}};
	ap_tl_point pt = {123000000, live(70000, 70), live(0, 0), sites, 3};
	ap_timeline tl = {.period = 1000, .candidates = 500, .max_space = 72000,
			  .stacks = stacks, .nstacks = 3, .points = &pt, .npoints = 1};
	unsigned char *enc;
	size_t len, cap;
	AP_CHECK_EQ_INT(ap_timeline_encode(&tl, NULL, &enc, &len, &cap), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, AP_PEAK_EXT, enc, len), 0);
	free(enc);
	char *path = write_profile(p);
	ap_profile_destroy(p);
	AP_CHECK(path != NULL);
	const char *paths[1] = {path};
	ap_profile *pk;
	tv_peak_info info;
	char err[256] = "";
	AP_CHECK_EQ_INT(tv_peak_profile(paths, 1, false, &pk, &info, err, sizeof err), 0);
	AP_CHECK_EQ_U64(info.t_ns, 123000000);
	AP_CHECK_EQ_U64(info.candidates, 500);
	AP_CHECK_EQ_U64(pk->nsamples, 3); /* the profile's own sample is gone */
	hv_options o;
	hv_options_default(&o);
	o.symbolize = false;
	hv_view *v;
	AP_CHECK_EQ_INT(hv_build(pk, &o, &v, err, sizeof err), 0);
	AP_CHECK_EQ_U64(hv_nsites(v), 3);
	AP_CHECK(!strcmp(hv_site_at(v, 0)->function, "alpha"));
	AP_CHECK_NEAR(hv_site_at(v, 0)->stat.bytes, 40000, 1, 0);
	AP_CHECK(!strcmp(hv_site_at(v, 1)->function, "beta"));
	AP_CHECK_NEAR(hv_total(v)->bytes, 70000, 3, 0);
	hv_destroy(v);
	tv_profile_free(pk);
	/* the interval: lower z(1 - 0.05 / 1000), upper from the maximum */
	ap_interval iv;
	tv_peak_interval(&info, 0.95, &iv);
	double se = sqrt(70000.0 * 1000);
	AP_CHECK_NEAR(iv.estimate, 70000, 0, 0);
	AP_CHECK_NEAR(iv.lo, 70000 - ap_normal_quantile(1 - 0.05 / 1000) * se, 1e-6, 0);
	AP_CHECK_NEAR(iv.hi, 72000 + ap_normal_quantile(0.975) * se, 1e-6, 0);
	unlink(path);
	free(path);
}

static ap_lt_bin bin(uint64_t t, bool freed)
{
	ap_lt_bin b = {t, t, 1, 1, 1, freed ? 100 : 50, 0};
	return b;
}

AP_TEST(lifetimes_by_function_by_hand)
{
	ap_profile *p = base_profile();
	AP_CHECK(p != NULL);
	/* alpha: freed at 1000, 2000, 3000 ns, one alive at 2500 ns */
	ap_lt_bin fa[3] = {bin(1000, true), bin(2000, true), bin(3000, true)};
	ap_lt_bin la[1] = {bin(2500, false)};
	/* beta: one block alive, never freed */
	ap_lt_bin lb[1] = {bin(9000, false)};
	ap_lt_site sites[2] = {{0, 1000, fa, 3, la, 1}, {1, 1000, NULL, 0, lb, 1}};
	ap_lifetimes lt = {.t_ns = 2000000000, .stacks = stacks, .nstacks = 2,
			   .sites = sites, .nsites = 2};
	unsigned char *enc;
	size_t len, cap;
	AP_CHECK_EQ_INT(ap_lifetimes_encode(&lt, NULL, &enc, &len, &cap), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, AP_LIFETIMES_EXT, enc, len), 0);
	free(enc);
	char *path = write_profile(p);
	ap_profile_destroy(p);
	AP_CHECK(path != NULL);
	const char *paths[1] = {path};
	hv_options o;
	hv_options_default(&o);
	o.symbolize = false;
	tv_lifetimes *t;
	char err[256] = "";
	AP_CHECK_EQ_INT(tv_lifetimes_open(paths, 1, &o, 1e6, &t, err, sizeof err), 0);
	AP_CHECK_EQ_U64(tv_lifetimes_count(t), 2);
	AP_CHECK_NEAR(tv_lifetimes_seconds(t), 2, 1e-12, 0);
	const tv_life_row *a = tv_lifetimes_row(t, 0); /* the short-lived bytes */
	AP_CHECK(!strcmp(a->function, "alpha"));
	/* S: 3/4 after 1000, 1/2 after 2000 (2500 censored), 0 after 3000 */
	AP_CHECK_NEAR(a->km.q25.estimate, 1000, 0, 0);
	AP_CHECK_NEAR(a->km.median.estimate, 2000, 0, 0);
	AP_CHECK_NEAR(a->km.q75.estimate, 3000, 0, 0);
	/* freed only: 2/3, 1/3, 0 */
	AP_CHECK_NEAR(a->freed_only.median.estimate, 2000, 0, 0);
	AP_CHECK_EQ_U64(a->freed_samples, 3);
	AP_CHECK_EQ_U64(a->live_samples, 1);
	/* 300 bytes freed within 1 ms over 2 s; weights 1: no variance */
	AP_CHECK_NEAR(a->short_rate.estimate, 150, 1e-9, 0);
	const tv_life_row *b = tv_lifetimes_row(t, 1);
	AP_CHECK(!strcmp(b->function, "beta"));
	AP_CHECK(isinf(b->km.median.estimate)); /* never freed: not reached */
	tv_lifetimes_free(t);
	unlink(path);
	free(path);
}

AP_TEST(bad_or_missing_extensions)
{
	ap_profile *p = base_profile();
	AP_CHECK(p != NULL);
	char *plain = write_profile(p);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, AP_PEAK_EXT, "\x01\x05", 2), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, AP_LIFETIMES_EXT, "\x07", 1), 0);
	char *bad = write_profile(p);
	ap_profile_destroy(p);
	AP_CHECK(plain && bad);
	ap_profile *pk;
	tv_peak_info info;
	tv_lifetimes *t;
	hv_options o;
	hv_options_default(&o);
	o.symbolize = false;
	char err[256];
	const char *one[1] = {plain}, *two[2] = {plain, plain}, *b[1] = {bad};
	AP_CHECK_EQ_INT(tv_peak_profile(one, 1, false, &pk, &info, err, sizeof err),
			AP_ENOTFOUND);
	AP_CHECK(strstr(err, "no \"peak\" extension") != NULL);
	AP_CHECK_EQ_INT(tv_peak_profile(two, 2, false, &pk, &info, err, sizeof err),
			AP_EINVAL);
	AP_CHECK_EQ_INT(tv_peak_profile(b, 1, false, &pk, &info, err, sizeof err),
			AP_ECORRUPT);
	AP_CHECK(strstr(err, "unreadable") != NULL);
	AP_CHECK_EQ_INT(tv_lifetimes_open(b, 1, &o, 1e6, &t, err, sizeof err),
			AP_ECORRUPT);
	AP_CHECK(strstr(err, "version") != NULL);
	unlink(plain);
	unlink(bad);
	free(plain);
	free(bad);
}
