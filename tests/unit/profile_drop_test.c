/*
 * profile_drop_test.c: the drop_frames regex allocprof's profiles carry
 * (ap_profile_drop_alloc_frames): what it names, what it must not name
 * (a cut there would hide the user's callbacks or whole threads), and that
 * it survives encoding. pprof anchors it as ^(...)$ and uses RE2; the
 * regex keeps to the part of the syntax POSIX ERE shares, so regcomp
 * checks it here.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocprof/profile.h"
#include "aptest.h"

static int matches(const char *name)
{
	size_t n = strlen(ap_profile_alloc_drop_frames) + 8;
	char *pat = malloc(n);
	regex_t re;
	snprintf(pat, n, "^(%s)$", ap_profile_alloc_drop_frames);
	int rc = regcomp(&re, pat, REG_EXTENDED | REG_NOSUB);
	free(pat);
	if (rc)
		return -1;
	rc = regexec(&re, name, 0, NULL, 0) == 0;
	regfree(&re);
	return rc;
}

AP_TEST(names_the_machinery)
{
	static const char *const yes[] = {
		"malloc", "calloc", "realloc", "posix_memalign", "strdup",
		"operator new", "operator new []", "operator new[]",
		"operator delete(void*, unsigned long)", "_Znwm",
		"ap_runtime_dump",
		/* pprof's names (no template arguments) */
		"std::vector::push_back", "std::__new_allocator::allocate",
		"std::make_shared", "std::__cxx11::basic_string::_M_construct",
		"std::__detail::_Map_base::operator[]", "std::map::operator[]",
		/* allocprof's names (convert --symbolize; no return types) */
		"std::vector<int, std::allocator<int> >::push_back",
		"std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>",
		"std::_Rb_tree<int, std::pair<int const, int> >::_M_create_node<>",
		"std::operator+<char, std::char_traits<char>, std::allocator<char> >",
		"__gnu_cxx::new_allocator<char>::allocate",
		/* std::function's manager copying a lambda to the heap, and the
		 * output streams (pprof's names, then allocprof's) */
		"std::_Function_base::_Base_manager::_M_create",
		"std::_Function_base::_Base_manager<main::{lambda(long)#1}>::_M_create<>",
		"std::operator<<", "std::operator<< <std::char_traits<char> >",
		"std::ostream::put", "std::ostream::_M_insert<long>",
		"std::basic_ostream<char, std::char_traits<char> >::write",
		"std::__cxx11::basic_stringbuf<char, std::char_traits<char>, "
		"std::allocator<char> >::overflow",
		"std::num_put<char, std::ostreambuf_iterator<char, std::char_traits<char> > >"
		"::_M_insert_int<long>",
		/* as pprof tests names with a '(' in their template arguments:
		 * cut at the first '(' */
		"std::__new_allocator<std::function<long ",
		"std::vector<std::function<void ",
		"std::_Function_base::_Base_manager<main::{lambda",
		"std::map<int, void ",
		/* Rust's allocation machinery (libiberty's names) */
		"alloc::alloc::exchange_malloc", "alloc::fmt::format::format_inner",
		"<alloc::raw_vec::RawVecInner>::finish_grow",
		"<alloc::string::String as core::clone::Clone>::clone",
		"<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem",
		"hashbrown::raw::RawTable<>::reserve_rehash",
		"std::collections::hash::map::HashMap<K,V,S>::insert",
		"__rust_alloc", "__rdl_alloc", "__rg_alloc",
		/* collect, legacy and v0 names: the caller's collection */
		"core::iter::traits::iterator::Iterator::collect",
		"<core::iter::adapters::map::Map<core::ops::range::Range<u64>, "
		"main::f::{closure#0}> as core::iter::traits::iterator::Iterator>"
		"::collect::<alloc::vec::Vec<u64>>",
	};
	static const char *const no[] = {
		"main", "fill_vector", "xmalloc", "malloc_wrapper", "Widget::Widget",
		"std::function<void ()>::operator()", "std::function::operator()",
		"std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)()> > >::_M_run",
		"std::__invoke_impl<void, void (*)()>", "std::sort<int*>",
		"std::for_each", "mystd::vector::push_back",
		/* std::function's invoker calls the user's callable */
		"std::_Function_handler<long (long), main::{lambda(long)#1}>::_M_invoke",
		/* pprof's cut of both std::function's constructor and its
		 * call operator, which calls the user's callable */
		"std::function<long int", "std::function<void ",
		/* a user's operator<< for a type of theirs (not in std) */
		"operator<<", "app::operator<<", "std::operator<<x",
		/* a user's template function named with its return type */
		"std::vector<int, std::allocator<int> > make_list<int>",
		/* every Rust program runs main under std::rt and core::ops:
		 * a cut there would remove the program */
		"std::rt::lang_start_internal", "std::rt::lang_start::{{closure}}",
		"std::sys::backtrace::__rust_begin_short_backtrace",
		"core::ops::function::FnOnce::call_once", "main::main",
		"<main::Config as core::clone::Clone>::clone", "myalloc::alloc",
		/* iterator adapters run the user's closures */
		"core::iter::traits::iterator::Iterator::for_each",
		"<core::ops::range::Range<u64> as core::iter::traits::iterator::Iterator>::map",
	};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		AP_CHECK_MSG(matches(yes[i]) == 1, "'%s' not matched", yes[i]);
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		AP_CHECK_MSG(matches(no[i]) == 0, "'%s' matched", no[i]);
}

AP_TEST(set_and_encoded)
{
	ap_profile *p, *q = NULL;
	AP_CHECK(ap_profile_create(NULL, &p) == 0);
	AP_CHECK(ap_profile_init_heap(p, 4096) == 0);
	AP_CHECK(ap_profile_drop_alloc_frames(p) == 0);
	AP_CHECK(!strcmp(ap_profile_string(p, p->drop_frames),
			 ap_profile_alloc_drop_frames));
	unsigned char *buf;
	size_t len;
	AP_CHECK(ap_pprof_encode(p, true, NULL, &buf, &len) == 0);
	AP_CHECK(ap_pprof_decode(buf, len, NULL, &q, NULL, 0) == 0);
	AP_CHECK(!strcmp(ap_profile_string(q, q->drop_frames),
			 ap_profile_alloc_drop_frames));
	ap_profile_allocator(p)->free(ap_profile_allocator(p)->ctx, buf, len + 1);
	ap_profile_destroy(q);
	ap_profile_destroy(p);
	AP_CHECK(ap_profile_drop_alloc_frames(NULL) == AP_EINVAL);
}
