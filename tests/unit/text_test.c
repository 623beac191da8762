/*
 * text_test.c: the CLI's one UTF-8 validator and one byte formatter
 * (src/cli/text.c, cli_util.c, from the command's object library). Every
 * escaper judges a byte string by the same validator, so JSON and XML
 * output replace exactly the same bytes (XML also the two noncharacters it
 * forbids), and the two byte styles keep the exact strings the report,
 * diff and flame outputs have always printed.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli_util.h"
#include "text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptest.h"

static char *capture(int which, const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	if (which == 0)
		txt_json_escape(f, s);
	else
		txt_xml_escape(f, s, 0);
	fclose(f);
	return buf;
}

AP_TEST(utf8_validator_accepts_well_formed_and_rejects_the_rest)
{
	static const struct {
		const char *s;
		size_t len;
		uint32_t cp;
	} cases[] = {
		{"a", 1, 'a'},
		{"\xc3\xa9", 2, 0xe9},
		{"\xe2\x82\xac", 3, 0x20ac},
		{"\xf0\x9f\x98\x80", 4, 0x1f600},
		{"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
		{"\xef\xbf\xbe", 3, 0xfffe},    /* a noncharacter, still UTF-8 */
		{"\xc0\xaf", 0, 0},             /* overlong '/' */
		{"\xe0\x80\xaf", 0, 0},         /* overlong, 3 bytes */
		{"\xed\xa0\x80", 0, 0},         /* surrogate U+D800 */
		{"\xf4\x90\x80\x80", 0, 0},     /* beyond U+10FFFF */
		{"\xf8\x88\x80\x80\x80", 0, 0}, /* 5-byte form */
		{"\x80", 0, 0},                 /* lone continuation */
		{"\xe2\x82", 0, 0},             /* truncated by the NUL */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint32_t cp = 0;
		size_t n = txt_utf8_len((const unsigned char *)cases[i].s, &cp);
		AP_CHECK_MSG(n == cases[i].len, "case %zu: length %zu", i, n);
		if (n)
			AP_CHECK_MSG(cp == cases[i].cp, "case %zu: U+%04X", i,
				     (unsigned)cp);
	}
}

AP_TEST(json_and_xml_replace_the_same_invalid_bytes)
{
	/* One bad byte in the middle of good text: one replacement each. */
	char *j = capture(0, "a\xff" "b\xc3\xa9");
	char *x = capture(1, "a\xff" "b\xc3\xa9");
	AP_CHECK(j && !strcmp(j, "\"a\\ufffdb\xc3\xa9\""));
	AP_CHECK(x && !strcmp(x, "a\xef\xbf\xbd" "b\xc3\xa9"));
	free(j);
	free(x);
	/* U+FFFE is kept in JSON; XML 1.0 forbids it, so each of its bytes
	 * becomes U+FFFD there, and counts as one character. */
	j = capture(0, "\xef\xbf\xbe");
	x = capture(1, "\xef\xbf\xbe");
	AP_CHECK(j && !strcmp(j, "\"\xef\xbf\xbe\""));
	AP_CHECK(x && !strcmp(x, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
	AP_CHECK_EQ_U64(txt_xml_chars("\xef\xbf\xbe"), 3);
	AP_CHECK_EQ_U64(txt_xml_chars("a\xc3\xa9"), 2);
	free(j);
	free(x);
}

AP_TEST(byte_styles_keep_their_formats)
{
	static const struct {
		double b;
		ap_bytes_style st;
		const char *want;
	} cases[] = {
		{1023, AP_BYTES_FIXED, "1023 B"},
		{1024, AP_BYTES_FIXED, "1.00 KiB"},
		{-1536, AP_BYTES_FIXED, "-1.50 KiB"},
		{(double)INFINITY, AP_BYTES_FIXED, "inf"},
		{10239, AP_BYTES_SHORT, "10239 B"},
		{10240, AP_BYTES_SHORT, "10.0 KiB"},
		{5.5 * 1024 * 1024, AP_BYTES_SHORT, "5.50 MiB"},
		{123.4 * 1024 * 1024 * 1024, AP_BYTES_SHORT, "123 GiB"},
		{(double)NAN, AP_BYTES_SHORT, "?"},
		/* the short style's largest unit is PiB, the fixed one's EiB */
		{2048.0 * 1024 * 1024 * 1024 * 1024 * 1024, AP_BYTES_SHORT,
		 "2048 PiB"},
		{2048.0 * 1024 * 1024 * 1024 * 1024 * 1024, AP_BYTES_FIXED,
		 "2.00 EiB"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[32];
		ap_cli_format_bytes(cases[i].b, cases[i].st, buf, sizeof buf);
		AP_CHECK_MSG(!strcmp(buf, cases[i].want), "case %zu: '%s', want '%s'",
			     i, buf, cases[i].want);
	}
}
