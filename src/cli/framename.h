/*
 * framename.h: function names as a person reads them in a report, and the
 * rules that tell allocation machinery (allocator entry points, allocprof
 * itself, the C++ runtime) from the user's code. Pure string functions (no profile, no I/O) so that every
 * view (heapview.h) applies the same rule and the unit test can feed them
 * a table of real demangled names.
 *
 * Shortening collapses template argument lists to "<>" and drops
 * parameter lists, trailing qualifiers, return types (demangled template
 * functions carry one: "void std::vector<int>::_M_realloc_insert<...>"),
 * ABI tags and clone suffixes, the way pprof and heaptrack show C++:
 *
 *     std::vector<int, std::allocator<int> >::push_back(int const&)
 *         -> std::vector<>::push_back
 *     foo(int, char*)                       -> foo
 *     (anonymous namespace)::parse(char const*) -> (anonymous namespace)::parse
 *     main::{lambda(int)#1}::operator()(int) const
 *                                           -> main::{lambda()#1}::operator()
 *
 * Operators whose names contain brackets (operator<, operator<<,
 * operator(), operator[], operator->, operator new[]) are kept whole.
 * Names that are not C++ (C, Go's "pkg.(*T).m", unsymbolized
 * "file+0xOFF") come back unchanged, so C profiles read as before.
 */
#ifndef ALLOCPROF_CLI_FRAMENAME_H
#define ALLOCPROF_CLI_FRAMENAME_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Write the short form of name into out (outlen bytes, NUL-terminated;
 * strlen(name) + 3 always suffices) and return its length. A name whose
 * short form would be empty is copied unchanged.
 */
size_t fn_shorten(const char *name, char *out, size_t outlen);

/*
 * Where the parameter list of a demangled name starts (strlen(name) when
 * it has none): the last one, "f(int)::{lambda(int)#1}::operator()(int)"
 * has three. Brackets of operators, lambdas and template arguments are
 * not parameter lists; neither is "(anonymous namespace)". When
 * name_start is not NULL it gets where the name starts after a return
 * type ("void std::vector<int>::_M_realloc_insert<int const&>(...)" has
 * one); 0 without a parameter list, where a space may be part of a name.
 */
size_t fn_params_start(const char *name, size_t *name_start);

/*
 * Whether a function name is an allocator entry point (malloc, calloc,
 * operator new and delete in every variant, strdup, ...) or part of
 * allocprof's runtime.
 */
bool fn_is_alloc_entry(const char *name);

/*
 * Whether a frame belongs to the C++ standard library or its ABI runtime
 * by name: namespaces std (libstdc++ and libc++'s std::__1), __gnu_cxx,
 * __gnu_debug, __cxxabiv1, and the __cxa_* entry points; or to Rust's
 * standard library: the crates alloc, core and std, the hashbrown tables
 * under std's HashMap, their impls ("<alloc::string::String as
 * core::clone::Clone>::clone", "<u8 as alloc::...>::from_elem", not
 * "<main::Config as core::clone::Clone>::clone") and the allocator shims
 * (__rust_alloc, __rdl_alloc, __rg_alloc). Reports skip such
 * frames only at the leaf end of a stack: the allocator classes, the
 * containers' and strings' internals and their public methods
 * (push_back, operator[]) all lead to the user's function that called
 * into the library. name may be full or short; a return type is allowed.
 */
bool fn_is_std_frame(const char *name);

/* Whether a mapped file is the C++ runtime (libstdc++, libc++, libc++abi,
 * libsupc++): every frame in it is the runtime's, whatever its name. */
bool fn_is_runtime_object(const char *path);

/* Whether a frame's source file is a header of the C++ standard library
 * (a directory c++/VERSION/, as libstdc++'s /usr/include/c++/12/, or
 * libc++'s include/c++/v1/): the library's code inlined or instantiated
 * in the program. It tells such a frame when DWARF gives its function no
 * linkage name, only an unqualified one (GCC, for templates instantiated
 * over a lambda: "_M_create<...>" of std::function's manager). */
bool fn_is_std_header(const char *path);

/* Whether a frame's source file is in Rust's standard library
 * (".../library/alloc/src/...", core and std alike, and the crates std
 * vendors under /rust/deps/). Rust's DWARF names inlined library
 * functions unqualified ("alloc", "allocate", "do_alloc"), so an inlined
 * frame is told by its file. Only inlined frames: a function's own frame
 * can carry a library line where inlining left no trace in DWARF
 * (Box::new's allocation inside the user's function). */
bool fn_is_rust_library_source(const char *path);

#endif /* ALLOCPROF_CLI_FRAMENAME_H */
