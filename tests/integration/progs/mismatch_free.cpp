/*
 * mismatch_free.cpp: frees blocks through a function of another family
 * than the one that allocated them, as real programs do: malloc then
 * delete, delete[] and sized delete; new then free. Formally undefined in
 * C++, harmless over every allocator alone (each one's delete is its
 * free), so it must stay harmless under the runtime, whose sampled blocks
 * no allocator knows. The blocks are 4 MiB, so at the default rate (512
 * KiB) each is sampled with probability 1 - exp(-8).
 * Prints "mismatch ok" and exits 0.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

int main()
{
	const size_t n = (size_t)4 << 20;
	for (int i = 0; i < 20; i++) {
		char *a = static_cast<char *>(malloc(n));
		char *b = static_cast<char *>(malloc(n));
		char *c = static_cast<char *>(malloc(n));
		char *d = new char[n];
		if (!a || !b || !c)
			return 2;
		memset(a, 1, n);
		memset(d, 2, n);
		::operator delete(a);
		::operator delete[](b);
		::operator delete(c, n);
		free(d);
	}
	puts("mismatch ok");
	return 0;
}
