/*
 * memory_test.c: the process-memory record's text form
 * (allocprof/memory.h): round trip, missing keys, unknown keys, and every
 * kind of malformed input refused.
 */
#include <string.h>

#include "allocprof/memory.h"
#include "aptest.h"

AP_TEST(record_round_trips)
{
	ap_memory m, back;
	memset(&m, 0, sizeof m);
	memcpy(m.allocator, "jemalloc", 9);
	memcpy(m.source, "smaps_rollup", 13);
	ap_memory_set(&m, AP_MEM_RSS, 123456789);
	ap_memory_set(&m, AP_MEM_ANON, 0);
	ap_memory_set(&m, AP_MEM_TIME_NS, UINT64_MAX);
	char buf[2048];
	size_t len;
	AP_CHECK_EQ_INT(ap_memory_encode(&m, buf, sizeof buf, &len), 0);
	AP_CHECK_EQ_U64(len, strlen(buf));
	AP_CHECK_EQ_INT(ap_memory_decode(buf, len, &back), 0);
	AP_CHECK(memcmp(&m, &back, sizeof m) == 0);
	uint64_t v;
	AP_CHECK(ap_memory_get(&back, AP_MEM_ANON, &v) && v == 0);
	AP_CHECK(!ap_memory_get(&back, AP_MEM_FILE, &v)); /* not measured */
	AP_CHECK(strcmp(ap_memory_key_name(AP_MEM_RSS), "rss_bytes") == 0);
	AP_CHECK(ap_memory_key_name(AP_MEM_NKEYS) == NULL);
}

AP_TEST(every_key_fits_and_too_small_a_buffer_is_refused)
{
	ap_memory m, back;
	memset(&m, 0, sizeof m);
	for (unsigned k = 0; k < AP_MEM_NKEYS; k++)
		ap_memory_set(&m, (ap_memory_key)k, UINT64_MAX - k);
	memset(m.allocator, 'a', AP_MEMORY_WORD_MAX);
	char buf[2048];
	size_t len;
	AP_CHECK_EQ_INT(ap_memory_encode(&m, buf, sizeof buf, &len), 0);
	AP_CHECK_EQ_INT(ap_memory_decode(buf, len, &back), 0);
	AP_CHECK(memcmp(&m, &back, sizeof m) == 0);
	AP_CHECK_EQ_INT(ap_memory_encode(&m, buf, 40, &len), AP_ERANGE);
	m.allocator[0] = ' ';
	AP_CHECK_EQ_INT(ap_memory_encode(&m, buf, sizeof buf, &len), AP_EINVAL);
}

AP_TEST(unknown_keys_are_skipped_and_bad_lines_refused)
{
	ap_memory m;
	static const char later[] = "rss_bytes=5\nfuture_thing=abc\n";
	AP_CHECK_EQ_INT(ap_memory_decode(later, sizeof later - 1, &m), 0);
	AP_CHECK_EQ_U64(m.v[AP_MEM_RSS], 5);
	static const char *const bad[] = {
		"rss_bytes",                       /* no '=' */
		"=5",                              /* no key */
		"rss_bytes=",                      /* no number */
		"rss_bytes=-1",                    /* not decimal */
		"rss_bytes=18446744073709551616",  /* 2^64 */
		"rss_bytes=1\nrss_bytes=2",        /* repeated */
		"allocator=a b",                   /* space in a name */
		"allocator=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* too long */
		"allocator=x\nallocator=y",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		AP_CHECK_MSG(ap_memory_decode(bad[i], strlen(bad[i]), &m) == AP_ECORRUPT,
			     "accepted: %s", bad[i]);
	AP_CHECK_EQ_INT(ap_memory_decode(NULL, 0, &m), 0);
	AP_CHECK_EQ_U64(m.have, 0);
}
