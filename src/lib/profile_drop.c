/*
 * profile_drop.c: the drop_frames regex of the profiles allocprof writes
 * (profile.proto field 7). pprof removes from every sample the first
 * frame, counting from the root and after the first frame that does not
 * match, whose whole function name matches, and everything called from it
 * (RE2 syntax, anchored by pprof). So the regex names the allocation
 * machinery, and nothing that calls back into user code in general: the
 * allocator entry points, allocprof's runtime, the C++ allocators and the
 * standard containers and strings (a push_back is the caller's
 * allocation, as in allocprof report), std::function's manager (it copies
 * a callable to the heap; the invoker, which calls it, is not named) and
 * the output streams and string buffers (a `buf << x` is the caller's).
 * std::function's call operator, std::thread and the algorithms are left
 * out on purpose: a cut there would hide the user's callbacks and, for
 * threads, every frame under start_thread. Rust's allocation machinery
 * likewise (AP_RUST_ALLOC).
 *
 * Names come in two forms: pprof's own symbolization (no template
 * arguments) and allocprof's (convert --symbolize: template arguments);
 * the regex takes both. Neither carries a return type, which the regex
 * could not tell from the name ("std::vector<int> make_list<int>" is the
 * user's function).
 */
#include "allocprof/profile.h"

#include "allocprof/common.h"

/* A template argument list. A space inside one follows a comma or comes
 * before a non-name ("> >", " (*)", " const", "unsigned long"), never
 * before a function's name: "std::vector<int> make_list<int>" (a user's
 * function with its return type) is not std::vector<...>. */
#define AP_TEMPLATE_ARGS_OPEN                                                \
	"<([^ ]|, | [^A-Za-z_]| (const|volatile|unsigned|signed|long|short|"  \
	"char|int|bool|double|float|void|wchar_t))* ?"
#define AP_TEMPLATE_ARGS AP_TEMPLATE_ARGS_OPEN ">"

#define AP_STD_PREFIX "(std|__gnu_cxx)::(__cxx11::|__1::|__detail::)?"
#define AP_STD_NAMES                                                         \
	"(allocator|__new_allocator|new_allocator|allocator_traits|"          \
	"__alloc_traits|__allocated_ptr|_Vector_base|vector|_Deque_base|"    \
	"deque|_List_base|list|forward_list|_Rb_tree|map|multimap|set|"      \
	"multiset|_Hashtable|_Hashtable_alloc|_Map_base|_Insert_base|"       \
	"unordered_map|unordered_multimap|unordered_set|unordered_multiset|" \
	"basic_string|__shared_count|__shared_ptr|shared_ptr|"                \
	"_Sp_counted_ptr_inplace|make_shared|allocate_shared|"                \
	"__allocate_guarded|__make_shared|__allocate_shared|to_string|"       \
	"_Function_base|basic_ostream|ostream|basic_ostringstream|"          \
	"ostringstream|basic_stringbuf|stringbuf|basic_streambuf|streambuf|" \
	"num_put|operator\\+)"

/* The second form is what pprof matches for a name with a '(' in its
 * template arguments: it cuts every name at its first '(' (but
 * "(anonymous namespace)" and "operator()") before matching, so
 * "std::vector<std::function<void ()> >::reserve" is tested as
 * "std::vector<std::function<void ", an argument list left open. */
#define AP_STD_ALLOC                                                         \
	AP_STD_PREFIX AP_STD_NAMES "(" AP_TEMPLATE_ARGS ")?(::.*)?|"          \
	AP_STD_PREFIX AP_STD_NAMES AP_TEMPLATE_ARGS_OPEN "|"                 \
	"(std|__gnu_cxx)::operator<<( " AP_TEMPLATE_ARGS ")?"

/*
 * Rust: the alloc crate (its allocator calls, RawVec, Vec, String, Box,
 * format!, and the impls on its types, "<alloc::raw_vec::RawVecInner>::
 * finish_grow", or of its traits, "<u8 as alloc::vec::...>::from_elem"),
 * std's collections and the hashbrown tables under its HashMap, the
 * allocator shims, and Iterator::collect, which builds a collection for
 * its caller as a C++ container's range constructor does (the symbolizer
 * shows it as an inlined frame above the alloc crate's from_iter impls, so
 * a cut below it would leave collect, not the caller, as the site). Not
 * std or core as a whole: every Rust program's stack starts in
 * std::rt::lang_start and runs the user's main through
 * core::ops::function, where a cut would remove the whole program.
 */
#define AP_RUST_ALLOC                                                        \
	"alloc::.*|<alloc::.*|<[^ ]* as alloc::.*|"                           \
	"core::iter::traits::iterator::Iterator::collect(::<.*)?|"            \
	"<.* as core::iter::traits::iterator::Iterator>::collect(::<.*)?|"    \
	"std::collections::.*|<std::collections::.*|"                        \
	"hashbrown::.*|<hashbrown::.*|"                                       \
	"__rust_(alloc|alloc_zeroed|realloc|dealloc)|__rdl_.*|__rg_.*"

const char *const ap_profile_alloc_drop_frames =
	"malloc|calloc|realloc|reallocarray|free|posix_memalign|"
	"aligned_alloc|memalign|valloc|pvalloc|strdup|strndup|__strn?dup|"
	"__libc_(malloc|calloc|realloc|memalign|valloc|pvalloc)|"
	"operator (new|delete) ?(\\[\\])?(\\(.*)?|_Zn[wa].*|_Zd[la].*|"
	"ap_runtime_.*|allocprof_.*|" AP_STD_ALLOC "|" AP_RUST_ALLOC;

int ap_profile_drop_alloc_frames(ap_profile *p)
{
	if (!p)
		return AP_EINVAL;
	int64_t s = ap_profile_intern(p, ap_profile_alloc_drop_frames);
	if (s < 0)
		return (int)s;
	p->drop_frames = s;
	return 0;
}
