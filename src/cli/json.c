/*
 * json.c: the CLI's JSON writer (see json.h). Strings are escaped per RFC
 * 8259 by text.c's txt_json_escape: '"', '\\' and every byte below 0x20
 * are escaped; bytes that do not form valid UTF-8 (symbol names can hold
 * anything) are replaced by U+FFFD so a strict parser never rejects our
 * output.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

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

void json_key(json_writer *w, const char *key)
{
	separate(w);
	txt_json_escape(w->f, key);
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
	txt_json_escape(w->f, s);
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
