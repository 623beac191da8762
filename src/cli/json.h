/*
 * json.h: a tiny streaming JSON writer for the CLI's --json outputs. It
 * tracks nesting so commas are placed for the caller, escapes strings
 * correctly (text.h: quotes, backslash, control characters; invalid UTF-8
 * becomes U+FFFD so the output is always valid JSON) and prints non-finite numbers
 * as null. Output is compact, one value per call.
 */
#ifndef ALLOCPROF_CLI_JSON_H
#define ALLOCPROF_CLI_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_writer {
	FILE *f;
	int depth;                       /* current nesting depth */
	bool first[JSON_MAX_DEPTH + 1];  /* no element yet at this depth */
	bool after_key;                  /* a key was written, value pending */
	bool overflow;                   /* nesting deeper than JSON_MAX_DEPTH */
} json_writer;

void json_init(json_writer *w, FILE *f);
void json_begin_object(json_writer *w);
void json_end_object(json_writer *w);
void json_begin_array(json_writer *w);
void json_end_array(json_writer *w);
/* An object key; the next call writes its value. */
void json_key(json_writer *w, const char *key);
void json_string(json_writer *w, const char *s);   /* NULL -> null */
/* Integral values below 2^53 print without exponent; NaN/inf -> null. */
void json_number(json_writer *w, double v);
void json_int(json_writer *w, int64_t v);
void json_uint(json_writer *w, uint64_t v);
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);
/* Whether nesting stayed within bounds and no write error occurred. */
bool json_ok(const json_writer *w);

#endif
