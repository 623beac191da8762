/*
 * exact_cxx.cpp: the C++ counterpart of exact_allocs.c. Every heap
 * allocation its site functions make goes through a C++ allocation
 * function (operator new/new[], nothrow, sized and aligned delete,
 * std::string, std::vector, std::map), and the program knows each one's
 * size, so a profile at rate=1 can be checked to the byte
 * (tests/unit/run_exact_test.c does the checking).
 *
 * The site functions live in their own text section, apsites, and the
 * "text" range printed is that section: the container and string code the
 * sites call (libstdc++, or template instantiations in the program's
 * .text) lies outside it, so the innermost frame inside the range is
 * always the site. Output, as exact_allocs prints it:
 *
 *   text START END                 the apsites section (hex)
 *   func NAME ADDR                 every site function (hex address)
 *   site NAME AOBJ ABYTES IOBJ IBYTES
 *   newhandler CALLS bad_alloc|null   the new_handler loop's outcome
 *
 * Usage: exact_cxx [--sites-only]   (only the site and newhandler lines:
 * the same text in every run, for comparing runs with and without the
 * runtime)
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

struct tally {
	const char *name;
	unsigned long aobj, abytes, iobj, ibytes;
};

static void alloc_counted(tally *t, size_t n)
{
	t->aobj++;
	t->abytes += n;
	t->iobj++;
	t->ibytes += n;
}

static void free_counted(tally *t, size_t n)
{
	t->iobj--;
	t->ibytes -= n;
}

static void need(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "exact_cxx: %s\n", what);
		exit(2);
	}
}

#define SITE __attribute__((section("apsites"), noinline))

struct obj48 {
	long v[6];
};
struct alignas(64) obj192 {
	char c[192];
};
typedef std::_Rb_tree_node<std::pair<const int, int>> map_node;

/* A T in static storage that is never destroyed: the blocks it holds are
 * still live when the runtime dumps at exit (after static destructors). */
template <class T> struct undying {
	union {
		T v;
	};
	undying() { new (&v) T(); }
	~undying() {}
};

/* Live at exit (static storage: the containers themselves are not heap). */
static obj48 *keep_objs[100];
static char *keep_arrays[100];
static obj192 *keep_aligned[10];
static undying<std::string> keep_strs[10];
static undying<std::vector<long>> keep_vec_;
static undying<std::map<int, int>> keep_map_;
#define keep_vec keep_vec_.v
#define keep_map keep_map_.v

/* new/delete of a 48-byte object (sized delete: -fsized-deallocation). */
SITE static void site_new(tally *t)
{
	for (int i = 0; i < 200; i++) {
		obj48 *o = new obj48();
		alloc_counted(t, sizeof *o);
		if (i % 2) {
			delete o;
			free_counted(t, sizeof *o);
		} else {
			keep_objs[i / 2] = o;
		}
	}
}

/* new[]/delete[] of char arrays, and the explicit sized forms. */
SITE static void site_new_array(tally *t)
{
	for (int i = 0; i < 150; i++) {
		size_t n = 1 + (size_t)i * 37;
		char *a = new char[n];
		memset(a, 1, n);
		alloc_counted(t, n);
		if (i < 100) {
			if (i % 2)
				delete[] a;
			else
				::operator delete[](a, n);
			free_counted(t, n);
		} else {
			keep_arrays[i - 100] = a;
		}
	}
	void *p = ::operator new(777);
	alloc_counted(t, 777);
	::operator delete(p, (size_t)777);
	free_counted(t, 777);
}

SITE static void site_nothrow(tally *t)
{
	for (int i = 0; i < 50; i++) {
		char *a = new (std::nothrow) char[100];
		need(a != nullptr, "nothrow new failed");
		alloc_counted(t, 100);
		obj48 *o = new (std::nothrow) obj48();
		need(o != nullptr, "nothrow new failed");
		alloc_counted(t, sizeof *o);
		delete[] a;
		free_counted(t, 100);
		::operator delete(o, std::nothrow);
		free_counted(t, sizeof *o);
	}
}

/* Over-aligned types take the align_val_t forms; every block must be
 * aligned as asked. */
SITE static void site_aligned(tally *t)
{
	for (int i = 0; i < 20; i++) {
		obj192 *o = new obj192();
		need(((uintptr_t)o & 63) == 0, "misaligned new");
		alloc_counted(t, sizeof *o);
		obj192 *a = new obj192[4];
		need(((uintptr_t)a & 63) == 0, "misaligned new[]");
		alloc_counted(t, 4 * sizeof *a);
		void *p = ::operator new(1000, std::align_val_t(256), std::nothrow);
		need(p && ((uintptr_t)p & 255) == 0, "misaligned nothrow new");
		alloc_counted(t, 1000);
		void *q = ::operator new[](3000, std::align_val_t(4096));
		need(((uintptr_t)q & 4095) == 0, "misaligned new[]");
		alloc_counted(t, 3000);
		delete[] a;
		free_counted(t, 4 * sizeof *a);
		::operator delete(p, std::align_val_t(256), std::nothrow);
		free_counted(t, 1000);
		::operator delete[](q, 3000, std::align_val_t(4096));
		free_counted(t, 3000);
		if (i < 10) {
			delete o; /* sized and aligned */
			free_counted(t, sizeof *o);
		} else {
			keep_aligned[i - 10] = o;
		}
	}
}

/* Strings longer than the small-string buffer allocate length + 1. */
SITE static void site_string(tally *t)
{
	for (size_t i = 0; i < 100; i++) {
		size_t n = 40 + i * 13;
		std::string s(n, 'x');
		alloc_counted(t, n + 1);
		need(s.size() == n, "string");
		free_counted(t, n + 1); /* s dies at the end of the iteration */
	}
	for (size_t i = 0; i < 10; i++) {
		size_t n = 50 + i;
		keep_strs[i].v.assign(n, 'y');
		alloc_counted(t, n + 1);
	}
}

/* A vector grows by reallocating: each new capacity is an allocation, the
 * old one is freed. */
static void grow(tally *t, std::vector<long> &v, int n)
{
	for (int i = 0; i < n; i++) {
		size_t cap = v.capacity();
		v.push_back(i);
		if (v.capacity() != cap) {
			alloc_counted(t, v.capacity() * sizeof(long));
			if (cap)
				free_counted(t, cap * sizeof(long));
		}
	}
}

SITE static void site_vector(tally *t)
{
	{
		std::vector<long> v;
		grow(t, v, 1000);
		free_counted(t, v.capacity() * sizeof(long));
	}
	grow(t, keep_vec, 300);
}

SITE static void site_map(tally *t)
{
	{
		std::map<int, int> m;
		for (int i = 0; i < 200; i++) {
			m[i * 7] = i;
			alloc_counted(t, sizeof(map_node));
		}
		for (int i = 0; i < 200; i++)
			free_counted(t, sizeof(map_node)); /* m dies */
	}
	for (int i = 0; i < 300; i++) {
		keep_map[i] = i;
		alloc_counted(t, sizeof(map_node));
	}
	for (int i = 0; i < 300; i += 3) {
		keep_map.erase(i);
		free_counted(t, sizeof(map_node));
	}
}

/*
 * The new_handler loop: a request no allocator can meet calls the handler
 * until it gives up (uninstalls itself), then throws std::bad_alloc; the
 * nothrow form runs the same loop and returns NULL. Not a site.
 */
static int handler_calls;
static void handler(void)
{
	if (++handler_calls == 3)
		std::set_new_handler(nullptr);
}

static void new_handler_loop(void)
{
	volatile size_t huge = (size_t)1 << 46; /* 64 TiB: fails everywhere */
	std::set_new_handler(handler);
	const char *how = "returned";
	try {
		char *p = new char[huge];
		delete[] p;
	} catch (const std::bad_alloc &) {
		how = "bad_alloc";
	}
	printf("newhandler %d %s\n", handler_calls, how);
	handler_calls = 0;
	std::set_new_handler(handler);
	char *q = new (std::nothrow) char[huge];
	printf("newhandler %d %s\n", handler_calls, q ? "block" : "null");
	std::set_new_handler(nullptr);
}

extern "C" char __start_apsites[], __stop_apsites[];

static void print_site(const tally *t)
{
	printf("site %s %lu %lu %lu %lu\n", t->name, t->aobj, t->abytes, t->iobj,
	       t->ibytes);
}

#define FUNC(f) printf("func %s %#lx\n", #f, (unsigned long)(uintptr_t)(f))

int main(int argc, char **argv)
{
	bool sites_only = argc > 1 && !strcmp(argv[1], "--sites-only");
	if (argc > 2 || (argc == 2 && !sites_only)) {
		fprintf(stderr, "usage: exact_cxx [--sites-only]\n");
		return 64;
	}
	tally t[] = {
		{"site_new", 0, 0, 0, 0},    {"site_new_array", 0, 0, 0, 0},
		{"site_nothrow", 0, 0, 0, 0}, {"site_aligned", 0, 0, 0, 0},
		{"site_string", 0, 0, 0, 0}, {"site_vector", 0, 0, 0, 0},
		{"site_map", 0, 0, 0, 0},
	};
	if (!sites_only) {
		printf("text %#lx %#lx\n", (unsigned long)(uintptr_t)__start_apsites,
		       (unsigned long)(uintptr_t)__stop_apsites);
		FUNC(site_new);
		FUNC(site_new_array);
		FUNC(site_nothrow);
		FUNC(site_aligned);
		FUNC(site_string);
		FUNC(site_vector);
		FUNC(site_map);
	}
	new_handler_loop();
	site_new(&t[0]);
	site_new_array(&t[1]);
	site_nothrow(&t[2]);
	site_aligned(&t[3]);
	site_string(&t[4]);
	site_vector(&t[5]);
	site_map(&t[6]);
	for (const tally &s : t)
		print_site(&s);
	return fflush(stdout) ? 2 : 0;
}
