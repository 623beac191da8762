/*
 * flamegraph_test.c: the stack tree and SVG writer of allocprof flame.
 *
 * Links the command's object library (allocprof_cli_obj). Well-formedness
 * under a real XML parser is checked end to end by
 * tests/integration/flame_*_test.sh (xmllint); here we check sums, layout,
 * escaping, hooks and determinism.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli_util.h"
#include "flamegraph.h"
#include "text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptest.h"

/* A payload the tests sum: bytes and a variance, interval = +-2 sd. */
struct pay {
	double bytes, var;
};

static void pay_add(void *into, const void *from)
{
	struct pay *a = into;
	const struct pay *b = from;
	a->bytes += b->bytes;
	a->var += b->var;
}

static int pay_interval(void *ctx, const void *payload, double *lo, double *hi)
{
	const struct pay *p = payload;
	int *calls = ctx;
	(*calls)++;
	*lo = p->bytes - 2 * sqrt(p->var);
	*hi = p->bytes + 2 * sqrt(p->var);
	return 0;
}

/* Render g into a malloc'd string. */
static char *render(const ap_fg *g, const ap_fg_options *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = ap_fg_write_svg(g, o, f);
	fclose(f);
	if (rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static int add3(ap_fg *g, const char *a, const char *b, const char *c,
		double bytes)
{
	const char *fr[3] = {a, b, c};
	size_t n = c ? 3 : b ? 2 : 1;
	return ap_fg_add(g, fr, n, bytes, 1, NULL);
}

AP_TEST(sums_flow_to_every_ancestor)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	AP_CHECK_EQ_INT(add3(g, "main", "parse", "xmalloc", 100), 0);
	AP_CHECK_EQ_INT(add3(g, "main", "parse", "strdup", 50), 0);
	AP_CHECK_EQ_INT(add3(g, "main", "parse", "xmalloc", 25), 0);
	AP_CHECK_EQ_INT(add3(g, "main", "load", NULL, 10), 0);
	AP_CHECK_NEAR(ap_fg_total(g), 185, 0, 0);
	/* all, main, parse, xmalloc, strdup, load */
	AP_CHECK_EQ_U64(ap_fg_nframes(g), 6);
	ap_fg_destroy(g);
}

AP_TEST(same_name_under_different_parents_is_two_frames)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	AP_CHECK_EQ_INT(add3(g, "main", "a", "xmalloc", 1), 0);
	AP_CHECK_EQ_INT(add3(g, "main", "b", "xmalloc", 1), 0);
	AP_CHECK_EQ_U64(ap_fg_nframes(g), 6);
	ap_fg_destroy(g);
}

AP_TEST(bad_values_are_rejected_and_leave_sums_alone)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	const char *fr[] = {"main"};
	errno = 0;
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 1, -1, 1, NULL), -1);
	AP_CHECK_EQ_INT(errno, EINVAL);
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 1, (double)NAN, 1, NULL), -1);
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 1, (double)INFINITY, 1, NULL), -1);
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 1, 5, (double)NAN, NULL), -1);
	AP_CHECK_EQ_INT(ap_fg_add(g, NULL, 2, 5, 1, NULL), -1);
	AP_CHECK_NEAR(ap_fg_total(g), 0, 0, 0);
	AP_CHECK_EQ_U64(ap_fg_nframes(g), 1);
	/* A graph with a payload needs one per stack. */
	ap_fg *gp = ap_fg_create(sizeof(struct pay), pay_add);
	AP_CHECK(gp);
	AP_CHECK_EQ_INT(ap_fg_add(gp, fr, 1, 5, 1, NULL), -1);
	ap_fg_destroy(gp);
	/* A payload without an add function is a usage error. */
	AP_CHECK(ap_fg_create(8, NULL) == NULL);
	ap_fg_destroy(g);
}

AP_TEST(empty_and_null_names_become_unknown)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	const char *fr[] = {NULL, ""};
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 2, 7, 1, NULL), 0);
	char *svg = render(g, NULL);
	AP_CHECK(svg);
	AP_CHECK_EQ_U64(count(svg, "data-n=\"[unknown]\""), 2);
	free(svg);
	ap_fg_destroy(g);
}

static char *escape_to_string(const char *s, size_t max)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	txt_xml_escape(f, s, max);
	fclose(f);
	return buf;
}

AP_TEST(escaping_neutralises_markup_quotes_and_bad_bytes)
{
	char *e = escape_to_string("a<b>&\"c'd", 0);
	AP_CHECK(e);
	AP_CHECK_MSG(!strcmp(e, "a&lt;b&gt;&amp;&quot;c&apos;d"), "got %s", e);
	free(e);
	/* Invalid UTF-8 (lone continuation, truncated sequence, overlong
	 * encoding of '/', a surrogate) and control characters become U+FFFD,
	 * one per byte that cannot start a valid sequence. */
	e = escape_to_string("x\x80y\xe2\x82z\xc0\xafw\xed\xa0\x80v\x01\x7f", 0);
	AP_CHECK(e);
	AP_CHECK_MSG(!strcmp(e, "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbdz\xef\xbf\xbd\xef"
				"\xbf\xbdw\xef\xbf\xbd\xef\xbf\xbd\xef\xbf"
				"\xbdv\xef\xbf\xbd\x7f"),
		     "got %s", e);
	free(e);
	/* Valid multi-byte characters pass through and count as one each. */
	e = escape_to_string("\xc3\xa9t\xc3\xa9\xf0\x9f\x94\xa5", 3);
	AP_CHECK(e);
	AP_CHECK_MSG(!strcmp(e, "\xc3\xa9t\xc3\xa9.."), "got %s", e);
	free(e);
	e = escape_to_string("line\nbreak\ttab", 0);
	AP_CHECK(e);
	AP_CHECK_MSG(!strcmp(e, "line&#10;break&#9;tab"), "got %s", e);
	free(e);
}

AP_TEST(hostile_names_never_reach_the_document_raw)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	const char *hostile = "evil<script>alert(\"x\")</script>&]]>'";
	AP_CHECK_EQ_INT(add3(g, "main", hostile, NULL, 1000), 0);
	char *svg = render(g, &(ap_fg_options){.title = "t<&>\"'"});
	AP_CHECK(svg);
	AP_CHECK(!strstr(svg, "evil<"));
	AP_CHECK(!strstr(svg, "t<&"));
	/* The only CDATA terminators are the two we wrote. */
	AP_CHECK_EQ_U64(count(svg, "]]>"), 2);
	AP_CHECK(strstr(svg, "evil&lt;script&gt;alert(&quot;x&quot;)&lt;/script"
			     "&gt;&amp;]]&gt;&apos;"));
	AP_CHECK(strstr(svg, "t&lt;&amp;&gt;&quot;&apos;"));
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(layout_is_deterministic_whatever_the_insertion_order)
{
	ap_fg *g1 = ap_fg_create(0, NULL), *g2 = ap_fg_create(0, NULL);
	AP_CHECK(g1 && g2);
	AP_CHECK_EQ_INT(add3(g1, "main", "zeta", "leaf", 30), 0);
	AP_CHECK_EQ_INT(add3(g1, "main", "alpha", "leaf", 20), 0);
	AP_CHECK_EQ_INT(add3(g1, "init", NULL, NULL, 50), 0);
	AP_CHECK_EQ_INT(add3(g2, "init", NULL, NULL, 50), 0);
	AP_CHECK_EQ_INT(add3(g2, "main", "alpha", "leaf", 20), 0);
	AP_CHECK_EQ_INT(add3(g2, "main", "zeta", "leaf", 30), 0);
	char *s1 = render(g1, NULL), *s2 = render(g2, NULL);
	AP_CHECK(s1 && s2);
	AP_CHECK(!strcmp(s1, s2));
	/* Children in name order: alpha left of zeta, init left of main. */
	const char *a = strstr(s1, "data-n=\"alpha\""),
		   *z = strstr(s1, "data-n=\"zeta\"");
	AP_CHECK(a && z && a < z);
	AP_CHECK(strstr(s1, "data-x=\"0.5\" data-w=\"0.2\" data-b=\"20\" "
			    "data-n=\"alpha\""));
	AP_CHECK(strstr(s1, "data-x=\"0.7\" data-w=\"0.3\" data-b=\"30\" "
			    "data-n=\"zeta\""));
	AP_CHECK(strstr(s1, "data-p=\"-1\" data-x=\"0\" data-w=\"1\" "
			    "data-b=\"100\" data-n=\"all\""));
	free(s1);
	free(s2);
	ap_fg_destroy(g1);
	ap_fg_destroy(g2);
}

AP_TEST(parents_are_emitted_before_children)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	AP_CHECK_EQ_INT(add3(g, "main", "b", "c", 5), 0);
	AP_CHECK_EQ_INT(add3(g, "main", "a", NULL, 5), 0);
	char *svg = render(g, NULL);
	AP_CHECK(svg);
	int idx = 0;
	for (const char *p = svg; (p = strstr(p, "<g class=\"f\" data-p=\""));
	     idx++) {
		p += strlen("<g class=\"f\" data-p=\"");
		int parent = atoi(p);
		AP_CHECK_MSG(parent < idx, "frame %d has parent %d", idx, parent);
		AP_CHECK(idx == 0 || parent >= 0);
	}
	AP_CHECK_EQ_INT(idx, 5);
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(colours_depend_only_on_the_name)
{
	char c1[32], c2[32], c3[32];
	ap_fg_name_colour("parse", c1, sizeof c1);
	ap_fg_name_colour("parse", c2, sizeof c2);
	ap_fg_name_colour("render", c3, sizeof c3);
	AP_CHECK(!strcmp(c1, c2));
	AP_CHECK(strcmp(c1, c3));
	unsigned r, g, b;
	AP_CHECK_EQ_INT(sscanf(c1, "rgb(%u,%u,%u)", &r, &g, &b), 3);
	AP_CHECK(r >= 205 && r <= 255 && g <= 230 && b <= 75);
}

AP_TEST(frames_narrower_than_the_minimum_are_omitted_with_their_subtree)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	AP_CHECK_EQ_INT(add3(g, "main", "big", NULL, 1e9), 0);
	AP_CHECK_EQ_INT(add3(g, "main", "tiny", "tinier", 1), 0);
	char *svg = render(g, NULL);
	AP_CHECK(svg);
	AP_CHECK(strstr(svg, "data-n=\"big\""));
	AP_CHECK(!strstr(svg, "data-n=\"tiny\""));
	AP_CHECK(!strstr(svg, "data-n=\"tinier\""));
	free(svg);
	svg = render(g, &(ap_fg_options){.min_width = -1});
	AP_CHECK(svg);
	AP_CHECK(strstr(svg, "data-n=\"tinier\""));
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(tooltips_carry_bytes_share_interval_and_samples)
{
	int calls = 0;
	ap_fg *g = ap_fg_create(sizeof(struct pay), pay_add);
	AP_CHECK(g);
	const char *fr[] = {"main", "parse"};
	struct pay p = {3072, 256 * 256};
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 2, 3072, 2, &p), 0);
	AP_CHECK_EQ_INT(ap_fg_add(g, fr, 1, 1024, 1, &p), 0);
	ap_fg_options o = {.interval = pay_interval, .ctx = &calls,
			   .level = 0.95, .unit_label = "allocated"};
	char *svg = render(g, &o);
	AP_CHECK(svg);
	/* Three frames, two computations: "main" carries exactly the root's
	 * payload (every stack passes through it) and reuses its interval. */
	AP_CHECK_EQ_INT(calls, 2);
	/* parse: its own payload; main: both payloads summed (6144 +- 2 * 362,
	 * the payload is the callback's business, independent of the width). */
	AP_CHECK_MSG(strstr(svg, "<title>parse&#10;3.00 KiB allocated (3072 B),"
				 " 75.00% of the total&#10;95% interval "
				 "[2.50 KiB, 3.50 KiB]&#10;2 samples</title>"),
		     "%s", svg);
	AP_CHECK(strstr(svg, "<title>main&#10;4.00 KiB allocated (4096 B), "
			     "100.00% of the total&#10;95% interval [5.29 KiB,"
			     " 6.71 KiB]&#10;3 samples</title>"));
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(an_empty_graph_is_still_a_document)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	char *svg = render(g, NULL);
	AP_CHECK(svg);
	AP_CHECK(!strncmp(svg, "<?xml", 5));
	AP_CHECK(strstr(svg, "</svg>\n"));
	AP_CHECK_EQ_U64(count(svg, "<g class=\"f\""), 1);
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(script_is_embedded_and_its_hint_matches_the_details_line)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	AP_CHECK_EQ_INT(add3(g, "main", NULL, NULL, 1), 0);
	char *svg = render(g, NULL);
	AP_CHECK(svg);
	/* flamegraph.js is embedded without its leading // description. */
	const char *script = strstr(svg, "<script type=\"text/ecmascript\"><![CDATA[\n");
	AP_CHECK(script);
	AP_CHECK(script && !strncmp(strchr(script, '\n') + 1, "(function () {\n", 15));
	AP_CHECK(!strstr(svg, "// flamegraph.js"));
	/* The hint the C side writes into #details is the script's HINT. */
	const char *d = strstr(svg, "<text id=\"details\"");
	AP_CHECK(d);
	if (d) {
		d = strchr(d, '>') + 1;
		const char *end = strstr(d, "</text>");
		char want[256];
		snprintf(want, sizeof want, "var HINT = '%.*s';\n", (int)(end - d), d);
		AP_CHECK_MSG(end - d > 10 && strstr(svg, want), "%s", want);
	}
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(labels_are_truncated_to_fit_their_frame)
{
	ap_fg *g = ap_fg_create(0, NULL);
	AP_CHECK(g);
	/* At 1200 px, 1 % of the width is 11.8 px: too narrow for a label. */
	AP_CHECK_EQ_INT(add3(g, "a_rather_long_function_name", NULL, NULL, 1), 0);
	AP_CHECK_EQ_INT(add3(g, "wide", NULL, NULL, 99), 0);
	char *svg = render(g, NULL);
	AP_CHECK(svg);
	const char *p = strstr(svg, "data-n=\"a_rather_long_function_name\"");
	AP_CHECK(p);
	p = strstr(p, "<text");
	AP_CHECK(p);
	AP_CHECK(!strncmp(strchr(p, '>'), "></text>", 8));
	free(svg);
	ap_fg_destroy(g);
}

AP_TEST(bytes_are_formatted_for_people)
{
	char b[32];
	ap_cli_format_bytes(0, AP_BYTES_FIXED, b, sizeof b);
	AP_CHECK(!strcmp(b, "0 B"));
	ap_cli_format_bytes(1023, AP_BYTES_FIXED, b, sizeof b);
	AP_CHECK(!strcmp(b, "1023 B"));
	ap_cli_format_bytes(1536, AP_BYTES_FIXED, b, sizeof b);
	AP_CHECK(!strcmp(b, "1.50 KiB"));
	ap_cli_format_bytes(-3.0 * 1024 * 1024, AP_BYTES_FIXED, b, sizeof b);
	AP_CHECK(!strcmp(b, "-3.00 MiB"));
	ap_cli_format_bytes((double)NAN, AP_BYTES_FIXED, b, sizeof b);
	AP_CHECK(!strcmp(b, "n/a"));
	ap_cli_format_bytes(1e30, AP_BYTES_FIXED, b, sizeof b);
	AP_CHECK_MSG(strstr(b, "EiB"), "%s", b);
}

static int red_if_big(void *ctx, const void *payload, char *buf, size_t n)
{
	const struct pay *p = payload;
	if (p->bytes < 1000)
		return 1; /* default colour */
	/* A hostile colour must not escape its attribute. */
	snprintf(buf, n, "rgb(255,0,0)\"><script>");
	return 0;
}

static int note_bytes(void *ctx, const void *payload, char *buf, size_t n)
{
	const struct pay *p = payload;
	snprintf(buf, n, "payload %.0f <&>\nsecond line", p->bytes);
	return 0;
}

AP_TEST(colour_and_note_hooks_decide_fill_and_extra_lines)
{
	ap_fg *g = ap_fg_create(sizeof(struct pay), pay_add);
	AP_CHECK(g);
	const char *big[] = {"main", "big"}, *small[] = {"main", "small"};
	struct pay pb = {5000, 0}, ps = {10, 0};
	AP_CHECK_EQ_INT(ap_fg_add(g, big, 2, 5000, 1, &pb), 0);
	AP_CHECK_EQ_INT(ap_fg_add(g, small, 2, 10, 1, &ps), 0);
	ap_fg_options o = {.colour = red_if_big, .note = note_bytes,
			   .min_width = -1};
	char *svg = render(g, &o);
	AP_CHECK(svg);
	/* big: the hook's colour, defanged; small: the colour by name. */
	const char *b = strstr(svg, "data-n=\"big\"");
	AP_CHECK(b);
	AP_CHECK_MSG(strstr(b, "fill=\"rgb(255,0,0)   script \""), "%s", b);
	AP_CHECK(!strstr(svg, "<script>"));
	char want[32];
	ap_fg_name_colour("small", want, sizeof want);
	const char *s = strstr(svg, "data-n=\"small\"");
	AP_CHECK(s && strstr(s, want));
	/* The note is escaped and its newline becomes a tooltip line. */
	AP_CHECK(strstr(svg, "1 sample&#10;payload 5000 &lt;&amp;&gt;&#10;"
			     "second line</title>"));
	free(svg);
	ap_fg_destroy(g);
}
