/*
 * options_fuzz.c: libFuzzer target for the ALLOCPROF_OPTIONS parser
 * (allocprof/options.h). The input is parsed as an option string against a
 * table with every value type, and each typed parser also gets the raw
 * bytes; none may crash, read out of bounds or leave a string option
 * unterminated.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz {
	uint64_t size, u, dur;
	bool b;
	int e, c;
	char s[8];
} fz;

static const char *const names[] = { "a", "bb", "ccc", NULL };

static int custom(const char *v, size_t n, void *dst, char *err, size_t errlen)
{
	if (n == 0 || v[0] != 'x') {
		if (errlen)
			err[0] = '\0';
		return AP_EINVAL;
	}
	*(int *)dst = (int)n;
	return 0;
}

static const ap_option_spec specs[] = {
	{ "size", AP_OPT_SIZE, offsetof(fz, size), 1, 1000000, NULL, 0, NULL, "" },
	{ "u", AP_OPT_U64, offsetof(fz, u), 0, 0, NULL, 0, NULL, "" },
	{ "dur", AP_OPT_DURATION, offsetof(fz, dur), 0, 0, NULL, 0, NULL, "" },
	{ "b", AP_OPT_BOOL, offsetof(fz, b), 0, 0, NULL, 0, NULL, "" },
	{ "e", AP_OPT_ENUM, offsetof(fz, e), 0, 0, names, 0, NULL, "" },
	{ "s", AP_OPT_STRING, offsetof(fz, s), 0, 0, NULL, 8, NULL, "" },
	{ "c", AP_OPT_CUSTOM, offsetof(fz, c), 0, 0, NULL, 0, custom, "" },
};

static void sink(void *ctx, const char *msg)
{
	size_t *total = ctx;
	*total += strlen(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	fz f;
	memset(&f, 0, sizeof f);
	size_t total = 0;
	ap_options_parse(text, specs, sizeof specs / sizeof specs[0], &f, sink, &total);
	if (memchr(f.s, 0, sizeof f.s) == NULL)
		abort(); /* a string option must stay NUL-terminated */
	if (f.size > 1000000)
		abort(); /* bounds must hold whatever the input */
	uint64_t v;
	bool b;
	int e;
	ap_options_parse_size((const char *)data, size, &v);
	ap_options_parse_u64((const char *)data, size, &v);
	ap_options_parse_duration_ns((const char *)data, size, &v);
	ap_options_parse_bool((const char *)data, size, &b);
	ap_options_parse_enum((const char *)data, size, names, &e);
	free(text);
	return 0;
}
