/*
 * static_sites.cpp: allocation sites that only a full symbol table names.
 * Built without debug information and without -rdynamic
 * (tests/integration/CMakeLists.txt), so every function here is absent
 * from the dynamic symbol table: file-local (static, anonymous
 * namespace) and main alike.
 *
 *   static_sites [STOPFILE]
 *
 * Keeps 2048 x 16 KiB from grow_table_static (malloc) via
 * fill_cache_static, and 512 vectors of 64 KiB from
 * make_buffer_static (std::vector resize, through operator new and the
 * vector's own functions). With STOPFILE, prints "ready" once they are
 * allocated and waits (at most 60 s) until STOPFILE exists before
 * exiting, for the HTTP endpoint.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <vector>

namespace {
void *volatile keep_blocks[2048];
std::vector<char> *volatile keep_vectors[512];
} // namespace

__attribute__((noinline)) static void *grow_table_static(size_t n)
{
	void *p = std::malloc(n);
	if (p)
		std::memset(p, 1, n);
	return p;
}

__attribute__((noinline)) static void fill_cache_static()
{
	for (auto &b : keep_blocks)
		b = grow_table_static(16384);
}

__attribute__((noinline)) static std::vector<char> *make_buffer_static()
{
	auto *v = new std::vector<char>();
	v->resize(65536);
	return v;
}

__attribute__((noinline)) static void fill_buffers_static()
{
	for (auto &v : keep_vectors)
		v = make_buffer_static();
}

int main(int argc, char **argv)
{
	fill_cache_static();
	fill_buffers_static();
	if (argc > 1) {
		std::puts("ready");
		std::fflush(stdout);
	}
	for (int i = 0; argc > 1 && i < 600 && access(argv[1], F_OK) != 0; i++) {
		struct timespec d = { 0, 100000000 };
		nanosleep(&d, nullptr);
	}
	return 0;
}
