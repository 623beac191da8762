/*
 * demangle_test.c: fn_demangle (demangle.h) on real symbols: C++ with its
 * parameter list and return type dropped; Rust v0 names (rustup's
 * standard library) and legacy ones (with the hash, the "$u7b$" escapes
 * and LLVM's ".llvm.N" suffix), all as a reader expects; and everything
 * that is not a mangled name, or is a broken or endless one, gives NULL.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aptest.h"
#include "demangle.h"

static const char *const table[][2] = {
	/* C++ */
	{"_ZN2ns6Parser4nodeEi", "ns::Parser::node"},
	{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"},
	{"_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJRKiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_",
	 "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"},
	{"_Znwm", "operator new"},
	{"_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()"},
	/* Rust v0 */
	{"_RNvNvNtCslNYArtu3iFV_5alloc3fmt6format12format_inner",
	 "alloc::fmt::format::format_inner"},
	{"_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner11finish_growCsjrHSEGnQ3l9_3std",
	 "<alloc::raw_vec::RawVecInner>::finish_grow"},
	{"_RNvXs4_NtCslNYArtu3iFV_5alloc6stringNtB5_6StringNtNtCsgEmfK2I1SDS_4core5clone5Clone5clone",
	 "<alloc::string::String as core::clone::Clone>::clone"},
	/* Rust legacy: no hash, escapes decoded, LLVM's suffix gone */
	{"_ZN4main5boxes17h0123456789abcdefE", "main::boxes"},
	{"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hffdc9cc04d1fbc39E"
	 ".llvm.13200591295220082053",
	 "std::rt::lang_start::{{closure}}"},
	{"_ZN5alloc7raw_vec19RawVec$LT$T$C$A$GT$8grow_one17h1a2b3c4d5e6f7081E",
	 "alloc::raw_vec::RawVec<T,A>::grow_one"},
};

AP_TEST(demangles_cxx_and_rust)
{
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		char *d = fn_demangle(table[i][0]);
		AP_CHECK_MSG(d && strcmp(d, table[i][1]) == 0, "%s: got '%s', want '%s'",
			     table[i][0], d ? d : "(null)", table[i][1]);
		free(d);
	}
}

AP_TEST(leaves_other_names)
{
	static const char *const not_mangled[] = {
		"main", "malloc", "_start", "_Z", "_R", "_ZN3foo", "_RNv",
		"_Z3foo\x01", "python3.11+0x1a7141", "", "_Zzzzz", "_RNvC_"};
	for (size_t i = 0; i < sizeof not_mangled / sizeof not_mangled[0]; i++) {
		char *d = fn_demangle(not_mangled[i]);
		AP_CHECK_MSG(d == NULL, "'%s' demangled to '%s'", not_mangled[i], d);
		free(d);
	}
	AP_CHECK(fn_demangle(NULL) == NULL);
}

/* 80 bytes of Rust v0 whose back-references expand past 2 GiB (found by
 * tests/fuzz/cli_names_fuzz.c): given up once the name passes 1 MiB. */
AP_TEST(gives_up_on_endless_names)
{
	char *d = fn_demangle("_RNvXs4_NtCslNu3iFV_5alloc6striFFFFFFFFGFFFFFFFFFFFFFF"
			      "liballocprof_preloadriD");
	AP_CHECK_MSG(d == NULL, "demangled to %zu bytes", d ? strlen(d) : 0);
	free(d);
}

/* 131 bytes of Rust v0 (found by tests/fuzz/cli_names_fuzz.c) on which
 * libiberty's demangler loops without printing: the instantiating crate
 * after the path is walked silently, and one of its binders counts
 * base-62 "FFFFFFFFFFV" lifetimes, about 2^61. c++filt does not finish
 * either. The CPU budget gives up on it; the test's own timeout catches
 * a demangler without one. */
AP_TEST(gives_up_on_silent_endless_names)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char *d = fn_demangle("_RNvXNvXs4_NtCslNu3iFV_5alloc6striFFFFFFFFFGFFFFFFFFFFV_"
			      "5alloc6sts4_NtCslNu3iFV_5alloc6striFFFFFFFFFGFFFFFFFFFFV_"
			      "5alloc6striFfadrcD");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	AP_CHECK_MSG(d == NULL, "demangled to '%.60s'", d ? d : "");
	free(d);
	/* Real names keep demangling after a name was cut short. */
	d = fn_demangle(table[0][0]);
	AP_CHECK_MSG(d && strcmp(d, table[0][1]) == 0, "then %s gave '%s'", table[0][0],
		     d ? d : "(null)");
	free(d);
	double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	/* The budget is 0.25 s of CPU; wall time on a loaded machine may be
	 * longer, never a minute. */
	AP_CHECK_MSG(s < 60.0, "took %.1f s", s);
}
