/*
 * framename_test.c: the C++ name shortener and the frame rules of
 * framename.h on a table of real names: what __cxa_demangle (c++filt)
 * prints for libstdc++'s allocation machinery, operators, lambdas,
 * anonymous namespaces and function pointers in templates, both whole and
 * as symbolize.c hands them over (parameter list already dropped).
 */
#include <string.h>

#include "aptest.h"
#include "framename.h"

static const char *const names_table[][2] = {
	{"std::vector<int, std::allocator<int> >::push_back(int const&)",
	 "std::vector<>::push_back"},
	{"foo(int, char*)", "foo"},
	{"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"
	 "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
	 "int const&)",
	 "std::vector<>::_M_realloc_insert<>"},
	/* symbolize.c's form: parameters gone, return type still there */
	{"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>",
	 "std::vector<>::_M_realloc_insert<>"},
	{"void std::__cxx11::basic_string<char, std::char_traits<char>, "
	 "std::allocator<char> >::_M_construct<char const*>(char const*, char const*, "
	 "std::forward_iterator_tag)",
	 "std::__cxx11::basic_string<>::_M_construct<>"},
	{"std::__new_allocator<int>::allocate(unsigned long, void const*)",
	 "std::__new_allocator<>::allocate"},
	/* a free function returning std::string, as clang's DWARF names it
	 * (parameters already dropped): the ABI tag alone says C++ */
	{"format_numbers[abi:cxx11]", "format_numbers"},
	{"std::_Rb_tree_node<std::pair<int const, int> >* std::_Rb_tree<int, "
	 "std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, "
	 "std::less<int>, std::allocator<std::pair<int const, int> > >::"
	 "_M_create_node<std::piecewise_construct_t const&, std::tuple<int const&>, "
	 "std::tuple<> >(std::piecewise_construct_t const&, std::tuple<int const&>&&, "
	 "std::tuple<>&&)",
	 "std::_Rb_tree<>::_M_create_node<>"},
	{"std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > >"
	 "::operator[](int const&)",
	 "std::map<>::operator[]"},
	{"std::vector<int, std::allocator<int> >::operator[](unsigned long) const",
	 "std::vector<>::operator[]"},
	{"(anonymous namespace)::parse(char const*)", "(anonymous namespace)::parse"},
	{"(anonymous namespace)::Pool<int>::grow", "(anonymous namespace)::Pool<>::grow"},
	{"operator<<(std::basic_ostream<char, std::char_traits<char> >&, Foo const&)",
	 "operator<<"},
	{"operator<(Foo const&, Foo const&)", "operator<"},
	{"bool operator< <int>(Box<int> const&, Box<int> const&)", "operator<"},
	{"Foo::operator->()", "Foo::operator->"},
	{"Foo::operator int()", "Foo::operator int"},
	{"std::function<void (int)>::operator()(int) const", "std::function<>::operator()"},
	{"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"},
	{"main::{lambda(int const&)#1}::operator()(int const&) const",
	 "main::{lambda(int const&)#1}::operator()"},
	{"app::many()::{lambda(int)#5}::operator()(int) const::{lambda(int)#1}::operator()(int) const",
	 "app::many::{lambda(int)#5}::operator()::{lambda(int)#1}::operator()"},
	{"S::get() &&::{lambda()#1}::operator()() const", "S::get::{lambda()#1}::operator()"},
	{"build(int)::{lambda(std::vector<int, std::allocator<int> > const&)#2}::operator()",
	 "build::{lambda(std::vector<> const&)#2}::operator()"},
	{"Bar<void (*)(int)>::run()", "Bar<>::run"},
	{"std::shared_ptr<Foo> std::make_shared<Foo>()", "std::make_shared<>"},
	{"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
	 "std::operator+<char, std::char_traits<char>, std::allocator<char> >(char const*, "
	 "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&)",
	 "std::operator+<>"},
	{"Foo::operator<<=(int)", "Foo::operator<<="},
	{"Foo::operator<=>(Foo const&) const", "Foo::operator<=>"},
	{"operator new(unsigned long)", "operator new"},
	{"operator new[](unsigned long, std::align_val_t)", "operator new[]"},
	{"operator delete[](void*)", "operator delete[]"},
	{"Foo::Foo()", "Foo::Foo"},
	{"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
	 " make_name[abi:cxx11](int)",
	 "make_name"},
	{"parse(char const*) [clone .cold]", "parse"},
	{"unsigned long count<int>(int const*)", "count<>"},
	/* not C++: unchanged, so C profiles read as before */
	{"main", "main"},
	{"xmalloc", "xmalloc"},
	{"/usr/lib/my app/a.out+0x1234", "/usr/lib/my app/a.out+0x1234"},
	{"0x7f0012345678", "0x7f0012345678"},
	{"main.(*Tree).insert", "main.(*Tree).insert"},
	{"<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop",
	 "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop"},
	{"evil<script>&\"q\"'", "evil<script>&\"q\"'"},
	{"  spaced root", "  spaced root"},
	{"", ""},
};

AP_TEST(shorten_table)
{
	char buf[512];
	for (size_t i = 0; i < sizeof names_table / sizeof names_table[0]; i++) {
		size_t n = fn_shorten(names_table[i][0], buf, sizeof buf);
		AP_CHECK_MSG(!strcmp(buf, names_table[i][1]), "'%s' -> '%s', want '%s'",
			     names_table[i][0], buf, names_table[i][1]);
		AP_CHECK(n == strlen(buf));
	}
}

/* symbolize.c's cut: parameters go, everything else stays for
 * fn_shorten (or for --full-names) */
AP_TEST(params_start)
{
	static const char *const cut[][3] = {
		/* name, up to the parameters, without the return type */
		{"foo(int, char*)", "foo", "foo"},
		{"main::{lambda(int)#1}::operator()(int) const",
		 "main::{lambda(int)#1}::operator()", "main::{lambda(int)#1}::operator()"},
		{"build(int)::{lambda()#2}::operator()()",
		 "build(int)::{lambda()#2}::operator()", "build(int)::{lambda()#2}::operator()"},
		{"f()::{lambda(int)#5}::operator()(int) const::{lambda(int)#1}::operator()(int) const",
		 "f()::{lambda(int)#5}::operator()(int) const::{lambda(int)#1}::operator()",
		 "f()::{lambda(int)#5}::operator()(int) const::{lambda(int)#1}::operator()"},
		{"std::__cxx11::basic_string<char> std::operator+<char>(char const*, "
		 "std::__cxx11::basic_string<char>&&)",
		 "std::__cxx11::basic_string<char> std::operator+<char>",
		 "std::operator+<char>"},
		{"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"
		 "(__gnu_cxx::__normal_iterator<int*, std::vector<int> >, int const&)",
		 "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>",
		 "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"},
		{"(anonymous namespace)::parse(char const*)", "(anonymous namespace)::parse",
		 "(anonymous namespace)::parse"},
		{"operator<<(std::ostream&, Foo const&)", "operator<<", "operator<<"},
		/* an operator template: the space before its arguments is not
		 * the end of a return type (it used to leave "<std::char_...") */
		{"std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
		 "<std::char_traits<char> >(std::basic_ostream<char, "
		 "std::char_traits<char> >&, char)",
		 "std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
		 "<std::char_traits<char> >",
		 "std::operator<< <std::char_traits<char> >"},
		{"operator new(unsigned long)", "operator new", "operator new"},
		{"Bar<void (*)(int)>::run()", "Bar<void (*)(int)>::run", "Bar<void (*)(int)>::run"},
		{"decltype (f()) g<int>(int)", "decltype (f()) g<int>", "g<int>"},
		{"main", "main", "main"},
		{"  spaced root", "  spaced root", "  spaced root"},
	};
	for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
		size_t st, n = fn_params_start(cut[i][0], &st);
		AP_CHECK_MSG(n == strlen(cut[i][1]) && !strncmp(cut[i][0], cut[i][1], n),
			     "'%s' cut at %zu, want '%s'", cut[i][0], n, cut[i][1]);
		AP_CHECK_MSG(!strncmp(cut[i][0] + st, cut[i][2], n - st) &&
			     n - st == strlen(cut[i][2]),
			     "'%s' name starts at %zu, want '%s'", cut[i][0], st, cut[i][2]);
	}
}

AP_TEST(shorten_never_overflows)
{
	/* unbalanced (truncated) names and tiny buffers */
	char buf[4];
	const char *names[] = {"std::vector<int", "f(int", "a<b<c<d", "operator",
			       "x{lambda(", "<<<<"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		fn_shorten(names[i], buf, sizeof buf);
		AP_CHECK(strlen(buf) < sizeof buf);
		char big[64];
		fn_shorten(names[i], big, strlen(names[i]) + 3);
		AP_CHECK(strlen(big) <= strlen(names[i]) + 2);
	}
}

AP_TEST(std_frames)
{
	AP_CHECK(fn_is_std_frame("std::vector<>::push_back"));
	AP_CHECK(fn_is_std_frame("std::__new_allocator<int>::allocate"));
	AP_CHECK(fn_is_std_frame("void std::vector<int, std::allocator<int> >::"
				 "_M_realloc_insert<int const&>"));
	AP_CHECK(fn_is_std_frame("std::_Rb_tree_node<std::pair<int const, int> >* "
				 "std::_Rb_tree<int>::_M_create_node<>"));
	AP_CHECK(fn_is_std_frame("std::__1::vector<>::__push_back_slow_path<>"));
	AP_CHECK(fn_is_std_frame("__gnu_cxx::new_allocator<char>::allocate"));
	AP_CHECK(fn_is_std_frame("__cxa_allocate_exception"));
	AP_CHECK(!fn_is_std_frame("main"));
	AP_CHECK(!fn_is_std_frame("standard_parse"));
	AP_CHECK(!fn_is_std_frame("mystd::vector<>::push_back"));
	AP_CHECK(!fn_is_std_frame("Cache<std::string>::put"));
	AP_CHECK(!fn_is_std_frame("(anonymous namespace)::parse"));
	AP_CHECK(!fn_is_std_frame(NULL));
	AP_CHECK(fn_is_runtime_object("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
	AP_CHECK(fn_is_runtime_object("/usr/lib/libc++.so.1"));
	AP_CHECK(!fn_is_runtime_object("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	AP_CHECK(!fn_is_runtime_object("/opt/app/libstdcxx_helpers/app"));
	AP_CHECK(!fn_is_runtime_object(NULL));
	AP_CHECK(fn_is_std_header("/usr/include/c++/12/bits/std_function.h"));
	AP_CHECK(fn_is_std_header("/usr/lib/llvm-14/include/c++/v1/__functional/function.h"));
	AP_CHECK(!fn_is_std_header("/usr/include/stdio.h"));
	AP_CHECK(fn_is_std_header("/usr/include/x86_64-linux-gnu/c++/12/bits/c++config.h"));
	AP_CHECK(!fn_is_std_header("/home/me/src/include/cpp/app.h"));
	AP_CHECK(!fn_is_std_header("/home/me/proj/include/c++/app.h"));
	AP_CHECK(!fn_is_std_header("/home/me/c++/12apps/x.h"));
	AP_CHECK(!fn_is_std_header("std_function.h"));
	AP_CHECK(!fn_is_std_header(NULL));
}

/* Rust's standard library as libiberty demangles it (v0 and legacy). */
AP_TEST(rust_library_frames)
{
	static const char *const yes[] = {
		"alloc::alloc::alloc", "alloc::fmt::format::format_inner",
		"<alloc::raw_vec::RawVecInner>::finish_grow",
		"<alloc::raw_vec::RawVec<std::ffi::os_str::OsString>>::grow_one",
		"<alloc::string::String as core::clone::Clone>::clone",
		"<alloc::alloc::Global as core::alloc::Allocator>::allocate",
		"<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem",
		"<[u8] as alloc::slice::hack::ConvertVec>::to_vec",
		"<&str as alloc::string::ToString>::to_string",
		"<std::sync::once::Once>::call_once_force::<>::{closure#0}",
		"hashbrown::raw::RawTable<>::reserve_rehash",
		"<hashbrown::raw::RawTableInner>::reserve_rehash_inner",
		"std::collections::hash::map::HashMap<K,V,S>::insert",
		"core::ptr::drop_in_place<alloc::vec::Vec<u8>>",
		"std::rt::lang_start::{{closure}}",
		"__rust_alloc", "__rust_realloc", "__rdl_alloc", "__rg_alloc",
	};
	static const char *const no[] = {
		"main::build_index", "rs_sites::make_boxes::{closure#0}",
		"<main::Config as core::clone::Clone>::clone",
		"<&main::Config as core::fmt::Display>::fmt",
		"<main::Pool>::grow", "<T as main::Reset>::reset",
		"<u8 as myalloc::Pool>::take", "allocator::pool::take",
		"corelib::f", "<alloc_helpers::Arena>::take", "<", "<u8",
	};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		AP_CHECK_MSG(fn_is_std_frame(yes[i]), "'%s' not the library's", yes[i]);
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		AP_CHECK_MSG(!fn_is_std_frame(no[i]), "'%s' taken for the library", no[i]);
	AP_CHECK(fn_is_rust_library_source(
		"/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/alloc.rs"));
	AP_CHECK(fn_is_rust_library_source("library/alloc/src/raw_vec/mod.rs"));
	AP_CHECK(fn_is_rust_library_source("/usr/src/rustc-1.63.0/library/std/src/rt.rs"));
	AP_CHECK(fn_is_rust_library_source("/rust/deps/hashbrown-0.16.1/src/raw/mod.rs"));
	AP_CHECK(!fn_is_rust_library_source("/home/me/app/src/main.rs"));
	AP_CHECK(!fn_is_rust_library_source("/home/me/mylibrary/alloc/src/lib.rs"));
	AP_CHECK(!fn_is_rust_library_source("/home/me/weblibrary/core/src/x.rs"));
	AP_CHECK(!fn_is_rust_library_source(NULL));
}
