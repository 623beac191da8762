/*
 * profile_drop.c: the drop_frames regex of the profiles allocprof writes
 * (profile.proto field 7). pprof removes from every sample the first
 * frame, counting from the root and after the first frame that does not
 * match, whose whole function name matches, and everything called from it
 * (RE2 syntax, anchored by pprof). So the regex names the allocation
 * machinery, and nothing that calls back into user code in general: the
 * allocator entry points, allocprof's runtime, the C++ allocators and the
 * standard containers and strings (a push_back is the caller's
 * allocation, as in allocprof report). std::function, std::thread and the
 * algorithms are left out on purpose: a cut there would hide the user's
 * callbacks and, for threads, every frame under start_thread.
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
#define AP_TEMPLATE_ARGS                                                     \
	"<([^ ]|, | [^A-Za-z_]| (const|volatile|unsigned|signed|long|short|"  \
	"char|int|bool|double|float|void|wchar_t))* ?>"

#define AP_STD_ALLOC                                                         \
	"(std|__gnu_cxx)::(__cxx11::|__1::|__detail::)?"                \
	"(allocator|__new_allocator|new_allocator|allocator_traits|"          \
	"__alloc_traits|__allocated_ptr|_Vector_base|vector|_Deque_base|"    \
	"deque|_List_base|list|forward_list|_Rb_tree|map|multimap|set|"      \
	"multiset|_Hashtable|_Hashtable_alloc|_Map_base|_Insert_base|"       \
	"unordered_map|unordered_multimap|unordered_set|unordered_multiset|" \
	"basic_string|__shared_count|__shared_ptr|shared_ptr|"                \
	"_Sp_counted_ptr_inplace|make_shared|allocate_shared|"                \
	"__allocate_guarded|__make_shared|__allocate_shared|to_string|"       \
	"operator\\+)(" AP_TEMPLATE_ARGS ")?(::.*)?"

const char *const ap_profile_alloc_drop_frames =
	"malloc|calloc|realloc|reallocarray|free|posix_memalign|"
	"aligned_alloc|memalign|valloc|pvalloc|strdup|strndup|__strn?dup|"
	"__libc_(malloc|calloc|realloc|memalign|valloc|pvalloc)|"
	"operator (new|delete) ?(\\[\\])?(\\(.*)?|_Zn[wa].*|_Zd[la].*|"
	"ap_runtime_.*|allocprof_.*|" AP_STD_ALLOC;

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
