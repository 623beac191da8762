/*
 * demangle.c: libiberty's C++ and Rust demanglers behind one call (see
 * demangle.h).
 */
#include "demangle.h"

#include <stdbool.h>

#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "framename.h"

/*
 * A demangled name longer than this is given up. Back-references let a
 * short mangled name expand exponentially (80 bytes of Rust v0 became
 * more than 2 GiB under the fuzzer); the longest real names, deep C++
 * template instantiations, stay well below it.
 */
#define DM_MAX_LEN ((size_t)1 << 20)

/* What a demangler writes, piece by piece. */
struct dmbuf {
	char *s;
	size_t len, cap;
	jmp_buf stop; /* taken when the name is too long or memory runs out */
};

/*
 * libiberty's callback demanglers keep their state on the stack and
 * allocate nothing, so leaving one by longjmp from its callback loses
 * nothing: it is how a name that would not end is cut short.
 */
static void dm_append(const char *piece, size_t n, void *opaque)
{
	struct dmbuf *b = opaque;
	if (n > DM_MAX_LEN - b->len ||
	    ap_cli_grow((void **)&b->s, &b->cap, b->len + n + 1, 1))
		longjmp(b->stop, 1);
	memcpy(b->s + b->len, piece, n);
	b->len += n;
	b->s[b->len] = 0;
}

enum dm_kind { DM_RUST, DM_CXX };

/* The name demangled by one of the demanglers (malloc'd), or NULL. */
static char *dm_run(const char *name, enum dm_kind kind)
{
	/* volatile: read after a longjmp back into this frame */
	struct dmbuf *volatile b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	int ok = 0;
	if (!setjmp(b->stop))
		/* Rust without DMGL_VERBOSE leaves the hash out; C++ with the
		 * options libstdc++'s __cxa_demangle uses, so names read as
		 * c++filt prints them */
		ok = kind == DM_RUST
			     ? rust_demangle_callback(name, 0, dm_append, b)
			     : cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_TYPES,
							  dm_append, b);
	char *d = ok && b->s ? b->s : NULL;
	if (!d)
		free(b->s);
	free(b);
	return d;
}

/* Drop the parameter list (and trailing qualifiers) and the return type of
 * a demangled C++ name, in place. */
void fn_strip_params(char *s)
{
	size_t start, end = fn_params_start(s, &start);
	s[end] = 0;
	memmove(s, s + start, end - start + 1);
}

/* Both entry points: C++ names lose their parameter list when strip. */
static char *demangle(const char *name, bool strip)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	/* Rust first: its legacy names are valid C++ manglings too, which
	 * would keep the hash ("main::f::h0123456789abcdef") */
	char *d = dm_run(name, DM_RUST);
	if (d || name[1] != 'Z')
		return d;
	if ((d = dm_run(name, DM_CXX)) && strip)
		fn_strip_params(d);
	return d;
}

char *fn_demangle(const char *name)
{
	return demangle(name, true);
}

char *fn_demangle_full(const char *name)
{
	return demangle(name, false);
}
