/*
 * codec_test.c: gzip and base64 (allocprof/codec.h): round trips, RFC 4648
 * vectors, truncation at every byte, corrupt data, the decompression bound,
 * concatenated members, and allocation failure at every point (zlib's own
 * allocations go through the same allocator).
 */
#include "aptest.h"
#include "fmt_testutil.h"

#include "allocprof/codec.h"

#include <string.h>

static void lfree(void *p, size_t n)
{
	ap_allocator_libc()->free(NULL, p, n);
}

/* Deterministic pseudo-random bytes (xorshift), half-compressible. */
static void fill(unsigned char *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		b[i] = (i / 64) % 2 ? (unsigned char)seed : (unsigned char)(i & 7);
	}
}

AP_TEST(gzip_round_trip_sizes)
{
	/* 511-513 and 32767-32769: either side of the smallest window and
	 * of the largest, which ap_gzip_compress sizes to the input. */
	static const size_t sizes[] = { 0, 1, 2, 100, 511, 512, 513, 32767,
					32768, 32769, 65536, 1 << 20 };
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		unsigned char *in = malloc(n + 1);
		AP_CHECK(in != NULL);
		fill(in, n, 42 + k);
		unsigned char *z, *back;
		size_t zlen, blen;
		AP_CHECK_EQ_INT(ap_gzip_compress(in, n, -1, NULL, &z, &zlen), 0);
		/* RFC 1952 header: magic, method 8 (deflate). */
		AP_CHECK(zlen >= 18 && z[0] == 0x1f && z[1] == 0x8b && z[2] == 8);
		AP_CHECK(ap_gzip_detect(z, zlen));
		AP_CHECK_EQ_INT(ap_gzip_decompress(z, zlen, 0, NULL, &back,
						   &blen, NULL, 0), 0);
		AP_CHECK_EQ_U64(blen, n);
		AP_CHECK(n == 0 || memcmp(in, back, n) == 0);
		AP_CHECK(back[blen] == 0);
		lfree(z, zlen + 1);
		lfree(back, blen + 1);
		free(in);
	}
}

AP_TEST(gzip_rejects_bad_arguments)
{
	unsigned char *z = (unsigned char *)1;
	size_t zlen;
	AP_CHECK_EQ_INT(ap_gzip_compress("x", 1, 10, NULL, &z, &zlen), AP_EINVAL);
	AP_CHECK_EQ_INT(ap_gzip_compress(NULL, 1, 1, NULL, &z, &zlen), AP_EINVAL);
	char err[120];
	AP_CHECK_EQ_INT(ap_gzip_decompress("abc", 3, 0, NULL, &z, &zlen, err,
					   sizeof err), AP_ECORRUPT);
	AP_CHECK(strstr(err, "not gzip") != NULL);
	AP_CHECK(!ap_gzip_detect("\x1f", 1));
	AP_CHECK(!ap_gzip_detect(NULL, 0));
}

AP_TEST(gzip_truncation_at_every_byte)
{
	unsigned char in[3000];
	fill(in, sizeof in, 7);
	unsigned char *z, *back;
	size_t zlen, blen;
	AP_CHECK_EQ_INT(ap_gzip_compress(in, sizeof in, 9, NULL, &z, &zlen), 0);
	for (size_t n = 0; n < zlen; n++) {
		char err[120] = "";
		int rc = ap_gzip_decompress(z, n, 0, NULL, &back, &blen, err,
					    sizeof err);
		AP_CHECK_MSG(rc == AP_ECORRUPT, "prefix %zu: %d", n, rc);
		AP_CHECK_MSG(err[0] != '\0', "prefix %zu: no reason", n);
		AP_CHECK(back == NULL);
	}
	lfree(z, zlen + 1);
}

AP_TEST(gzip_detects_corruption_and_trailing_garbage)
{
	unsigned char in[500];
	fill(in, sizeof in, 9);
	unsigned char *z, *back;
	size_t zlen, blen;
	char err[120];
	AP_CHECK_EQ_INT(ap_gzip_compress(in, sizeof in, 6, NULL, &z, &zlen), 0);
	/* Flip a bit of the CRC32 in the 8-byte trailer. */
	z[zlen - 6] ^= 1;
	AP_CHECK_EQ_INT(ap_gzip_decompress(z, zlen, 0, NULL, &back, &blen, err,
					   sizeof err), AP_ECORRUPT);
	AP_CHECK(strstr(err, "bad gzip data") != NULL);
	z[zlen - 6] ^= 1;
	unsigned char *g = malloc(zlen + 3);
	AP_CHECK(g != NULL);
	memcpy(g, z, zlen);
	memcpy(g + zlen, "xyz", 3);
	AP_CHECK_EQ_INT(ap_gzip_decompress(g, zlen + 3, 0, NULL, &back, &blen,
					   err, sizeof err), AP_ECORRUPT);
	AP_CHECK(strstr(err, "3 bytes of trailing garbage") != NULL);
	free(g);
	lfree(z, zlen + 1);
}

AP_TEST(gzip_concatenated_members)
{
	unsigned char *a, *b, *back;
	size_t alen, blen, n;
	AP_CHECK_EQ_INT(ap_gzip_compress("hello ", 6, 6, NULL, &a, &alen), 0);
	AP_CHECK_EQ_INT(ap_gzip_compress("world", 5, 1, NULL, &b, &blen), 0);
	unsigned char *cat = malloc(alen + blen);
	AP_CHECK(cat != NULL);
	memcpy(cat, a, alen);
	memcpy(cat + alen, b, blen);
	AP_CHECK_EQ_INT(ap_gzip_decompress(cat, alen + blen, 0, NULL, &back, &n,
					   NULL, 0), 0);
	AP_CHECK_EQ_U64(n, 11);
	AP_CHECK(memcmp(back, "hello world", 11) == 0);
	lfree(back, n + 1);
	free(cat);
	lfree(a, alen + 1);
	lfree(b, blen + 1);
}

AP_TEST(gzip_bomb_bounded)
{
	/* 8 MiB of zeros deflate to ~8 KiB: the bound stops it early. */
	size_t n = 8u << 20;
	unsigned char *zeros = calloc(n, 1);
	AP_CHECK(zeros != NULL);
	unsigned char *z, *back;
	size_t zlen, blen;
	char err[120];
	AP_CHECK_EQ_INT(ap_gzip_compress(zeros, n, 9, NULL, &z, &zlen), 0);
	free(zeros);
	AP_CHECK(zlen < 65536);
	AP_CHECK_EQ_INT(ap_gzip_decompress(z, zlen, 1 << 20, NULL, &back, &blen,
					   err, sizeof err), AP_ERANGE);
	AP_CHECK(strstr(err, "more than 1048576 bytes") != NULL);
	AP_CHECK(back == NULL);
	/* A bound of exactly the size is enough. */
	AP_CHECK_EQ_INT(ap_gzip_decompress(z, zlen, n, NULL, &back, &blen, NULL,
					   0), 0);
	AP_CHECK_EQ_U64(blen, n);
	lfree(back, blen + 1);
	AP_CHECK_EQ_INT(ap_gzip_decompress(z, zlen, n - 1, NULL, &back, &blen,
					   NULL, 0), AP_ERANGE);
	lfree(z, zlen + 1);
}

AP_TEST(gzip_allocation_failure_at_every_point)
{
	unsigned char in[20000];
	fill(in, sizeof in, 3);
	unsigned char *z = NULL, *back;
	size_t zlen = 0, blen;
	struct fail_alloc fa;
	long n;
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		int rc = ap_gzip_compress(in, sizeof in, 6, &a, &z, &zlen);
		if (!fa.failed) {
			AP_CHECK_EQ_INT(rc, 0);
			break;
		}
		AP_CHECK_EQ_INT(rc, AP_ENOMEM);
		AP_CHECK_EQ_INT(fa.live, 0);
	}
	AP_CHECK(n > 1);
	for (n = 0;; n++) {
		ap_allocator a = fa_make(&fa, n);
		int rc = ap_gzip_decompress(z, zlen, 0, &a, &back, &blen, NULL, 0);
		if (!fa.failed) {
			AP_CHECK_EQ_INT(rc, 0);
			AP_CHECK(blen == sizeof in && !memcmp(back, in, blen));
			a.free(a.ctx, back, blen + 1);
			AP_CHECK_EQ_INT(fa.live, 0);
			break;
		}
		AP_CHECK_EQ_INT(rc, AP_ENOMEM);
		AP_CHECK_EQ_INT(fa.live, 0);
	}
	AP_CHECK(n > 1);
	free(z);
}

/*
 * The runtime compresses its profile at exit, when the program may be at
 * its peak, so zlib's state is sized to the input: (4 << wbits) bytes of
 * window and hash chains with the window just covering the input (512 B
 * to 32 KiB), plus 2 x 16 KiB of hash heads and pending output at
 * memLevel 6, plus zlib's deflate_state (under 6 KiB) and the output
 * buffer (deflateBound: the input plus under 1%). zlib's defaults
 * (32 KiB window, memLevel 8) take 256 KiB whatever the input, and the
 * output buffer used to be rounded up to a power of two: 4 KB peaked at
 * 266 KiB, 40 KB at about 326 KiB.
 * Bounds: 4000 B -> 16 + 32 + 6 + 4 = 58 KiB, checked against 64 KiB;
 * 40000 B -> 128 + 32 + 6 + 40 = 206 KiB, checked against 224 KiB.
 */
AP_TEST(gzip_state_is_sized_to_the_input)
{
	static const size_t sizes[] = { 4000, 40000 };
	static const size_t bound[] = { 64 << 10, 224 << 10 };
	for (size_t k = 0; k < 2; k++) {
		unsigned char *in = malloc(sizes[k]);
		AP_CHECK(in != NULL);
		fill(in, sizes[k], 7 + k);
		struct peak_alloc c;
		ap_allocator a = pa_make(&c);
		unsigned char *z;
		size_t zlen;
		AP_CHECK_EQ_INT(ap_gzip_compress(in, sizes[k], 6, &a, &z, &zlen), 0);
		AP_CHECK(c.peak > sizes[k]); /* the count saw the state */
		AP_CHECK(c.peak <= bound[k]);
		a.free(a.ctx, z, zlen + 1);
		AP_CHECK_EQ_U64(c.live, 0);
		free(in);
	}
}

static const char *const rfc4648[][2] = {
	{ "", "" },	    { "f", "Zg==" },	  { "fo", "Zm8=" },
	{ "foo", "Zm9v" }, { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

AP_TEST(base64_rfc4648_vectors)
{
	for (size_t i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
		const char *plain = rfc4648[i][0], *enc = rfc4648[i][1];
		char *e;
		unsigned char *d;
		size_t elen, dlen;
		AP_CHECK_EQ_INT(ap_base64_encode(plain, strlen(plain), NULL, &e,
						 &elen), 0);
		AP_CHECK_MSG(strcmp(e, enc) == 0, "%s -> %s", plain, e);
		AP_CHECK_EQ_U64(elen, ap_base64_encoded_len(strlen(plain)));
		AP_CHECK_EQ_INT(ap_base64_decode(enc, strlen(enc), NULL, &d,
						 &dlen), 0);
		AP_CHECK(dlen == strlen(plain) && !memcmp(d, plain, dlen));
		lfree(d, dlen + 1);
		/* The same without padding. */
		size_t unpadded = strcspn(enc, "=");
		AP_CHECK_EQ_INT(ap_base64_decode(enc, unpadded, NULL, &d, &dlen), 0);
		AP_CHECK(dlen == strlen(plain) && !memcmp(d, plain, dlen));
		lfree(d, dlen + 1);
		lfree(e, elen + 1);
	}
}

AP_TEST(base64_all_bytes_round_trip)
{
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	for (size_t n = 0; n <= 256; n += 1 + n / 3) {
		char *e;
		unsigned char *d;
		size_t elen, dlen;
		AP_CHECK_EQ_INT(ap_base64_encode(all, n, NULL, &e, &elen), 0);
		AP_CHECK_EQ_INT(ap_base64_decode(e, elen, NULL, &d, &dlen), 0);
		AP_CHECK(dlen == n && !memcmp(d, all, n));
		lfree(d, dlen + 1);
		lfree(e, elen + 1);
	}
}

AP_TEST(base64_rejects_malformed)
{
	static const char *const bad[] = {
		"Z",	    /* one symbol carries no whole byte */
		"Zm9vY",    /* same after a full quad */
		"Zg=",	    /* partial padding */
		"Zg===",    /* too much padding */
		"====",     /* padding only */
		"Zm 9v",    /* whitespace */
		"Zm9v\n",   /* newline */
		"Zm-v",     /* URL alphabet */
		"Zh==",     /* non-zero leftover bits */
		"Zm9=",     /* non-zero leftover bits */
		"Zg==Zg==", /* padding in the middle */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		unsigned char *d = (unsigned char *)1;
		size_t dlen;
		int rc = ap_base64_decode(bad[i], strlen(bad[i]), NULL, &d, &dlen);
		AP_CHECK_MSG(rc == AP_ECORRUPT, "\"%s\": %d", bad[i], rc);
		AP_CHECK(d == NULL);
	}
	AP_CHECK_EQ_INT(ap_base64_decode(NULL, 1, NULL, NULL, NULL), AP_EINVAL);
	AP_CHECK_EQ_U64(ap_base64_encoded_len(SIZE_MAX), 0);
}

AP_TEST(base64_allocation_failure)
{
	struct fail_alloc fa;
	ap_allocator a = fa_make(&fa, 0);
	char *e = (char *)1;
	unsigned char *d = (unsigned char *)1;
	size_t n;
	AP_CHECK_EQ_INT(ap_base64_encode("abc", 3, &a, &e, &n), AP_ENOMEM);
	AP_CHECK(e == NULL);
	a = fa_make(&fa, 0);
	AP_CHECK_EQ_INT(ap_base64_decode("YWJj", 4, &a, &d, &n), AP_ENOMEM);
	AP_CHECK(d == NULL);
	AP_CHECK_EQ_INT(fa.live, 0);
}

AP_TEST(gzip_input_passes_plain_and_inflates_gzip)
{
	const unsigned char *data;
	size_t dlen, plen;
	unsigned char *plain, *z;
	size_t zlen;
	char err[120];
	AP_CHECK_EQ_INT(ap_gzip_input((const unsigned char *)"abc", 3, 3, NULL,
				      &data, &dlen, &plain, &plen, err,
				      sizeof err), 0);
	AP_CHECK(plain == NULL && dlen == 3 && memcmp(data, "abc", 3) == 0);
	AP_CHECK_EQ_INT(ap_gzip_input((const unsigned char *)"abcd", 4, 3, NULL,
				      &data, &dlen, &plain, &plen, err,
				      sizeof err), AP_ERANGE);
	AP_CHECK(strstr(err, "4 bytes exceeds the 3-byte limit") != NULL);
	AP_CHECK_EQ_INT(ap_gzip_compress("hello", 5, 6, NULL, &z, &zlen), 0);
	AP_CHECK_EQ_INT(ap_gzip_input(z, zlen, 5, NULL, &data, &dlen, &plain,
				      &plen, err, sizeof err), 0);
	AP_CHECK(data == plain && dlen == 5 && memcmp(data, "hello", 5) == 0);
	lfree(plain, plen + 1);
	AP_CHECK_EQ_INT(ap_gzip_input(z, zlen, 4, NULL, &data, &dlen, &plain,
				      &plen, err, sizeof err), AP_ERANGE);
	AP_CHECK(plain == NULL);
	lfree(z, zlen + 1);
}
