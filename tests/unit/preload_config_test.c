/*
 * preload_config_test.c: the runtime's option table (src/preload/config.h)
 * and the expansion of dump file name patterns.
 */
#include <signal.h>
#include <string.h>

#include "aptest.h"
#include "config.h"
#include "unwinder.h"

static char last_msg[600];
static int nmsg;

static void collect(void *ctx, const char *msg)
{
	(void)ctx;
	snprintf(last_msg, sizeof last_msg, "%s", msg);
	nmsg++;
}

AP_TEST(defaults_match_the_documentation)
{
	rt_options o;
	rt_options_default(&o);
	AP_CHECK_EQ_U64(o.rate, 524288);
	AP_CHECK(o.dump_at_exit);
	AP_CHECK_EQ_U64(o.max_depth, 64);
	AP_CHECK_EQ_INT(o.format, RT_FORMAT_PPROF);
	AP_CHECK_EQ_INT(o.fork_mode, RT_FORK_FOLLOW);
	AP_CHECK_EQ_INT(o.signal, 0);
	/* design 1 (sampled blocks stay the allocator's) unless range=1 */
	AP_CHECK(!o.range);
	AP_CHECK_EQ_U64(o.range_max, 65536);
	AP_CHECK(strcmp(rt_output_pattern(&o), "allocprof.%p.%n.pb.gz") == 0);
	o.format = RT_FORMAT_HEAPV2;
	AP_CHECK(strcmp(rt_output_pattern(&o), "allocprof.%p.%n.heap") == 0);
}

AP_TEST(every_runtime_key_parses)
{
	rt_options o;
	rt_options_default(&o);
	nmsg = 0;
	int bad = rt_options_parse(&o,
				   "rate=1,output=/tmp/x.%p,seed=42,dump_at_exit=0,"
				   "signal=SIGUSR2,interval=30,every_bytes=1g,peak=1,"
				   "peak_gap=250ms,max_depth=32,unwinder=fp,"
				   "format=heap_v2,fork=stop,verbose=1",
				   collect, NULL);
	AP_CHECK_MSG(bad == 0, "%s", last_msg);
	AP_CHECK_EQ_U64(o.rate, 1);
	AP_CHECK(strcmp(o.output, "/tmp/x.%p") == 0);
	AP_CHECK_EQ_U64(o.seed, 42);
	AP_CHECK(!o.dump_at_exit);
	AP_CHECK_EQ_INT(o.signal, SIGUSR2);
	AP_CHECK_EQ_U64(o.interval_ns, 30000000000ULL);
	AP_CHECK_EQ_U64(o.every_bytes, 1ULL << 30);
	AP_CHECK(o.peak);
	AP_CHECK_EQ_U64(o.peak_gap_ns, 250000000ULL);
	AP_CHECK_EQ_U64(o.max_depth, 32);
	AP_CHECK_EQ_INT(o.unwinder, UNWINDER_FP);
	AP_CHECK_EQ_INT(o.format, RT_FORMAT_HEAPV2);
	AP_CHECK_EQ_INT(o.fork_mode, RT_FORK_STOP);
	AP_CHECK(o.verbose);
}

AP_TEST(signals_by_name_number_or_none)
{
	rt_options o;
	rt_options_default(&o);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "signal=USR1", collect, NULL), 0);
	AP_CHECK_EQ_INT(o.signal, SIGUSR1);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "signal=12", collect, NULL), 0);
	AP_CHECK_EQ_INT(o.signal, 12);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "signal=0", collect, NULL), 0);
	AP_CHECK_EQ_INT(o.signal, 0);
	/* Taking over a fatal signal would change the program: refused. */
	nmsg = 0;
	AP_CHECK_EQ_INT(rt_options_parse(&o, "signal=SIGSEGV,signal=9,signal=", collect, NULL), 3);
	AP_CHECK_EQ_INT(o.signal, 0);
	AP_CHECK(strstr(last_msg, "key 'signal'") != NULL);
}

/* interval=: 0 or at least 1ms; a value that rounds to 0 ns is not
 * silently "never". */
AP_TEST(intervals_below_a_millisecond_are_refused)
{
	rt_options o;
	rt_options_default(&o);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "interval=1ms", collect, NULL), 0);
	AP_CHECK_EQ_U64(o.interval_ns, 1000000ULL);
	nmsg = 0;
	AP_CHECK_EQ_INT(rt_options_parse(&o, "interval=1ns,interval=999us,"
					 "interval=0.0000000001s", collect, NULL), 3);
	AP_CHECK_EQ_U64(o.interval_ns, 1000000ULL); /* the last good value kept */
	AP_CHECK(strstr(last_msg, "key 'interval'") != NULL);
	AP_CHECK(strstr(last_msg, "at least 1ms") != NULL);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "interval=0", collect, NULL), 0);
	AP_CHECK_EQ_U64(o.interval_ns, 0);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "interval=0.000s", collect, NULL), 0);
	AP_CHECK_EQ_U64(o.interval_ns, 0);
}

AP_TEST(dump_on_lists_terminating_signals_joined_by_plus)
{
	rt_options o;
	rt_options_default(&o);
	AP_CHECK_EQ_U64(o.dump_on, (1ULL << SIGTERM) | (1ULL << SIGINT) | (1ULL << SIGHUP));
	AP_CHECK(!o.http_public);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "dump_on=term+segv+abrt", collect, NULL), 0);
	AP_CHECK_EQ_U64(o.dump_on, (1ULL << SIGTERM) | (1ULL << SIGSEGV) | (1ULL << SIGABRT));
	AP_CHECK_EQ_INT(rt_options_parse(&o, "dump_on=none", collect, NULL), 0);
	AP_CHECK_EQ_U64(o.dump_on, 0);
	nmsg = 0;
	AP_CHECK_EQ_INT(rt_options_parse(&o, "dump_on=term+kill,dump_on=,dump_on=term+",
					 collect, NULL), 3);
	AP_CHECK_EQ_U64(o.dump_on, 0);
	AP_CHECK(strstr(last_msg, "key 'dump_on'") != NULL);
}

AP_TEST(rates_outside_the_sampler_domain_are_refused)
{
	rt_options o;
	rt_options_default(&o);
	nmsg = 0;
	AP_CHECK_EQ_INT(rt_options_parse(&o, "rate=0", collect, NULL), 1);
	AP_CHECK_EQ_INT(rt_options_parse(&o, "rate=1000000t", collect, NULL), 1);
	AP_CHECK_EQ_U64(o.rate, 524288);
	AP_CHECK(strstr(last_msg, "key 'rate'") != NULL);
}

AP_TEST(patterns_expand_pid_time_sequence_and_percent)
{
	char out[128];
	AP_CHECK_EQ_INT(rt_expand_pattern("allocprof.%p.%n.pb.gz", 123, 1700000000, 4,
					  false, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "allocprof.123.4.pb.gz") == 0);
	AP_CHECK_EQ_INT(rt_expand_pattern("/d/%t-%%-%q", 1, 99, 0, false, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "/d/99-%-%q") == 0);
	AP_CHECK_EQ_INT(rt_expand_pattern("trailing%", 1, 0, 0, false, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "trailing%") == 0);
}

AP_TEST(fork_children_get_their_pid_even_without_percent_p)
{
	char out[128];
	AP_CHECK_EQ_INT(rt_expand_pattern("dir.x/heap.pb.gz", 77, 0, 0, true, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "dir.x/heap.77.pb.gz") == 0);
	AP_CHECK_EQ_INT(rt_expand_pattern("profile", 77, 0, 0, true, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "profile.77") == 0);
	AP_CHECK_EQ_INT(rt_expand_pattern(".hidden", 77, 0, 0, true, out, sizeof out), 0);
	AP_CHECK(strcmp(out, ".hidden.77") == 0);
	/* With %p already there nothing is added. */
	AP_CHECK_EQ_INT(rt_expand_pattern("a.%p.gz", 77, 0, 0, true, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "a.77.gz") == 0);
}

AP_TEST(patterns_that_do_not_fit_are_refused)
{
	char out[8];
	AP_CHECK_EQ_INT(rt_expand_pattern("abcdefgh", 1, 0, 0, false, out, sizeof out),
			AP_ERANGE);
	AP_CHECK_EQ_INT(rt_expand_pattern("a%p", 123456789, 0, 0, false, out, sizeof out),
			AP_ERANGE);
	AP_CHECK_EQ_INT(rt_expand_pattern("abc", 1, 0, 0, false, out, 0), AP_EINVAL);
	AP_CHECK_EQ_INT(rt_expand_pattern(NULL, 1, 0, 0, false, out, sizeof out), AP_EINVAL);
}

AP_TEST(relative_patterns_are_anchored_at_the_start_directory)
{
	char out[32];
	AP_CHECK_EQ_INT(rt_anchor_pattern("a.%p.pb.gz", "/srv", out, sizeof out), 0);
	AP_CHECK(strcmp(out, "/srv/a.%p.pb.gz") == 0);
	AP_CHECK_EQ_INT(rt_anchor_pattern("a", "/", out, sizeof out), 0);
	AP_CHECK(strcmp(out, "/a") == 0);
	AP_CHECK_EQ_INT(rt_anchor_pattern("/abs/x", "/srv", out, sizeof out), 0);
	AP_CHECK(strcmp(out, "/abs/x") == 0);
	AP_CHECK_EQ_INT(rt_anchor_pattern("rel", NULL, out, sizeof out), 0);
	AP_CHECK(strcmp(out, "rel") == 0);
	AP_CHECK_EQ_INT(rt_anchor_pattern("x", "/a-directory-name-far-too-long-for-it",
					  out, sizeof out), AP_ERANGE);
}
