/*
 * pprof_test.c: pprof encode/decode (allocprof/profile.h): round trips with
 * every field set, golden bytes checked by hand against the wire format, a
 * handmade unpacked/out-of-order/unknown-field profile, truncation at every
 * byte, a catalogue of corrupt inputs with their reasons, and allocation
 * failure at every point.
 *
 * Also a tool for the integration test (tests/integration/
 * pprof_tools_test.sh): with AP_WRITE_SAMPLE_PROFILE=path the test run
 * writes a symbolized heap profile there; with AP_READ_PROFILE=path it
 * decodes that file and prints a one-line summary. AP_WRITE_CORPUS=dir
 * writes the fuzz seed corpus into dir/pprof/.
 */
#include "aptest.h"
#include "fmt_testutil.h"
#include "protobuf.h"

#include "allocprof/codec.h"
#include "allocprof/profile.h"

#include <stdlib.h>
#include <string.h>

static int64_t S(ap_profile *p, const char *s)
{
	return ap_profile_intern(p, s);
}

/* A profile with every field of every message set, ids at the extremes. */
static ap_profile *make_full(void)
{
	ap_profile *p;
	if (ap_profile_create(NULL, &p))
		return NULL;
	ap_profile_add_sample_type(p, "alloc_space", "bytes");
	ap_profile_add_sample_type(p, "weird", "");
	ap_profile_add_sample_type(p, "alloc_objects", "count");
	ap_mapping m1 = { .id = 1, .memory_start = 0x400000,
			  .memory_limit = 0x401000, .file_offset = 0x1000,
			  .filename = S(p, "/usr/bin/prog"),
			  .build_id = S(p, "abcdef0123"),
			  .has_functions = true, .has_filenames = true,
			  .has_line_numbers = true, .has_inline_frames = true };
	ap_mapping m2 = { .id = UINT64_MAX, .memory_start = UINT64_MAX - 4096,
			  .memory_limit = UINT64_MAX, .filename = S(p, "") };
	ap_profile_add_mapping(p, &m1, NULL);
	ap_profile_add_mapping(p, &m2, NULL);
	ap_function f1 = { .id = 5, .name = S(p, "main"),
			   .system_name = S(p, "_main"),
			   .filename = S(p, "main.c"), .start_line = 10 };
	ap_function f2 = { .id = (uint64_t)1 << 63, .name = S(p, ""),
			   .start_line = -3 };
	ap_profile_add_function(p, &f1, NULL);
	ap_profile_add_function(p, &f2, NULL);
	ap_line lines[3] = { { 5, 12, 7 }, { (uint64_t)1 << 63, -1, 0 },
			     { 0, 0, 0 } };
	ap_location l1 = { .id = UINT64_MAX - 1, .mapping_id = UINT64_MAX,
			   .address = UINT64_MAX, .lines = lines, .nlines = 3,
			   .is_folded = true };
	ap_location l2 = { .id = 2, .mapping_id = 1, .address = 0x400123 };
	ap_location l3 = { .id = 3 };
	ap_profile_add_location(p, &l1, NULL);
	ap_profile_add_location(p, &l2, NULL);
	ap_profile_add_location(p, &l3, NULL);
	uint64_t st1[] = { 2, UINT64_MAX - 1, 3 };
	int64_t v1[] = { 1024, INT64_MIN, -1 };
	ap_label lab[3] = {
		{ .key = S(p, "bytes"), .num = 1024, .num_unit = S(p, "bytes") },
		{ .key = S(p, "thread"), .str = S(p, "worker-1") },
		{ .key = S(p, "neg"), .num = -77 },
	};
	ap_profile_add_sample(p, st1, 3, v1, lab, 3);
	int64_t v2[] = { 0, 0, 0 };
	ap_profile_add_sample(p, NULL, 0, v2, NULL, 0);
	uint64_t st3[] = { 3, 3 };
	int64_t v3[] = { INT64_MAX, 1, 2 };
	ap_profile_add_sample(p, st3, 2, v3, lab + 1, 1);
	ap_profile_add_comment(p, "first comment");
	ap_profile_add_comment(p, "");
	static const unsigned char blob[] = { 0, 1, 2, 0xff, 0 };
	ap_profile_ext_add(p, "allocprof.test", blob, sizeof blob);
	ap_profile_ext_add(p, "allocprof.empty", NULL, 0);
	p->drop_frames = S(p, "malloc|free");
	p->keep_frames = S(p, "keep.*");
	p->time_nanos = 1700000000123456789;
	p->duration_nanos = 5000000000;
	p->period_type.type = S(p, "space");
	p->period_type.unit = S(p, "bytes");
	p->period = 524288;
	p->default_sample_type = S(p, "alloc_objects");
	p->doc_url = S(p, "https://example.com/doc");
	if (ap_profile_validate(p, NULL, 0) || p->nsamples != 3) {
		ap_profile_destroy(p);
		return NULL;
	}
	return p;
}

static void free_buf(unsigned char *b, size_t len)
{
	ap_allocator_libc()->free(NULL, b, len + 1);
}

static void round_trip(bool gzip)
{
	ap_profile *p = make_full(), *q = NULL;
	AP_CHECK(p != NULL);
	unsigned char *buf;
	size_t len;
	char err[200];
	AP_CHECK_EQ_INT(ap_pprof_encode(p, gzip, NULL, &buf, &len), 0);
	AP_CHECK(ap_gzip_detect(buf, len) == gzip);
	maybe_write_corpus("pprof", gzip ? "full_gzip" : "full_plain", buf, len);
	int rc = ap_pprof_decode(buf, len, NULL, &q, err, sizeof err);
	AP_CHECK_MSG(rc == 0, "decode: %d %s", rc, err);
	const char *diff = profiles_differ(p, q);
	AP_CHECK_MSG(diff == NULL, "round trip differs in %s", diff);
	/* Re-encoding the decoded profile gives the same bytes. */
	unsigned char *buf2;
	size_t len2;
	AP_CHECK_EQ_INT(ap_pprof_encode(q, gzip, NULL, &buf2, &len2), 0);
	AP_CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
	free_buf(buf, len);
	free_buf(buf2, len2);
	ap_profile_destroy(p);
	ap_profile_destroy(q);
}

AP_TEST(round_trip_every_field_plain)
{
	round_trip(false);
}

AP_TEST(round_trip_every_field_gzip)
{
	round_trip(true);
}

/*
 * The gzip'd encoding is fed to the compressor field by field, an
 * extension's payload straight from the profile: its contents must be the
 * plain encoding's bytes exactly, and (zlib's output does not depend on
 * how its input is cut) the same file as compressing the plain encoding
 * whole, which is how it was made before. A 300 KB extension makes the
 * payload the bulk of the message, as the runtime's lifetimes are.
 */
AP_TEST(gzip_encoding_is_the_plain_encoding_compressed)
{
	ap_profile *p = make_full();
	AP_CHECK(p != NULL);
	size_t big = 300000;
	unsigned char *payload = malloc(big);
	AP_CHECK(payload != NULL);
	uint64_t x = 88172645463325252ULL;
	for (size_t i = 0; i < big; i++) { /* xorshift: little to compress */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		payload[i] = (unsigned char)(i % 7 ? x : i);
	}
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "lifetimes", payload, big), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "empty", NULL, 0), 0);
	unsigned char *plain, *gz, *whole, *back;
	size_t plain_len, gz_len, whole_len, back_len;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, false, NULL, &plain, &plain_len), 0);
	AP_CHECK(plain_len > big);
	AP_CHECK_EQ_INT(ap_pprof_encode(p, true, NULL, &gz, &gz_len), 0);
	AP_CHECK_EQ_INT(ap_gzip_decompress(gz, gz_len, 0, NULL, &back, &back_len, NULL, 0), 0);
	AP_CHECK(back_len == plain_len && memcmp(back, plain, plain_len) == 0);
	AP_CHECK_EQ_INT(ap_gzip_compress(plain, plain_len, 6, NULL, &whole, &whole_len), 0);
	AP_CHECK(whole_len == gz_len && memcmp(whole, gz, gz_len) == 0);
	free_buf(plain, plain_len);
	free_buf(gz, gz_len);
	free_buf(whole, whole_len);
	free_buf(back, back_len);
	free(payload);
	ap_profile_destroy(p);
}

AP_TEST(empty_profile_round_trips)
{
	ap_profile *p, *q;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	unsigned char *buf;
	size_t len;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, false, NULL, &buf, &len), 0);
	/* Only string_table[0] = "": tag 0x32, length 0. */
	AP_CHECK_EQ_U64(len, 2);
	AP_CHECK(buf[0] == 0x32 && buf[1] == 0x00);
	AP_CHECK_EQ_INT(ap_pprof_decode(buf, len, NULL, &q, NULL, 0), 0);
	AP_CHECK(profiles_differ(p, q) == NULL);
	ap_profile_destroy(q);
	/* A zero-length message is a valid, empty profile too. */
	AP_CHECK_EQ_INT(ap_pprof_decode(buf, 0, NULL, &q, NULL, 0), 0);
	AP_CHECK_EQ_U64(q->nstrings, 1);
	free_buf(buf, len);
	ap_profile_destroy(q);
	ap_profile_destroy(p);
}

/*
 * Golden bytes, derived by hand from the wire format: tag = field << 3 |
 * wire type; proto3 omits zero scalars; repeated scalars packed.
 */
AP_TEST(golden_bytes_tiny_profile)
{
	static const unsigned char want[] = {
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* sample_type {1, 2} */
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* sample_type {1, 2} */
		0x12, 0x10,                         /* sample, 16 bytes: */
		0x0a, 0x01, 0x01,                   /*  location_id [1] */
		0x12, 0x0b, 0x05,                   /*  value [5, -1]: -1 is */
		0xff, 0xff, 0xff, 0xff, 0xff,       /*  ten bytes of two's */
		0xff, 0xff, 0xff, 0xff, 0x01,       /*  complement */
		0x22, 0x05, 0x08, 0x01, 0x18, 0x90, 0x03, /* location 1 @0x190 */
		0x32, 0x00,                               /* "" */
		0x32, 0x05, 's', 'p', 'a', 'c', 'e',      /* "space" */
		0x32, 0x05, 'b', 'y', 't', 'e', 's',      /* "bytes" */
		0x60, 0x03,                               /* period 3 */
	};
	ap_profile *p, *q;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_add_sample_type(p, "space", "bytes"), 0);
	AP_CHECK_EQ_INT(ap_profile_add_sample_type(p, "space", "bytes"), 1);
	ap_location loc = { .id = 1, .address = 0x190 };
	AP_CHECK_EQ_INT(ap_profile_add_location(p, &loc, NULL), 0);
	int64_t v[2] = { 5, -1 };
	uint64_t id = 1;
	AP_CHECK_EQ_INT(ap_profile_add_sample(p, &id, 1, v, NULL, 0), 0);
	p->period = 3;
	unsigned char *buf;
	size_t len;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, false, NULL, &buf, &len), 0);
	AP_CHECK_EQ_U64(len, sizeof want);
	AP_CHECK(memcmp(buf, want, len) == 0);
	free_buf(buf, len);
	maybe_write_corpus("pprof", "golden_tiny", want, sizeof want);

	char err[200];
	AP_CHECK_EQ_INT(ap_pprof_decode(want, sizeof want, NULL, &q, err,
					sizeof err), 0);
	AP_CHECK(profiles_differ(p, q) == NULL);
	AP_CHECK_EQ_INT(q->samples[0].values[1], -1);
	ap_profile_destroy(q);
	/* Without the second sample_type the sample has one value too many. */
	AP_CHECK_EQ_INT(ap_pprof_decode(want + 6, sizeof want - 6, NULL, &q,
					err, sizeof err), AP_ECORRUPT);
	AP_CHECK_MSG(strstr(err, "sample 0 at offset 8 has 2 values, "
			    "expected 1") != NULL, "%s", err);
	ap_profile_destroy(p);
}

/*
 * Written by hand: samples before the locations and strings they use,
 * unpacked repeated fields, unknown fields of every wire type (groups
 * nested), a repeated comment field unpacked.
 */
static const unsigned char handmade[] = {
	0x12, 0x0a, 0x08, 0x01, 0x08, 0x02, 0x10, 0x07, /* sample: loc 1, 2; 7 */
	0x48, 0x2a, 0x10, 0x09,                         /* unknown 9; value 9 */
	0x22, 0x02, 0x08, 0x01,                         /* location 1 */
	0x22, 0x04, 0x08, 0x02, 0x18, 0x20,             /* location 2 @0x20 */
	0xa0, 0x06, 0x01,                               /* field 100 varint */
	0xa9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8,             /* field 101 fixed64 */
	0xb5, 0x06, 1, 2, 3, 4,                         /* field 102 fixed32 */
	0xba, 0x06, 0x02, 'h', 'i',                     /* field 103 bytes */
	0xc3, 0x06, 0x08, 0x05, 0x13, 0x14, 0xc4, 0x06, /* group 104 { 1; {} } */
	0x32, 0x00, 0x32, 0x01, 'a', 0x32, 0x01, 'b',   /* "", "a", "b" */
	0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,             /* sample_type a/b */
	0x0a, 0x04, 0x08, 0x02, 0x10, 0x01,             /* sample_type b/a */
	0x68, 0x01, 0x68, 0x02,                         /* comments a, b */
};

AP_TEST(decode_handmade_unpacked_out_of_order)
{
	ap_profile *q;
	char err[200];
	maybe_write_corpus("pprof", "handmade_unpacked", handmade,
			   sizeof handmade);
	int rc = ap_pprof_decode(handmade, sizeof handmade, NULL, &q, err,
				 sizeof err);
	AP_CHECK_MSG(rc == 0, "%d: %s", rc, err);
	AP_CHECK_EQ_U64(q->nsample_types, 2);
	AP_CHECK(strcmp(ap_profile_string(q, q->sample_types[1].type), "b") == 0);
	AP_CHECK_EQ_U64(q->nsamples, 1);
	const ap_sample *s = &q->samples[0];
	AP_CHECK_EQ_U64(s->nlocations, 2);
	AP_CHECK_EQ_U64(s->location_ids[1], 2);
	AP_CHECK_EQ_INT(s->values[0], 7);
	AP_CHECK_EQ_INT(s->values[1], 9);
	AP_CHECK_EQ_U64(ap_profile_location(q, 2)->address, 0x20);
	AP_CHECK_EQ_U64(q->ncomments, 2);
	AP_CHECK(strcmp(ap_profile_string(q, q->comments[1]), "b") == 0);
	ap_profile_destroy(q);
}

AP_TEST(extensions_are_named_and_found_by_name_or_prefix)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "", "x", 1), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "has space", "x", 1), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "tab\there", "x", 1), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "a", NULL, 1), AP_EINVAL);
	char longname[AP_PROFILE_EXT_NAME_MAX + 2];
	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, longname, "x", 1), AP_EINVAL);
	longname[AP_PROFILE_EXT_NAME_MAX] = '\0';
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, longname, "x", 1), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "hist.size", "s1", 2), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "memory", "m", 1), 0);
	AP_CHECK_EQ_INT(ap_profile_ext_add(p, "hist.life", "l12", 3), 0);
	AP_CHECK_EQ_U64(p->nexts, 4);
	size_t cur = 0;
	const ap_profile_ext *e = ap_profile_ext_next(p, "hist.", true, &cur);
	AP_CHECK(e && strcmp(e->name, "hist.size") == 0 && e->len == 2);
	e = ap_profile_ext_next(p, "hist.", true, &cur);
	AP_CHECK(e && strcmp(e->name, "hist.life") == 0 &&
		 memcmp(e->data, "l12", 3) == 0);
	AP_CHECK(ap_profile_ext_next(p, "hist.", true, &cur) == NULL);
	cur = 0;
	AP_CHECK(ap_profile_ext_next(p, "hist.", false, &cur) == NULL);
	cur = 0;
	e = ap_profile_ext_next(p, "memory", false, &cur);
	AP_CHECK(e && e->len == 1 && cur == 3);
	ap_profile_destroy(p);
}

/* An extension is field 1000 of Profile, {1: name, 2: data}: readers that
 * do not know it skip it, and a malformed one is a clear error. */
AP_TEST(extension_wire_form_and_malformed_names)
{
	ap_profile *q;
	char err[200];
	/* string_table [""], then field 1000 (tag 0xc2 0x3e) {name "ab", data "\x01"} */
	static const unsigned char good[] = { 0x32, 0x00, 0xc2, 0x3e, 0x07,
					      0x0a, 0x02, 'a', 'b',
					      0x12, 0x01, 0x01 };
	maybe_write_corpus("pprof", "extension", good, sizeof good);
	AP_CHECK_EQ_INT(ap_pprof_decode(good, sizeof good, NULL, &q, err,
					sizeof err), 0);
	AP_CHECK_EQ_U64(q->nexts, 1);
	AP_CHECK(strcmp(q->exts[0].name, "ab") == 0 && q->exts[0].len == 1 &&
		 q->exts[0].data[0] == 1);
	unsigned char *buf;
	size_t len;
	AP_CHECK_EQ_INT(ap_pprof_encode(q, false, NULL, &buf, &len), 0);
	AP_CHECK(len == sizeof good && memcmp(buf, good, len) == 0);
	free_buf(buf, len);
	ap_profile_destroy(q);
	static const unsigned char noname[] = { 0x32, 0x00, 0xc2, 0x3e, 0x03,
						0x12, 0x01, 0x01 };
	AP_CHECK_EQ_INT(ap_pprof_decode(noname, sizeof noname, NULL, &q, err,
					sizeof err), AP_ECORRUPT);
	AP_CHECK_MSG(strstr(err, "has no name") != NULL, "%s", err);
	static const unsigned char badname[] = { 0x32, 0x00, 0xc2, 0x3e, 0x04,
						 0x0a, 0x02, 'a', ' ' };
	AP_CHECK_EQ_INT(ap_pprof_decode(badname, sizeof badname, NULL, &q, err,
					sizeof err), AP_ECORRUPT);
	AP_CHECK_MSG(strstr(err, "not printable") != NULL, "%s", err);
}

/* Offsets where top-level fields end: prefixes cut there parse cleanly. */
static int field_boundaries(const unsigned char *buf, size_t len,
			    bool *boundary)
{
	pb_reader r = { buf, len, 0, 0, NULL, 0 };
	memset(boundary, 0, len + 1);
	boundary[0] = true;
	while (apx_pb_more(&r)) {
		uint32_t f;
		enum pb_wire wt;
		if (apx_pb_get_tag(&r, &f, &wt) || apx_pb_skip(&r, f, wt))
			return -1;
		boundary[r.pos] = true;
	}
	return 0;
}

static void every_prefix(bool gzip)
{
	ap_profile *p = make_full();
	AP_CHECK(p != NULL);
	unsigned char *buf;
	size_t len;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, gzip, NULL, &buf, &len), 0);
	bool *boundary = calloc(len + 1, 1);
	AP_CHECK(boundary != NULL);
	if (!gzip)
		AP_CHECK_EQ_INT(field_boundaries(buf, len, boundary), 0);
	size_t decoded_ok = 0;
	for (size_t n = 0; n < len; n++) {
		ap_profile *q = NULL;
		char err[200] = "";
		int rc = ap_pprof_decode(buf, n, NULL, &q, err, sizeof err);
		if (rc == 0) {
			/* Only a cut between whole top-level fields can parse
			 * (or the empty input, gzip or not), and it must have
			 * lost something. */
			AP_CHECK_MSG(n == 0 || (!gzip && boundary[n]),
				     "prefix %zu of %zu decoded", n, len);
			AP_CHECK(profiles_differ(p, q) != NULL);
			decoded_ok++;
			ap_profile_destroy(q);
			continue;
		}
		AP_CHECK_MSG(rc == AP_ECORRUPT, "prefix %zu: rc %d", n, rc);
		AP_CHECK_MSG(err[0] != '\0', "prefix %zu: no reason", n);
		AP_CHECK(q == NULL);
	}
	/* Cuts among the trailing top-level scalars (and late strings only
	 * they use) are clean; gzip has none but the empty input. */
	AP_CHECK(gzip ? decoded_ok == 1 : decoded_ok > 1);
	free(boundary);
	free_buf(buf, len);
	ap_profile_destroy(p);
}

AP_TEST(truncation_at_every_byte_plain)
{
	every_prefix(false);
}

AP_TEST(truncation_at_every_byte_gzip)
{
	every_prefix(true);
}

struct bad_case {
	const char *name;
	const unsigned char *bytes;
	size_t len;
	const char *reason; /* expected substring */
};

#define BAD(name, reason, ...)                                               \
	{ name, (const unsigned char[]){ __VA_ARGS__ },                      \
	  sizeof((const unsigned char[]){ __VA_ARGS__ }), reason }

static const struct bad_case bad_cases[] = {
	BAD("trunc_varint", "truncated varint at offset 1", 0x60, 0x80),
	BAD("long_varint", "varint", 0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0x01),
	BAD("varint_overflow", "overflows 64 bits", 0x60, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
	BAD("field_zero", "invalid field number 0", 0x00),
	BAD("wire_type_7", "invalid wire type 7", 0x0f),
	BAD("len_past_end", "runs past the end", 0x12, 0x05, 0x00),
	BAD("string0_nonempty", "string_table[0] must be empty", 0x32, 0x01,
	    'a'),
	BAD("string_nul", "contains a NUL byte", 0x32, 0x00, 0x32, 0x02, 'a',
	    0x00),
	BAD("mapping_id_zero", "mapping at offset 2 has id 0", 0x1a, 0x00),
	BAD("location_id_zero", "location at offset 2 has id 0", 0x22, 0x02,
	    0x18, 0x05),
	BAD("function_id_zero", "function at offset 2 has id 0", 0x2a, 0x00),
	BAD("dup_mapping", "duplicate mapping id 3", 0x1a, 0x02, 0x08, 0x03,
	    0x1a, 0x02, 0x08, 0x03),
	BAD("dup_location", "duplicate location id 1", 0x22, 0x02, 0x08, 0x01,
	    0x22, 0x02, 0x08, 0x01),
	BAD("loc_unknown_mapping", "location 7 references unknown mapping 3",
	    0x22, 0x04, 0x08, 0x07, 0x10, 0x03),
	BAD("loc_unknown_function", "location 7 references unknown function 9",
	    0x22, 0x06, 0x08, 0x07, 0x22, 0x02, 0x08, 0x09),
	BAD("sample_unknown_location", "sample 0 references unknown location 4",
	    0x12, 0x03, 0x0a, 0x01, 0x04),
	BAD("sample_value_count", "has 1 values, expected 0", 0x12, 0x02, 0x10,
	    0x01),
	BAD("string_index_range", "string index 4 out of range", 0x32, 0x00,
	    0x38, 0x04),
	BAD("negative_string_index", "out of range", 0x32, 0x00, 0x70, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	BAD("label_string_range", "label key: string index 2", 0x12, 0x04,
	    0x1a, 0x02, 0x08, 0x02),
	BAD("wrong_wire_type", "mapping id has wire type fixed32", 0x1a, 0x05,
	    0x0d, 0x01, 0x00, 0x00, 0x00),
	BAD("sample_type_not_msg", "sample_type has wire type varint", 0x08,
	    0x01),
	BAD("packed_bad_varint", "truncated varint", 0x12, 0x03, 0x0a, 0x01,
	    0x80),
	BAD("fixed64_truncated", "truncated 8-byte fixed field", 0xa9, 0x06,
	    1, 2, 3),
	BAD("end_group_alone", "unmatched end-group", 0xc4, 0x06),
	BAD("group_unclosed", "not closed", 0xc3, 0x06, 0x08, 0x01),
	BAD("group_mismatch", "closes group 104", 0xc3, 0x06, 0x14),
	BAD("gzip_garbage", "bad gzip data", 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x03, 0xff, 0xff, 0xff, 0xff),
	BAD("gzip_truncated_header", "truncated gzip", 0x1f, 0x8b, 0x08),
};

AP_TEST(corrupt_inputs_rejected_with_reason)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const struct bad_case *c = &bad_cases[i];
		ap_profile *q = (ap_profile *)1;
		char err[200] = "";
		maybe_write_corpus("pprof", c->name, c->bytes, c->len);
		int rc = ap_pprof_decode(c->bytes, c->len, NULL, &q, err,
					 sizeof err);
		AP_CHECK_MSG(rc == AP_ECORRUPT, "%s: rc %d", c->name, rc);
		AP_CHECK(q == NULL);
		AP_CHECK_MSG(strstr(err, c->reason) != NULL,
			     "%s: reason \"%s\" lacks \"%s\"", c->name, err,
			     c->reason);
	}
}

AP_TEST(deeply_nested_groups_rejected)
{
	/* 100 nested start-groups of field 104: deeper than the 64 allowed. */
	unsigned char buf[200];
	for (int i = 0; i < 100; i++)
		buf[2 * i] = 0xc3, buf[2 * i + 1] = 0x06;
	ap_profile *q;
	char err[200];
	AP_CHECK_EQ_INT(ap_pprof_decode(buf, sizeof buf, NULL, &q, err,
					sizeof err), AP_ECORRUPT);
	AP_CHECK(strstr(err, "nested deeper") != NULL);
}

AP_TEST(encode_rejects_invalid_profile)
{
	ap_profile *p;
	AP_CHECK_EQ_INT(ap_profile_create(NULL, &p), 0);
	p->keep_frames = 3;
	unsigned char *buf = (unsigned char *)1;
	size_t len = 1;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, false, NULL, &buf, &len), AP_EINVAL);
	AP_CHECK(buf == NULL && len == 0);
	AP_CHECK_EQ_INT(ap_pprof_encode(NULL, false, NULL, &buf, &len), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_pprof_decode(NULL, 3, NULL, &p, NULL, 0), AP_EINVAL);
	p->keep_frames = 0;
	ap_profile_destroy(p);
}

AP_TEST(duplicate_wire_strings_collapse)
{
	/* "", "x", "x": both indices 1 and 2 name "x". */
	static const unsigned char b[] = { 0x32, 0x00, 0x32, 0x01, 'x', 0x32,
					   0x01, 'x', 0x38, 0x02, 0x40, 0x01 };
	ap_profile *q;
	AP_CHECK_EQ_INT(ap_pprof_decode(b, sizeof b, NULL, &q, NULL, 0), 0);
	AP_CHECK_EQ_U64(q->nstrings, 2);
	AP_CHECK(strcmp(ap_profile_string(q, q->drop_frames), "x") == 0);
	AP_CHECK_EQ_INT(q->drop_frames, q->keep_frames);
	ap_profile_destroy(q);
}

static void failure_injection(bool gzip)
{
	ap_profile *p = make_full();
	AP_CHECK(p != NULL);
	unsigned char *buf;
	size_t len;
	AP_CHECK_EQ_INT(ap_pprof_encode(p, gzip, NULL, &buf, &len), 0);
	struct fail_alloc fa;
	long n;
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		ap_profile *q = NULL;
		char err[200] = "";
		int rc = ap_pprof_decode(buf, len, &a, &q, err, sizeof err);
		if (!fa.failed) {
			AP_CHECK_EQ_INT(rc, 0);
			AP_CHECK(profiles_differ(p, q) == NULL);
			/* Encode through the failing allocator as well. */
			unsigned char *out;
			size_t olen;
			for (long m = 0;; m++) {
				struct fail_alloc fb;
				ap_allocator b = fa_make(&fb, m);
				rc = ap_pprof_encode(q, gzip, &b, &out, &olen);
				if (!fb.failed) {
					AP_CHECK_EQ_INT(rc, 0);
					AP_CHECK(olen == len &&
						 memcmp(out, buf, len) == 0);
					b.free(b.ctx, out, olen + 1);
					AP_CHECK_EQ_INT(fb.live, 0);
					break;
				}
				AP_CHECK_MSG(rc == AP_ENOMEM, "encode fail at "
					     "%ld: %d", m, rc);
				AP_CHECK(out == NULL);
				AP_CHECK_EQ_INT(fb.live, 0);
			}
			ap_profile_destroy(q);
			AP_CHECK_EQ_INT(fa.live, 0);
			break;
		}
		AP_CHECK_MSG(rc == AP_ENOMEM, "fail at %ld: rc %d (%s)", n, rc,
			     err);
		AP_CHECK(q == NULL);
		AP_CHECK_MSG(fa.live == 0, "fail at %ld: %ld leaked", n,
			     fa.live);
	}
	AP_CHECK(n > 10);
	free_buf(buf, len);
	ap_profile_destroy(p);
}

AP_TEST(allocation_failure_decode_encode_plain)
{
	failure_injection(false);
}

AP_TEST(allocation_failure_decode_encode_gzip)
{
	failure_injection(true);
}

/* ---- integration helpers ---------------------------------------------- */

/*
 * The sample heap profile for pprof_tools_test.sh: symbolized, three
 * stacks under main with known unbiased values.
 */
static int write_sample_profile(const char *path)
{
	ap_profile *p;
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, 524288))
		return -1;
	const char *names[] = { "xmalloc", "parse_config", "load_index",
				"main" };
	uint64_t loc[4];
	ap_mapping m = { .memory_start = 0x400000, .memory_limit = 0x500000,
			 .filename = S(p, "/usr/bin/fmt_demo"),
			 .has_functions = true, .has_filenames = true,
			 .has_line_numbers = true };
	uint64_t mid;
	int rc = ap_profile_add_mapping(p, &m, &mid);
	for (int i = 0; i < 4 && !rc; i++) {
		uint64_t fid;
		ap_function f = { .name = S(p, names[i]),
				  .system_name = S(p, names[i]),
				  .filename = S(p, "demo.c") };
		rc = ap_profile_add_function(p, &f, &fid);
		ap_line ln = { .function_id = fid, .line = 10 * (i + 1) };
		ap_location l = { .mapping_id = mid,
				  .address = 0x401000u + 0x100u * i,
				  .lines = &ln, .nlines = 1 };
		if (!rc)
			rc = ap_profile_add_location(p, &l, &loc[i]);
	}
	/* parse_config: 2000 x 1 KiB allocated, 500 live;
	 * load_index: 10 x 1 MiB allocated and live. */
	uint64_t st1[] = { loc[0], loc[1], loc[3] };
	uint64_t st2[] = { loc[0], loc[2], loc[3] };
	int64_t v1[AP_HEAP_NVALUES] = { 2000, 2048000, 500, 512000 };
	int64_t v2[AP_HEAP_NVALUES] = { 10, 10485760, 10, 10485760 };
	ap_label l1 = { .key = S(p, "bytes"), .num = 1024,
			.num_unit = S(p, "bytes") };
	ap_label l2 = l1;
	l2.num = 1048576;
	if (!rc)
		rc = ap_profile_add_sample(p, st1, 3, v1, &l1, 1);
	if (!rc)
		rc = ap_profile_add_sample(p, st2, 3, v2, &l2, 1);
	unsigned char *buf = NULL;
	size_t len = 0;
	if (!rc)
		rc = ap_pprof_encode(p, true, NULL, &buf, &len);
	if (!rc)
		rc = write_bytes(path, buf, len);
	if (buf)
		free_buf(buf, len);
	ap_profile_destroy(p);
	return rc;
}

/* Print a summary of a pprof file: what the integration test compares. */
static int read_profile(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	static unsigned char data[64 << 20];
	size_t len = fread(data, 1, sizeof data, f);
	fclose(f);
	ap_profile *p;
	char err[200];
	if (ap_pprof_decode(data, len, NULL, &p, err, sizeof err)) {
		fprintf(stderr, "decode %s: %s\n", path, err);
		return -1;
	}
	int64_t sums[16] = { 0 };
	for (size_t i = 0; i < p->nsamples; i++)
		for (size_t j = 0; j < p->nsample_types && j < 16; j++)
			sums[j] += p->samples[i].values[j];
	printf("decoded samples=%zu functions=%zu", p->nsamples,
	       p->nfunctions);
	for (size_t j = 0; j < p->nsample_types && j < 16; j++)
		printf(" %s=%lld", ap_profile_string(p, p->sample_types[j].type),
		       (long long)sums[j]);
	printf("\n");
	ap_profile_destroy(p);
	return 0;
}

AP_TEST(integration_hooks)
{
	const char *w = getenv("AP_WRITE_SAMPLE_PROFILE");
	const char *r = getenv("AP_READ_PROFILE");
	if (w)
		AP_CHECK_EQ_INT(write_sample_profile(w), 0);
	if (r)
		AP_CHECK_EQ_INT(read_profile(r), 0);
}
