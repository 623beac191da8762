/*
 * cli_names_fuzz.c: libFuzzer target for the command's name handling
 * (demangle.h, framename.h): symbol and DWARF names come from whatever
 * binaries a profile points at. The input is one name (cut at its first
 * NUL). Demangling must give a string or NULL; the shortener must fit the
 * bound it promises; the parameter-list finder must stay inside the name;
 * the frame rules must answer. Anything else traps (and ASan watches every
 * read).
 */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "framename.h"
#include "fuzz.h"

/* The rules and the shortener on one name. */
static void names(const char *s)
{
	size_t n = strlen(s), start = 0;
	size_t end = fn_params_start(s, &start);
	REQUIRE(end <= n && start <= end);
	char *out = malloc(n + 3);
	REQUIRE(out);
	size_t len = fn_shorten(s, out, n + 3);
	REQUIRE(len == strlen(out) && len <= n + 2);
	free(out);
	(void)fn_is_alloc_entry(s);
	(void)fn_is_std_frame(s);
	(void)fn_is_std_header(s);
	(void)fn_is_rust_library_source(s);
	(void)fn_is_runtime_object(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	names(s);
	char *d = fn_demangle(s);
	if (d) {
		REQUIRE(*d || size > 0);
		names(d);
		free(d);
	}
	free(s);
	return 0;
}
