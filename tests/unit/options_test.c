/*
 * options_test.c: the allocation-free "key=value,..." parser
 * (allocprof/options.h): typed value parsers on good, malformed and
 * overflowing input, and table-driven parsing with its one-line messages.
 */
#include <stddef.h>
#include <string.h>

#include "allocprof/options.h"
#include "aptest.h"

static int parse_u(int (*fn)(const char *, size_t, uint64_t *), const char *s,
		   uint64_t *out)
{
	return fn(s, strlen(s), out);
}

AP_TEST(sizes_accept_plain_numbers_and_binary_suffixes)
{
	uint64_t v = 0;
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "524288", &v), 0);
	AP_CHECK_EQ_U64(v, 524288);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "512k", &v), 0);
	AP_CHECK_EQ_U64(v, 524288);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "4KiB", &v), 0);
	AP_CHECK_EQ_U64(v, 4096);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "2M", &v), 0);
	AP_CHECK_EQ_U64(v, 2u << 20);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "3g", &v), 0);
	AP_CHECK_EQ_U64(v, 3ULL << 30);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "1t", &v), 0);
	AP_CHECK_EQ_U64(v, 1ULL << 40);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "7b", &v), 0);
	AP_CHECK_EQ_U64(v, 7);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "0", &v), 0);
	AP_CHECK_EQ_U64(v, 0);
}

AP_TEST(sizes_reject_garbage_signs_spaces_and_overflow)
{
	uint64_t v = 42;
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "k", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "12x", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "-1", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, " 5", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "5kk", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "5bb", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "18446744073709551616", &v), AP_ERANGE);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_size, "16777216t", &v), AP_ERANGE);
	AP_CHECK_EQ_U64(v, 42); /* untouched on error */
	AP_CHECK_EQ_INT(ap_options_parse_size(NULL, 3, &v), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_options_parse_size("1", 1, NULL), AP_EINVAL);
}

AP_TEST(u64_takes_the_full_range_and_nothing_else)
{
	uint64_t v = 0;
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_u64, "18446744073709551615", &v), 0);
	AP_CHECK_EQ_U64(v, UINT64_MAX);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_u64, "18446744073709551616", &v), AP_ERANGE);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_u64, "1k", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_u64, "+1", &v), AP_EINVAL);
	/* Only the first n bytes count: the slice need not be terminated. */
	AP_CHECK_EQ_INT(ap_options_parse_u64("123456", 3, &v), 0);
	AP_CHECK_EQ_U64(v, 123);
}

AP_TEST(booleans_accept_the_usual_spellings_in_any_case)
{
	bool b = false;
	static const char *const yes[] = { "1", "true", "YES", "On" };
	static const char *const no[] = { "0", "False", "no", "OFF" };
	for (size_t i = 0; i < 4; i++) {
		AP_CHECK_EQ_INT(ap_options_parse_bool(yes[i], strlen(yes[i]), &b), 0);
		AP_CHECK(b);
		AP_CHECK_EQ_INT(ap_options_parse_bool(no[i], strlen(no[i]), &b), 0);
		AP_CHECK(!b);
	}
	AP_CHECK_EQ_INT(ap_options_parse_bool("2", 1, &b), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_options_parse_bool("tru", 3, &b), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_options_parse_bool("truex", 5, &b), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_options_parse_bool("", 0, &b), AP_EINVAL);
}

AP_TEST(durations_default_to_seconds_and_take_unit_suffixes)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} ok[] = { { "30", 30000000000ULL },   { "1.5s", 1500000000ULL },
		   { "250ms", 250000000ULL },  { "2m", 120000000000ULL },
		   { "1h", 3600000000000ULL }, { "10us", 10000ULL },
		   { "5ns", 5ULL },            { ".5", 500000000ULL },
		   { "1.", 1000000000ULL },    { "0.0000000019s", 1ULL },
		   { "0.25m", 15000000000ULL }, { "0", 0 } };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		uint64_t v = 1;
		AP_CHECK_MSG(parse_u(ap_options_parse_duration_ns, ok[i].s, &v) == 0,
			     "'%s' rejected", ok[i].s);
		AP_CHECK_MSG(v == ok[i].ns, "'%s' -> %llu, want %llu", ok[i].s,
			     (unsigned long long)v, (unsigned long long)ok[i].ns);
	}
	uint64_t v;
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, ".", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "s", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "1.5x", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "1..5", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "-1s", &v), AP_EINVAL);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "99999999999h", &v), AP_ERANGE);
	AP_CHECK_EQ_INT(parse_u(ap_options_parse_duration_ns, "18446744073709551616ns", &v),
			AP_ERANGE);
}

AP_TEST(enums_match_names_case_insensitively)
{
	static const char *const names[] = { "pprof", "heap_v2", NULL };
	int e = -1;
	AP_CHECK_EQ_INT(ap_options_parse_enum("HEAP_V2", 7, names, &e), 0);
	AP_CHECK_EQ_INT(e, 1);
	AP_CHECK_EQ_INT(ap_options_parse_enum("pprofx", 6, names, &e), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_options_parse_enum("ppro", 4, names, &e), AP_EINVAL);
	AP_CHECK_EQ_INT(e, 1);
}

/* ---- table-driven parsing ------------------------------------------------ */

typedef struct cfg {
	uint64_t rate, depth, interval;
	bool verbose;
	int format;
	char out[16];
	int custom;
} cfg;

static const char *const formats[] = { "pprof", "heap_v2", NULL };

static int parse_even(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	uint64_t x;
	if (ap_options_parse_u64(v, n, &x) != 0 || x % 2 || x > 100) {
		snprintf(err, errlen, "an even number up to 100");
		return AP_EINVAL;
	}
	*(int *)dst = (int)x;
	return 0;
}

static const ap_option_spec specs[] = {
	{ "rate", AP_OPT_SIZE, offsetof(cfg, rate), 1, 1ULL << 40, NULL, 0, NULL, "" },
	{ "max_depth", AP_OPT_U64, offsetof(cfg, depth), 1, 256, NULL, 0, NULL, "" },
	{ "interval", AP_OPT_DURATION, offsetof(cfg, interval), 0, 0, NULL, 0, NULL, "" },
	{ "verbose", AP_OPT_BOOL, offsetof(cfg, verbose), 0, 0, NULL, 0, NULL, "" },
	{ "format", AP_OPT_ENUM, offsetof(cfg, format), 0, 0, formats, 0, NULL, "" },
	{ "output", AP_OPT_STRING, offsetof(cfg, out), 0, 0, NULL, 16, NULL, "" },
	{ "even", AP_OPT_CUSTOM, offsetof(cfg, custom), 0, 0, NULL, 0, parse_even, "" },
};
#define NSPECS (sizeof specs / sizeof specs[0])

typedef struct msgs {
	char text[8][600];
	int n;
} msgs;

static void collect(void *ctx, const char *msg)
{
	msgs *m = ctx;
	if (m->n < 8)
		snprintf(m->text[m->n], sizeof m->text[0], "%s", msg);
	m->n++;
}

static cfg defaults(void)
{
	cfg c;
	memset(&c, 0, sizeof c);
	c.rate = 524288;
	c.depth = 64;
	strcpy(c.out, "def");
	return c;
}

AP_TEST(a_full_string_sets_every_type)
{
	cfg c = defaults();
	msgs m = { .n = 0 };
	int bad = ap_options_parse(" rate = 1m ,max_depth=32,interval=1.5s,verbose=yes,"
				   "format=heap_v2,output=a.%p,even=42",
				   specs, NSPECS, &c, collect, &m);
	AP_CHECK_EQ_INT(bad, 0);
	AP_CHECK_EQ_INT(m.n, 0);
	AP_CHECK_EQ_U64(c.rate, 1 << 20);
	AP_CHECK_EQ_U64(c.depth, 32);
	AP_CHECK_EQ_U64(c.interval, 1500000000ULL);
	AP_CHECK(c.verbose);
	AP_CHECK_EQ_INT(c.format, 1);
	AP_CHECK(strcmp(c.out, "a.%p") == 0);
	AP_CHECK_EQ_INT(c.custom, 42);
}

AP_TEST(unknown_keys_are_named_and_ignored)
{
	cfg c = defaults();
	msgs m = { .n = 0 };
	int bad = ap_options_parse("rat=5,rate=8", specs, NSPECS, &c, collect, &m);
	AP_CHECK_EQ_INT(bad, 1);
	AP_CHECK_EQ_INT(m.n, 1);
	AP_CHECK_MSG(strcmp(m.text[0], "unknown key 'rat' (ignored)") == 0, "got: %s",
		     m.text[0]);
	AP_CHECK_EQ_U64(c.rate, 8);
}

AP_TEST(bad_values_keep_the_default_and_say_what_was_expected)
{
	cfg c = defaults();
	msgs m = { .n = 0 };
	int bad = ap_options_parse("rate=abc,max_depth=0,format=heap_v3,even=3,output="
				   "much-too-long-for-16",
				   specs, NSPECS, &c, collect, &m);
	AP_CHECK_EQ_INT(bad, 5);
	AP_CHECK_EQ_U64(c.rate, 524288);
	AP_CHECK_EQ_U64(c.depth, 64);
	AP_CHECK_EQ_INT(c.format, 0);
	AP_CHECK_EQ_INT(c.custom, 0);
	AP_CHECK(strcmp(c.out, "def") == 0);
	AP_CHECK_MSG(strstr(m.text[0], "bad value 'abc' for key 'rate'") &&
			     strstr(m.text[0], "(default kept)"),
		     "got: %s", m.text[0]);
	AP_CHECK_MSG(strstr(m.text[1], "between 1 and 256"), "got: %s", m.text[1]);
	AP_CHECK_MSG(strstr(m.text[2], "one of pprof|heap_v2"), "got: %s", m.text[2]);
	AP_CHECK_MSG(strstr(m.text[3], "expected an even number"), "got: %s", m.text[3]);
	AP_CHECK_MSG(strstr(m.text[4], "key 'output'"), "got: %s", m.text[4]);
}

AP_TEST(missing_equals_empty_pairs_and_repeats)
{
	cfg c = defaults();
	msgs m = { .n = 0 };
	int bad = ap_options_parse(",,verbose,, rate=4 ,rate=16,", specs, NSPECS, &c,
				   collect, &m);
	AP_CHECK_EQ_INT(bad, 1);
	AP_CHECK_MSG(strstr(m.text[0], "missing '=' after key 'verbose'"), "got: %s",
		     m.text[0]);
	AP_CHECK_EQ_U64(c.rate, 16); /* the last good value wins */
	AP_CHECK(!c.verbose);
}

AP_TEST(empty_and_null_inputs_do_nothing)
{
	cfg c = defaults();
	AP_CHECK_EQ_INT(ap_options_parse(NULL, specs, NSPECS, &c, NULL, NULL), 0);
	AP_CHECK_EQ_INT(ap_options_parse("", specs, NSPECS, &c, NULL, NULL), 0);
	AP_CHECK_EQ_INT(ap_options_parse("  ,  ", specs, NSPECS, &c, NULL, NULL), 0);
	/* Errors without a callback are still counted. */
	AP_CHECK_EQ_INT(ap_options_parse("x=1,=2", specs, NSPECS, &c, NULL, NULL), 2);
	AP_CHECK_EQ_U64(c.rate, 524288);
}

AP_TEST(long_keys_and_values_are_cut_in_messages)
{
	char text[400];
	memset(text, 'k', 300);
	strcpy(text + 300, "=1");
	cfg c = defaults();
	msgs m = { .n = 0 };
	AP_CHECK_EQ_INT(ap_options_parse(text, specs, NSPECS, &c, collect, &m), 1);
	AP_CHECK(strstr(m.text[0], "...' (ignored)") != NULL);
	AP_CHECK(strlen(m.text[0]) < 120);
}
