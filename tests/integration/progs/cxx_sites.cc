// cxx_sites.cc: a C++ program whose allocation sites are known, for
// checking that reports name the user's functions, not libstdc++'s
// machinery (tests/integration/cxx_sites_test.sh). Each user function
// allocates through one C++ mechanism: new/new[], aligned new, std::string,
// std::vector growth, std::map, std::unordered_map, std::make_shared, a
// lambda, a template, a function in an anonymous namespace, std::function
// holding a capturing lambda (its manager is a template over the lambda,
// which GCC's DWARF names without a linkage name, so unqualified: known as
// the library's by its header), an ostringstream fed through
// std::operator<< (inlined here) and plain malloc.
//
// The program knows what each function allocated: it replaces operator
// new (plain, array, aligned) with versions that add the requested size to
// the current function's total and then call the next definition in the
// search order (libstdc++'s, or the profiler's), so the allocations still
// reach malloc through libstdc++ with operator new frames on the stack. At
// exit it prints "expect NAME BYTES" per function, NAME as a report shows
// it (C++ names shortened), to the file named by argv[1].
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Site {
	const char *name;
	unsigned long long bytes;
};

Site sites[16];
int nsites;
Site *current;           // the function being run, or none
thread_local int depth;  // inside a replaced operator new already

Site *site(const char *name)
{
	for (int i = 0; i < nsites; i++)
		if (sites[i].name == name)
			return &sites[i];
	sites[nsites].name = name;
	return &sites[nsites++];
}

// In scope: allocations are the named function's; nests (a constructor
// called from another site counts for itself).
struct In {
	Site *saved;
	explicit In(const char *name) : saved(current) { current = site(name); }
	~In() { current = saved; }
	In(const In &) = delete;
	In &operator=(const In &) = delete;
};

} // namespace

// The replacements are written out, without helper functions: a helper
// would be a frame of this program between std:: and malloc, and reports
// would rightly name it as the site. libstdc++'s operator new[] calls
// operator new: only the outermost call counts.
#define COUNT_AND_CALL(type, sym, ...)                                      \
	static type next = reinterpret_cast<type>(dlsym(RTLD_NEXT, sym));   \
	if (depth++ == 0 && current)                                        \
		current->bytes += n;                                        \
	void *p = next ? next(__VA_ARGS__) : nullptr;                       \
	depth--;                                                            \
	if (!p)                                                             \
		throw std::bad_alloc();                                     \
	return p

using new_fn = void *(*)(std::size_t);
using new_al_fn = void *(*)(std::size_t, std::align_val_t);

void *operator new(std::size_t n) { COUNT_AND_CALL(new_fn, "_Znwm", n); }
void *operator new[](std::size_t n) { COUNT_AND_CALL(new_fn, "_Znam", n); }
void *operator new(std::size_t n, std::align_val_t a)
{
	COUNT_AND_CALL(new_al_fn, "_ZnwmSt11align_val_t", n, a);
}
// Replaced too, not left to libstdc++ (whose aligned new[] calls the
// aligned new above): an allocator or profiler underneath may define it
// itself and never call back into this program.
void *operator new[](std::size_t n, std::align_val_t a)
{
	COUNT_AND_CALL(new_al_fn, "_ZnamSt11align_val_t", n, a);
}

struct Node {
	long key;
	Node *next;
	char pad[48];
};

struct alignas(64) Line {
	char bytes[192];
};

struct Widget {
	std::vector<int> data;
	explicit Widget(int n)
	{
		In in("Widget::Widget");
		data.assign(static_cast<std::size_t>(n), 7);
	}
};

namespace app {
class Cache {
public:
	void put(int k, const std::string &v)
	{
		In in("app::Cache::put");
		table_[k] = v;
	}
	std::size_t size() const { return table_.size(); }

private:
	std::map<int, std::string> table_;
};
} // namespace app

// Keep everything alive until exit, so nothing is optimised away.
static std::vector<void *> keep;

static void make_nodes()
{
	In in("make_nodes");
	Node *head = nullptr;
	for (int i = 0; i < 1000; i++)
		head = new Node{i, head, {}};
	keep.push_back(head); // reserved: keep never grows in a site
	for (int i = 1; i <= 50; i++)
		keep.push_back(new char[static_cast<std::size_t>(i) * 100]);
}

static void make_lines()
{
	In in("make_lines");
	for (int i = 0; i < 20; i++)
		keep.push_back(new Line[3]);
}

static std::string *make_strings()
{
	In in("make_strings");
	auto *all = new std::string;
	for (int i = 0; i < 200; i++) {
		std::string s = "a string long enough to live on the heap #" +
				std::to_string(i);
		*all += s;
	}
	return all;
}

static std::vector<int> *fill_vector()
{
	In in("fill_vector");
	auto *v = new std::vector<int>;
	for (int i = 0; i < 100000; i++)
		v->push_back(i);
	return v;
}

static app::Cache *fill_cache()
{
	In in("fill_cache");
	auto *c = new app::Cache;
	for (int i = 0; i < 300; i++)
		c->put(i, std::string(40, 'x'));
	return c;
}

namespace {
std::unordered_map<int, int> *build_index()
{
	// DWARF names a function of an anonymous namespace unqualified: reports
	// show "build_index"
	In in("build_index");
	auto *m = new std::unordered_map<int, int>;
	for (int i = 0; i < 5000; i++)
		(*m)[i * 7] = i;
	return m;
}
} // namespace

template <typename T> static std::vector<std::shared_ptr<T>> *share_all(int n)
{
	In in("share_all<>");
	auto *v = new std::vector<std::shared_ptr<T>>;
	v->reserve(static_cast<std::size_t>(n));
	for (int i = 0; i < n; i++)
		v->push_back(std::make_shared<T>(i % 50 + 1));
	return v;
}

// Three longs captured: too big for std::function's own buffer, so each
// lambda is copied to the heap by std::function's manager.
static std::vector<std::function<long(long)>> *store_callbacks()
{
	In in("store_callbacks");
	auto *v = new std::vector<std::function<long(long)>>;
	v->reserve(300);
	for (long i = 0; i < 300; i++) {
		long a = i, b = 2 * i, c = 3 * i;
		v->push_back([a, b, c](long x) { return a + b + c + x; });
	}
	return v;
}

static std::string *format_numbers()
{
	In in("format_numbers");
	std::ostringstream o;
	for (int i = 0; i < 3000; i++)
		o << i << ',' << ';';
	return new std::string(o.str());
}

static void *raw_buffers()
{
	In in("raw_buffers");
	void *p = std::malloc(12345);
	current->bytes += 12345; // malloc is not counted by the replacements
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: cxx_sites EXPECT_FILE\n");
		return 2;
	}
	keep.reserve(1000); // before any site, so keep never grows inside one
	make_nodes();
	make_lines();
	keep.push_back(make_strings());
	keep.push_back(fill_vector());
	keep.push_back(fill_cache());
	keep.push_back(build_index());
	keep.push_back(share_all<Widget>(400));
	keep.push_back(store_callbacks());
	keep.push_back(format_numbers());
	keep.push_back(raw_buffers());
	auto grow = [](int n) {
		In in("main::{lambda(int)#1}::operator()");
		auto *v = new std::vector<std::string>(static_cast<std::size_t>(n),
							std::string(100, 'y'));
			return v;
	};
	keep.push_back(grow(64));
	std::FILE *f = std::fopen(argv[1], "w");
	if (!f)
		return 2;
	for (int i = 0; i < nsites; i++)
		std::fprintf(f, "expect %s %llu\n", sites[i].name, sites[i].bytes);
	std::fclose(f);
	return 0;
}
