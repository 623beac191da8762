/*
 * demangle.h: C++ and Rust symbol names as people read them, with
 * libiberty's demanglers (Debian's libiberty-dev, linked statically into
 * the command; the same code as c++filt and GDB).
 *
 * - C++ (Itanium ABI, "_Z..."): demangled, then the parameter list and
 *   return type dropped ("void ns::f<int>(int) const" -> "ns::f<int>"),
 *   the way profilers name functions (framename.h knows which brackets are
 *   not parameter lists).
 * - Rust, both manglings: v0 ("_R...", what current toolchains build the
 *   standard library with) and legacy ("_ZN...17h<16 hex>E"), whose hash
 *   suffix is dropped and whose "$u7b$"-style escapes are decoded:
 *   "alloc::raw_vec::finish_grow", "<alloc::string::String as
 *   core::clone::Clone>::clone", "std::rt::lang_start::{{closure}}".
 *   Rust names have no parameter lists; they are left as demangled.
 *
 * The demanglers write through a callback into a buffer of ours, so a
 * name that cannot be demangled, or memory running out, gives NULL rather
 * than libiberty's abort-on-failure allocation.
 */
#ifndef ALLOCPROF_CLI_DEMANGLE_H
#define ALLOCPROF_CLI_DEMANGLE_H

/* The display name of a mangled symbol (malloc'd), or NULL when name is
 * not a C++ or Rust mangled name (C functions, "file+0x12") or on error. */
char *fn_demangle(const char *name);

/* The same with a C++ name's parameter list kept ("f(int)"), as a prefix
 * for names built on it (dwlambda.h); fn_strip_params then cuts the
 * whole. */
char *fn_demangle_full(const char *name);
void fn_strip_params(char *s);

#endif
