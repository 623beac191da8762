/*
 * demangle.c: libiberty's C++ and Rust demanglers behind one call (see
 * demangle.h).
 */
#include "demangle.h"

#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "framename.h"

/* What a demangler writes, piece by piece. */
struct dmbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void dm_append(const char *piece, size_t n, void *opaque)
{
	struct dmbuf *b = opaque;
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->len, piece, n);
	b->len += n;
	b->s[b->len] = 0;
}

/* The buffer's string when the demangler succeeded, else NULL. */
static char *dm_result(struct dmbuf *b, int ok)
{
	if (ok && !b->oom && b->s)
		return b->s;
	free(b->s);
	return NULL;
}

/* Drop the parameter list (and trailing qualifiers) and the return type of
 * a demangled C++ name, in place. */
static void strip_params(char *s)
{
	size_t start, end = fn_params_start(s, &start);
	s[end] = 0;
	memmove(s, s + start, end - start + 1);
}

char *fn_demangle(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	/* Rust first: its legacy names are valid C++ manglings too, which
	 * would keep the hash ("main::f::h0123456789abcdef"). Without
	 * DMGL_VERBOSE the demangler leaves the hash out. */
	struct dmbuf b = {0};
	char *d = dm_result(&b, rust_demangle_callback(name, 0, dm_append, &b));
	if (d || name[1] != 'Z')
		return d;
	/* The options libstdc++'s __cxa_demangle uses, so names read as
	 * c++filt prints them. */
	b = (struct dmbuf){0};
	d = dm_result(&b, cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_TYPES,
						     dm_append, &b));
	if (d)
		strip_params(d);
	return d;
}
