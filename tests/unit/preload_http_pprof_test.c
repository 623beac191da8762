/*
 * preload_http_pprof_test.c: the pieces of Go net/http/pprof parity
 * (http_pprof.h) without a server: query parsing, exact delta profiles and
 * the legacy text form. The server wiring is tested end to end by
 * tests/integration/http_pprof_parity_test.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "allocprof/profile.h"
#include "aptest.h"
#include "http_pprof.h"

AP_TEST(queries_follow_go_and_refuse_bad_values_with_one_line)
{
	http_pprof_query q;
	const char *why = NULL;
	AP_CHECK_EQ_INT(http_pprof_parse_query("", 0, &q, &why), 0);
	AP_CHECK(q.seconds == 0 && !q.text);
	const char *ok = "gc=1&seconds=30&x=y&";
	AP_CHECK_EQ_INT(http_pprof_parse_query(ok, strlen(ok), &q, &why), 0);
	AP_CHECK_EQ_INT((int)q.seconds, 30);
	AP_CHECK_EQ_INT(http_pprof_parse_query("debug=1", 7, &q, &why), 0);
	AP_CHECK(q.text);
	AP_CHECK_EQ_INT(http_pprof_parse_query("debug=0", 7, &q, &why), 0);
	AP_CHECK(!q.text);
	static const char *const bad[] = { "seconds=0", "seconds=301", "seconds=-1",
					   "seconds=", "seconds=1e3", "debug=x",
					   "debug=-1", "seconds=2&debug=1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		AP_CHECK_MSG(http_pprof_parse_query(bad[i], strlen(bad[i]), &q, &why) == -1,
			     "%s accepted", bad[i]);
		AP_CHECK(why && strchr(why, '\n') == why + strlen(why) - 1);
	}
}

/* A heap profile with one sample per (address, bytes label, scale). */
static ap_profile *make(const uint64_t *addrs, const int64_t *scale, size_t n,
			int64_t time_ns)
{
	ap_profile *p = NULL;
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, 65536))
		return NULL;
	p->time_nanos = time_ns;
	int64_t bytes = ap_profile_intern(p, "bytes");
	for (size_t i = 0; i < n; i++) {
		ap_location l = { .address = addrs[i] };
		uint64_t id;
		if (ap_profile_add_location(p, &l, &id))
			return NULL;
		int64_t v[AP_HEAP_NVALUES];
		for (int k = 0; k < AP_HEAP_NVALUES; k++)
			v[k] = scale[i] * (k + 1);
		ap_label lab = { .key = bytes, .num = 64 };
		if (ap_profile_add_sample(p, &id, 1, v, &lab, 1))
			return NULL;
	}
	return p;
}

static const ap_sample *find(const ap_profile *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (ap_profile_location(p, p->samples[i].location_ids[0])->address == addr)
			return &p->samples[i];
	return NULL;
}

AP_TEST(a_delta_subtracts_every_value_per_site_exactly)
{
	/* Start: sites A (10), B (7), C (5). End: A (25), B (7), D (3), and C
	 * gone. Built in different orders so location ids differ. */
	uint64_t a0[] = { 0x1000, 0x2000, 0x3000 }, a1[] = { 0x4000, 0x2000, 0x1000 };
	int64_t s0[] = { 10, 7, 5 }, s1[] = { 3, 7, 25 };
	ap_profile *base = make(a0, s0, 3, 1000), *now = make(a1, s1, 3, 3000);
	AP_CHECK(base && now);
	/* Cumulative histograms do not describe the window: left out; other
	 * extensions stay. */
	AP_CHECK_EQ_INT(ap_profile_ext_add(now, "hist.alloc_size", "x", 1), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(now, "other", "y", 1), 0);
	AP_CHECK_EQ_INT(http_pprof_delta(now, base), 0);
	AP_CHECK_EQ_U64(now->nexts, 1);
	AP_CHECK(strcmp(now->exts[0].name, "other") == 0);
	const ap_sample *a = find(now, 0x1000), *b = find(now, 0x2000);
	const ap_sample *c = find(now, 0x3000), *d = find(now, 0x4000);
	AP_CHECK(a && b && c && d);
	for (int k = 0; k < AP_HEAP_NVALUES; k++) {
		AP_CHECK_EQ_INT((int)a->values[k], 15 * (k + 1));
		AP_CHECK_EQ_INT((int)b->values[k], 0); /* equal at both ends */
		AP_CHECK_EQ_INT((int)c->values[k], -5 * (k + 1));
		AP_CHECK_EQ_INT((int)d->values[k], 3 * (k + 1));
	}
	AP_CHECK_EQ_INT((int)c->nlabels, 1);
	AP_CHECK_EQ_INT((int)c->labels[0].num, 64);
	AP_CHECK_EQ_INT((int)now->time_nanos, 1000);
	AP_CHECK_EQ_INT((int)now->duration_nanos, 2000);
	char err[128];
	AP_CHECK_MSG(ap_profile_validate(now, err, sizeof err) == 0, "%s", err);
	ap_profile_destroy(base);
	ap_profile_destroy(now);
}

AP_TEST(the_text_form_starts_like_go_legacy_heap_profiles)
{
	uint64_t a[] = { 0x1000 };
	int64_t s[] = { 4 };
	ap_profile *p = make(a, s, 1, 0);
	AP_CHECK(p);
	arena ar;
	arena_init(&ar);
	http_buf b;
	hb_init(&b, &ar);
	AP_CHECK_EQ_INT(http_pprof_text(p, "", &b), 0);
	hb_put(&b, "", 1);
	AP_CHECK_MSG(strncmp(b.p, "heap profile: ", 14) == 0, "%.80s", b.p);
	const char *nl = strchr(b.p, '\n');
	AP_CHECK(nl && strstr(b.p, "@ heap_v2/65536\n") == nl - 15);
	AP_CHECK_MSG(strstr(b.p, "] @ 0x1000\n") != NULL, "%s", b.p);
	AP_CHECK(strstr(b.p, "t*:") == NULL && strstr(b.p, "\nMAPPED_LIBRARIES:\n"));
	hb_free(&b);
	arena_destroy(&ar);
	ap_profile_destroy(p);
}
