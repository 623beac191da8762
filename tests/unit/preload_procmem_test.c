/*
 * preload_procmem_test.c: the parsers behind the runtime's memory readings
 * (procmem.h), the rss_limit state machine (memtrig.h), the push request
 * (push.h) and the rss_limit=/push= option parsers (config_extra.h).
 * These link without the runtime's state (preload_procmem_read_test.c
 * reads this process for real).
 */
#include <string.h>

#include "aptest.h"
#include "config_extra.h"
#include "memtrig.h"
#include "procmem.h"
#include "push.h"

AP_TEST(status_and_rollup_fields)
{
	static const char s[] = "Name:\tx\nVmRSS:\t    1024 kB\nRssAnon:\t  12 kB\n";
	uint64_t v;
	AP_CHECK(procmem_kb_field(s, sizeof s - 1, "VmRSS:", &v) && v == 1024 * 1024);
	AP_CHECK(procmem_kb_field(s, sizeof s - 1, "RssAnon:", &v) && v == 12 * 1024);
	AP_CHECK(!procmem_kb_field(s, sizeof s - 1, "RssFile:", &v));
	static const char junk[] = "Rss: kB\n";
	AP_CHECK(!procmem_kb_field(junk, sizeof junk - 1, "Rss:", &v));
	static const char statm[] = "1000 250 100 1 0 300 0\n";
	AP_CHECK(procmem_nth_u64(statm, sizeof statm - 1, 1, &v) && v == 250);
	AP_CHECK(!procmem_nth_u64(statm, sizeof statm - 1, 9, &v));
}

AP_TEST(cgroup_paths_and_pressure)
{
	static const char cg[] = "4:memory,foo:/a/b\n0::/user.slice/x\n";
	char out[64];
	AP_CHECK(procmem_cgroup_path(cg, sizeof cg - 1, true, out, sizeof out));
	AP_CHECK(strcmp(out, "/user.slice/x") == 0);
	AP_CHECK(procmem_cgroup_path(cg, sizeof cg - 1, false, out, sizeof out));
	AP_CHECK(strcmp(out, "/a/b") == 0);
	static const char evil[] = "0::/../../etc\n";
	AP_CHECK(!procmem_cgroup_path(evil, sizeof evil - 1, true, out, sizeof out));
	static const char nomem[] = "4:cpu:/a\n";
	AP_CHECK(!procmem_cgroup_path(nomem, sizeof nomem - 1, false, out, sizeof out));
	static const char psi[] = "some avg10=12.34 avg60=0.00 avg300=0.00 total=9\n";
	uint32_t c;
	AP_CHECK(procmem_psi_parse(psi, sizeof psi - 1, &c) && c == 1234);
	AP_CHECK(!procmem_psi_parse("full avg10=1.00", 15, &c));
	AP_CHECK(!procmem_psi_parse("some avg10=1.5 ", 15, &c));
}

AP_TEST(one_dump_per_crossing)
{
	bool armed = true;
	int dumps = 0;
	/* climb past the limit, hover around it, dip to 95% (not re-armed),
	 * then to 80% (re-armed) and cross again */
	static const uint64_t v[] = { 50, 99, 100, 120, 99, 101, 95, 130, 80, 100 };
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		dumps += memtrig_step(v[i], 100, &armed);
	AP_CHECK_EQ_INT(dumps, 2);
}

AP_TEST(option_values)
{
	rt_limit l;
	char err[200];
	AP_CHECK_EQ_INT(rt_parse_limit("90%", 3, &l, err, sizeof err), 0);
	AP_CHECK(l.percent == 90 && l.bytes == 0);
	AP_CHECK_EQ_INT(rt_parse_limit("64m", 3, &l, err, sizeof err), 0);
	AP_CHECK(l.percent == 0 && l.bytes == 64u << 20);
	AP_CHECK_EQ_INT(rt_parse_limit("0%", 2, &l, err, sizeof err), AP_EINVAL);
	AP_CHECK_EQ_INT(rt_parse_limit("101%", 4, &l, err, sizeof err), AP_EINVAL);
	rt_push_url u;
	static const char a[] = "http://127.0.0.1:4040";
	AP_CHECK_EQ_INT(rt_parse_push_url(a, sizeof a - 1, &u, err, sizeof err), 0);
	AP_CHECK(u.to.enabled && u.to.port == 4040 && strcmp(u.path, "/ingest") == 0);
	static const char b[] = "http://[::1]/x/ingest?k=v";
	AP_CHECK_EQ_INT(rt_parse_push_url(b, sizeof b - 1, &u, err, sizeof err), 0);
	AP_CHECK(u.to.v6 && u.to.port == 80 && strcmp(u.path, "/x/ingest?k=v") == 0);
	static const char *const bad[] = { "https://127.0.0.1/", "http://", "http://host:1/",
					   "http://127.0.0.1:0/", "http://127.0.0.1/a b",
					   "127.0.0.1:80" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		AP_CHECK_MSG(rt_parse_push_url(bad[i], strlen(bad[i]), &u, err, sizeof err) ==
				     AP_EINVAL, "accepted %s", bad[i]);
}

AP_TEST(push_request_head)
{
	rt_push_url u;
	char err[200], head[1024];
	size_t len;
	static const char a[] = "http://127.0.0.1:4040/ingest?tenant=x";
	AP_CHECK_EQ_INT(rt_parse_push_url(a, sizeof a - 1, &u, err, sizeof err), 0);
	AP_CHECK_EQ_INT(push_format_head(head, sizeof head, &len, &u, "app{env=a b}", 10,
					 20, 99), 0);
	AP_CHECK(strstr(head, "POST /ingest?tenant=x&name=app%7Benv%3Da%20b%7D&from=10"
			      "&until=20&format=pprof") == head);
	AP_CHECK(strstr(head, "\r\nContent-Length: 99\r\n") != NULL);
	AP_CHECK(strstr(head, "\r\nHost: 127.0.0.1:4040\r\n") != NULL);
	AP_CHECK_EQ_INT(push_format_head(head, 40, &len, &u, "app", 1, 2, 3), AP_ERANGE);
	AP_CHECK_EQ_INT(push_parse_status("HTTP/1.1 204 No Content\r\n", 25), 204);
	AP_CHECK_EQ_INT(push_parse_status("HTTP/1.1 2x4", 12), -1);
	AP_CHECK_EQ_INT(push_parse_status("HTTP/1.1", 8), -1);
}

/* The page-table walk's budget: at most 1% of the time (procmem.h). */
AP_TEST(walk_budget)
{
	const uint64_t ms = 1000000;
	/* never walked: walk */
	AP_CHECK(procmem_walk_due(5 * ms, 0, 0));
	/* a 25 ms walk that ended at t = 1 s: not before 1 s + 2.5 s */
	AP_CHECK(!procmem_walk_due(1000 * ms + 1, 1000 * ms, 25 * ms));
	AP_CHECK(!procmem_walk_due(3499 * ms, 1000 * ms, 25 * ms));
	AP_CHECK(procmem_walk_due(3500 * ms, 1000 * ms, 25 * ms));
	/* a cheap walk (30 us) may repeat after 3 ms */
	AP_CHECK(!procmem_walk_due(1002 * ms, 1000 * ms, 30000));
	AP_CHECK(procmem_walk_due(1003 * ms, 1000 * ms, 30000));
	/* a clock that went back does not block the walk forever */
	AP_CHECK(procmem_walk_due(500 * ms, 1000 * ms, 25 * ms));
	AP_CHECK_EQ_INT(PROCMEM_WALK_SPACING, 100);
}
