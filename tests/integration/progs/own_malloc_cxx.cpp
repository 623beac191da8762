/*
 * own_malloc_cxx.cpp: a C++ program whose executable exports its own
 * malloc family (built with -rdynamic, as a program that links an
 * allocator statically often is), so libstdc++'s operator new allocates
 * from it. Without a profiler, a block from new may then be given back
 * with free(), and some code does.
 *
 * It makes 1000 blocks with new char[64], frees them with free(), and
 * prints how many of them came from its own malloc; free() aborts on a
 * block that is not its own (tests/integration/preload_blind_test.sh).
 */
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace {
alignas(16) unsigned char heap[64 << 20];
std::size_t used;
unsigned long calls;

void *bump(std::size_t n)
{
	std::size_t start = (used + 15) & ~static_cast<std::size_t>(15);
	if (n > sizeof heap - start)
		return nullptr;
	used = start + n;
	return heap + start;
}

bool mine(const void *p)
{
	auto a = static_cast<const unsigned char *>(p);
	return a >= heap && a < heap + sizeof heap;
}
} // namespace

extern "C" {
void *malloc(std::size_t n)
{
	calls++;
	return bump(n ? n : 1);
}
void free(void *p)
{
	if (p && !mine(p)) {
		static const char msg[] = "own_malloc_cxx: free() of a block that is not mine\n";
		(void)!write(2, msg, sizeof msg - 1);
		abort();
	}
}
void *calloc(std::size_t n, std::size_t m)
{
	if (m && n > static_cast<std::size_t>(-1) / m)
		return nullptr;
	void *p = malloc(n * m);
	if (p)
		std::memset(p, 0, n * m);
	return p;
}
void *realloc(void *p, std::size_t n)
{
	void *q = malloc(n);
	if (q && p && mine(p)) /* copies past p's end: fine inside the heap */
		std::memcpy(q, p, n);
	return q;
}
}

int main()
{
	unsigned long before = calls;
	char *blocks[1000];
	for (auto &b : blocks) {
		b = new char[64];
		b[0] = 1;
	}
	unsigned long mine_n = calls - before;
	for (auto b : blocks)
		free(b);
	std::printf("own malloc served %lu of 1000\nok\n", mine_n);
	return 0;
}
