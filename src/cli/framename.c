/*
 * framename.c: recognising allocator entry points and the C++ runtime's
 * frames, and shortening demangled C++ names (see framename.h). The scanner walks the name once at
 * bracket depth 0; every bracketed group ('<', '(', '{', '[') is measured
 * by group_end, which knows that the brackets of operator<, operator()
 * and friends are part of a name, not a group.
 */
#include "framename.h"

#include <ctype.h>
#include <string.h>

static bool ident(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/*
 * Length of the operator name starting at s[i] ("operator<<",
 * "operator new[]", "operator()", "operator std::string" up to its
 * parameter list), or 0 when s[i] does not start one.
 */
static size_t operator_len(const char *s, size_t i)
{
	if (!starts(s + i, "operator") || (i > 0 && ident(s[i - 1])) ||
	    ident(s[i + 8]))
		return 0;
	const char *p = s + i + 8;
	if (starts(p, "()") || starts(p, "[]"))
		return 10;
	if (starts(p, " new") || starts(p, " delete")) {
		size_t n = 8 + (p[1] == 'n' ? 4 : 7);
		return n + (starts(s + i + n, "[]") ? 2 : 0);
	}
	if (starts(p, "\"\"")) { /* literal operator: operator"" _km */
		size_t n = 10;
		while (s[i + n] == ' ' || ident(s[i + n]))
			n++;
		return n;
	}
	/* longest first, so "operator<<=" is not "operator<" + "<=" and
	 * "operator+<char>" is operator+ with its template arguments */
	static const char *const ops[] = {
		"<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "==", "!=",
		"&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
		"^=", "->", ",", "+", "-", "*", "/", "%", "^", "&", "|", "~",
		"!", "=", "<", ">"};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
		if (starts(p, ops[k]))
			return 8 + strlen(ops[k]);
	size_t n;
	if (*p != ' ')
		return 0;
	/* conversion operator: the type runs to the parameter list */
	int depth = 0;
	for (n = 9; s[i + n]; n++) {
		char c = s[i + n];
		if (c == '<')
			depth++;
		else if (c == '>' && depth > 0)
			depth--;
		else if (c == '(' && depth == 0)
			break;
	}
	return n;
}

/* Index just past the bracketed group opening at s[i]; strlen(s) when it
 * is not closed (a truncated name). */
static size_t group_end(const char *s, size_t i)
{
	int depth = 0;
	for (; s[i]; i++) {
		size_t op = operator_len(s, i);
		if (op) {
			i += op - 1;
			continue;
		}
		char c = s[i];
		if (c == '-' && s[i + 1] == '>') {
			i++; /* a->b inside decltype is no bracket */
		} else if (strchr("<({[", c)) {
			depth++;
		} else if (strchr(">)}]", c) && --depth == 0) {
			return i + 1;
		}
	}
	return i;
}

/* "file+0xOFF" or "0xADDR": heapview's names for unsymbolized frames. */
static bool raw_address(const char *s)
{
	const char *x = strstr(s, "0x");
	if (!x || (x != s && x[-1] != '+') || !x[2])
		return false;
	for (x += 2; *x; x++)
		if (!isxdigit((unsigned char)*x))
			return false;
	return true;
}

struct out {
	char *buf;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	for (size_t k = 0; k < n && o->len + 1 < o->cap; k++)
		o->buf[o->len++] = s[k];
}

/* Past the cv- and ref-qualifiers at s[i] (" const", " volatile", " &",
 * " &&") that may follow a member function's parameter list. */
static size_t quals_end(const char *s, size_t i)
{
	for (;;) {
		if (starts(s + i, " const"))
			i += 6;
		else if (starts(s + i, " volatile"))
			i += 9;
		else if (starts(s + i, " &&"))
			i += 3;
		else if (starts(s + i, " &"))
			i += 2;
		else
			return i;
	}
}

size_t fn_params_start(const char *s, size_t *name_start)
{
	size_t i = 0, len = 0; /* len: characters of the name so far */
	size_t dummy;
	if (!name_start)
		name_start = &dummy;
	*name_start = 0;
	while (s[i]) {
		size_t op = operator_len(s, i), e;
		if (op) {
			i += op;
			len += op;
			/* "operator<< <std::char_traits<char> >": the space
			 * before an operator template's arguments is not the
			 * end of a return type */
			if (s[i] == ' ' && s[i + 1] == '<') {
				e = group_end(s, i + 1);
				len += e - i;
				i = e;
			}
		} else if (s[i] == '(' && starts(s + i, "(anonymous namespace)")) {
			i += 21;
			len += 21;
		} else if (s[i] == '(') {
			e = group_end(s, i);
			if (len && s[i - 1] != '.' && !starts(s + quals_end(s, e), "::"))
				return i;
			e = quals_end(s, e); /* "() const::{lambda...": a local entity */
			len += e - i;
			i = e;
		} else if (strchr("<{[", s[i])) {
			i = group_end(s, i);
			len++;
		} else {
			len = s[i] == ' ' ? 0 : len + 1;
			i++;
			if (!len)
				*name_start = i; /* what came before is a return type */
		}
	}
	*name_start = 0; /* no parameter list: a space is part of the name */
	return i;
}

/* Whether s can be a demangled C++ name: a C name (even a hostile one
 * like "evil<script>" or " spaced root") is never rewritten. */
static bool cxx_like(const char *s)
{
	return !raw_address(s) &&
	       (strstr(s, "::") || strchr(s, '(') || strstr(s, "[abi:") ||
		(strchr(s, '<') && !strpbrk(s, "\"'")));
}

size_t fn_shorten(const char *s, char *buf, size_t cap)
{
	struct out o = {buf, 0, cap};
	if (!cap)
		return 0;
	size_t i = 0;
	while (cxx_like(s) && s[i]) {
		size_t op = operator_len(s, i), e;
		char c = s[i];
		if (op) {
			put(&o, s + i, op);
			i += op;
			/* "operator< <int>": the template's arguments go, and
			 * with them the space that keeps them apart */
			if (s[i] == ' ' && s[i + 1] == '<')
				i = group_end(s, i + 1);
		} else if (c == '<') {
			e = group_end(s, i);
			/* a name opening with '<' is Rust's "<T as Trait>::f":
			 * keep the qualifying type */
			put(&o, o.len ? "<>" : s + i, o.len ? 2 : e - i);
			i = e;
		} else if (c == '(' && starts(s + i, "(anonymous namespace)")) {
			put(&o, s + i, 21);
			i += 21;
		} else if (c == '(') {
			e = group_end(s, i);
			if (o.len == 0 || o.buf[o.len - 1] == '.') {
				/* decltype(...) in a return type, Go's (*T) */
				put(&o, s + i, e - i);
				i = e;
			} else if (starts(s + quals_end(s, e), "::")) {
				/* f(int)::{lambda()#1}, a local entity; also of
				 * a const member, as a nested lambda is:
				 * {lambda(int)#1}::operator()(int) const::... */
				i = quals_end(s, e);
			} else {
				break; /* the parameter list: the name is complete */
			}
		} else if (c == '{') {
			/* {lambda(int)#1}, {unnamed type#1}: keep, the lambda's
			 * parameter types too (their template arguments
			 * collapsed): the number counts lambdas of the same
			 * parameter types only, so {lambda(int)#1} and
			 * {lambda(int const&)#1} are two lambdas of one
			 * function, which without them would read as one */
			e = group_end(s, i);
			for (size_t k = i; k < e; k++) {
				if (s[k] == '<') {
					put(&o, "<>", 2);
					k = group_end(s, k) - 1;
				} else {
					put(&o, s + k, 1);
				}
			}
			i = e;
		} else if (c == '[' && starts(s + i, "[abi:")) {
			i = group_end(s, i);
		} else if (c == ' ' && starts(s + i, " [clone")) {
			break;
		} else if (c == ' ') {
			/* a space at depth 0 ends a return type: "void f<int>" */
			o.len = 0;
			i++;
		} else {
			put(&o, s + i, 1);
			i++;
		}
	}
	if (o.len == 0)
		put(&o, s, strlen(s));
	buf[o.len] = 0;
	return o.len;
}

static const char *const alloc_names[] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "cfree",
	"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
	"malloc_usable_size", "__libc_malloc", "__libc_calloc",
	"__libc_realloc", "__libc_memalign", "__libc_valloc",
	"__libc_pvalloc", "__posix_memalign", "strdup", "strndup", "__strdup",
	"__strndup", "operator new", "operator new[]", "operator delete",
	"operator delete[]", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t",
	"_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
};

bool fn_is_alloc_entry(const char *f)
{
	if (!f || !*f)
		return false;
	/* allocprof itself: the runtime's API and unsymbolized frames in its
	 * object (symbolized ones are dropped by mapping, see
	 * expand_locations). Not every "ap_" name: Apache httpd uses it. */
	if (!strncmp(f, "ap_runtime_", 11) || !strncmp(f, "allocprof_", 10) ||
	    strstr(f, "liballocprof_preload"))
		return true;
	for (size_t i = 0; i < sizeof alloc_names / sizeof alloc_names[0]; i++) {
		size_t n = strlen(alloc_names[i]);
		/* "operator new(unsigned long)" and "operator new" alike */
		if (!strncmp(f, alloc_names[i], n) &&
		    (f[n] == 0 || (f[n] == '(' && !strncmp(f, "operator", 8))))
			return true;
	}
	/* _Znwm..., _ZdlPv... mangled operator new/delete variants */
	return !strncmp(f, "_Znw", 4) || !strncmp(f, "_Zna", 4) ||
	       !strncmp(f, "_Zdl", 4) || !strncmp(f, "_Zda", 4);
}

/* Rust's standard library crates and the hash table std's HashMap is
 * built on, as a path starts ("alloc::raw_vec::finish_grow"). */
static bool rust_library_path(const char *p)
{
	static const char *const crates[] = {"alloc::", "core::", "std::",
					     "hashbrown::"};
	for (size_t i = 0; i < sizeof crates / sizeof crates[0]; i++)
		if (starts(p, crates[i]))
			return true;
	return false;
}

/*
 * A Rust name qualified by its impl, "<T>::m" or "<T as Trait>::m", is the
 * library's when T is a library type (<alloc::string::String as
 * core::clone::Clone>::clone), or when T names no path of the program's
 * (a primitive, slice or generic parameter) and the trait is the
 * library's (<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem).
 * <main::Config as core::clone::Clone>::clone is the program's own code.
 */
static bool rust_library_impl(const char *name)
{
	const char *t = name + 1;
	while (*t == '&' || *t == '*' || starts(t, "mut ") || starts(t, "const "))
		t += *t == '&' || *t == '*' ? 1 : *t == 'm' ? 4 : 6;
	if (rust_library_path(t) || (*t == '[' && rust_library_path(t + 1)))
		return true;
	/* the self type's end at bracket depth 0: " as " or the closing '>' */
	int depth = 0;
	const char *p = t;
	for (; *p; p++) {
		if (*p == '<' || *p == '[' || *p == '(')
			depth++;
		else if ((*p == '>' || *p == ']' || *p == ')') && depth-- == 0)
			return false; /* <T>::m, T not the library's */
		else if (depth == 0 && (starts(p, "::") || *p == ' '))
			break;
	}
	return depth == 0 && starts(p, " as ") && rust_library_path(p + 4);
}

bool fn_is_std_frame(const char *name)
{
	static const char *const spaces[] = {"std::", "__gnu_cxx::", "__gnu_debug::",
					     "__cxxabiv1::", "__cxa_",
					     /* Rust: the allocator shims */
					     "__rust_", "__rdl_", "__rg_"};
	if (!name)
		return false;
	if (rust_library_path(name) || (name[0] == '<' && rust_library_impl(name)))
		return true;
	/* skip a return type: the last space before the name's first
	 * bracket ("void std::vector<int>::_M_realloc_insert<int>") */
	const char *p = name, *sp;
	while ((sp = strchr(p, ' ')) && !memchr(p, '<', (size_t)(sp - p)) &&
	       !memchr(p, '(', (size_t)(sp - p)))
		p = sp + 1;
	for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
		if (starts(p, spaces[i]) || starts(name, spaces[i]))
			return true;
	return false;
}

bool fn_is_runtime_object(const char *path)
{
	if (!path)
		return false;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return starts(base, "libstdc++") || starts(base, "libc++") ||
	       starts(base, "libsupc++");
}

bool fn_is_rust_library_source(const char *path)
{
	/* rustc's library tree as its debug information names it:
	 * "/rustc/HASH/library/alloc/src/..." for rustup's toolchains,
	 * "library/alloc/src/..." in the prebuilt standard library's own
	 * line tables, "/usr/src/rustc-1.63.0/library/..." for Debian's; and
	 * the crates the standard library vendors (hashbrown) */
	static const char *const dirs[] = {"library/alloc/src/", "library/core/src/",
					   "library/std/src/", "/rust/deps/"};
	for (size_t i = 0; path && i < sizeof dirs / sizeof dirs[0]; i++) {
		const char *p = strstr(path, dirs[i]);
		if (p && (p == path || p[-1] == '/' || dirs[i][0] == '/'))
			return true;
	}
	return false;
}

bool fn_is_std_header(const char *path)
{
	/* ".../c++/VERSION/" (libstdc++: include/c++/12/, and its
	 * target-specific include/x86_64-linux-gnu/c++/12/) or
	 * ".../c++/v1/" (libc++) */
	for (const char *p = path; p && (p = strstr(p, "/c++/")); p++) {
		const char *v = p + 5;
		if (v[0] == 'v' && v[1] == '1' && v[2] == '/')
			return true;
		while (*v >= '0' && *v <= '9')
			v++;
		if (v > p + 5 && *v == '/')
			return true;
	}
	return false;
}
