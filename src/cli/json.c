/*
 * json.c: the CLI's JSON writer (see json.h). Strings are escaped per RFC
 * 8259: '"', '\\' and every byte below 0x20 are escaped; bytes that do not
 * form valid UTF-8 (symbol names can hold anything) are replaced by U+FFFD so
 * a strict parser never rejects our output.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(json_writer *w, FILE *f)
{
	memset(w, 0, sizeof *w);
	w->f = f;
	w->first[0] = true;
}

/* Comma handling before any value or key at the current depth. */
static void separate(json_writer *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth > JSON_MAX_DEPTH)
		return;
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
}

static void nest_open(json_writer *w, char c)
{
	separate(w);
	fputc(c, w->f);
	w->depth++;
	if (w->depth > JSON_MAX_DEPTH)
		w->overflow = true;
	else
		w->first[w->depth] = true;
}

static void nest_close(json_writer *w, char c)
{
	fputc(c, w->f);
	if (w->depth > 0)
		w->depth--;
}

void json_begin_object(json_writer *w) { nest_open(w, '{'); }
void json_end_object(json_writer *w) { nest_close(w, '}'); }
void json_begin_array(json_writer *w) { nest_open(w, '['); }
void json_end_array(json_writer *w) { nest_close(w, ']'); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	unsigned cp = c & (0x7fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_write_escaped(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', f);
	while (*s) {
		unsigned c = *s;
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc((int)c, f);
			s++;
		} else if (c < 0x20) {
			switch (c) {
			case '\n': fputs("\\n", f); break;
			case '\t': fputs("\\t", f); break;
			case '\r': fputs("\\r", f); break;
			case '\b': fputs("\\b", f); break;
			case '\f': fputs("\\f", f); break;
			default: fprintf(f, "\\u%04x", c); break;
			}
			s++;
		} else {
			size_t n = utf8_len(s);
			if (n == 0) {
				fputs("\\ufffd", f);
				s++;
			} else {
				fwrite(s, 1, n, f);
				s += n;
			}
		}
	}
	fputc('"', f);
}

void json_key(json_writer *w, const char *key)
{
	separate(w);
	json_write_escaped(w->f, key);
	fputc(':', w->f);
	w->after_key = true;
}

void json_string(json_writer *w, const char *s)
{
	if (!s) {
		json_null(w);
		return;
	}
	separate(w);
	json_write_escaped(w->f, s);
}

void json_number(json_writer *w, double v)
{
	if (!isfinite(v)) {
		json_null(w);
		return;
	}
	separate(w);
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		fprintf(w->f, "%.0f", v == 0 ? 0.0 : v);
		return;
	}
	/* the shortest of %.15g..%.17g that reads back as the same double */
	char buf[40];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, w->f);
}

void json_int(json_writer *w, int64_t v)
{
	separate(w);
	fprintf(w->f, "%" PRId64, v);
}

void json_uint(json_writer *w, uint64_t v)
{
	separate(w);
	fprintf(w->f, "%" PRIu64, v);
}

void json_bool(json_writer *w, bool v)
{
	separate(w);
	fputs(v ? "true" : "false", w->f);
}

void json_null(json_writer *w)
{
	separate(w);
	fputs("null", w->f);
}

bool json_ok(const json_writer *w)
{
	return !w->overflow && w->depth == 0 && !ferror(w->f);
}
