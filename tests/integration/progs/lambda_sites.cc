// lambda_sites.cc: lambdas as allocation sites, for lambda_sites_test.sh.
// Built with -O2 (CMakeLists.txt), GCC inlines every lambda below into its
// std::for_each, and its DWARF then names each one only "operator()";
// built with -DOUTLINE, each lambda is an out-of-line function named by
// its ELF symbol. Either way each lambda allocates a known number of
// bytes with new[], and a report must name it as the demangler names the
// out-of-line copy, each lambda in a row of its own:
//
//   app::Store::fill::{lambda(int)#1}::operator()             100000
//   app::many::{lambda(int)#1}::operator()                    200000
//   app::many::{lambda(int)#2}::operator()                    300000
//   app::many::{lambda(int const&)#1}::operator()             400000
//   app::many::{lambda(int)#3}::operator()        (mutable)   500000
//   app::many::{lambda(int)#4}::operator()::{lambda(int)#1}::operator()
//                                                 (nested)   1200000
//   app::many::{lambda(auto:1)#1}::operator()<>   (generic)   800000
//     (--full-names: operator()<int> 350000, operator()<double> 450000)
//
// as the Itanium C++ ABI numbers lambdas, among those of the same
// parameter types in the same function, the (int const&) one being #1 of
// its kind (clang, GCC 13 and later); GCC 12 numbers all of a function's
// lambdas in one sequence: #1, #2, (int const&)#3, #4, #5, (auto:1)#6.
#include <algorithm>
#include <cstdio>

#ifdef OUTLINE
#define NI __attribute__((noinline))
#else
#define NI
#endif

enum { N = 1000 };
static int ids[N];
static char *keep[8][N];

namespace app {
struct Store {
	char **rows;
	void fill()
	{
		std::for_each(ids, ids + N, [this](int x) NI { rows[x] = new char[100]; });
	}
};

void many()
{
	std::for_each(ids, ids + N, [](int x) NI { keep[0][x] = new char[200]; });
	std::for_each(ids, ids + N, [](int x) NI { keep[1][x] = new char[300]; });
	std::for_each(ids, ids + N, [](const int &x) NI { keep[2][x] = new char[400]; });
	int k = 0;
	std::for_each(ids, ids + N, [k](int x) mutable NI {
		keep[3][x] = new char[500];
		k++;
	});
	std::for_each(ids, ids + 2, [](int x) NI {
		std::for_each(ids, ids + N, [x](int y) NI { keep[4 + x][y] = new char[600]; });
	});
	auto generic = [](auto x) NI {
		keep[7][static_cast<int>(x)] = new char[sizeof x == sizeof(int) ? 700 : 900];
	};
	for (int i = 0; i < N / 2; i++) {
		generic(i);
		generic(static_cast<double>(i + N / 2));
	}
}
} // namespace app

int main()
{
	for (int i = 0; i < N; i++)
		ids[i] = i;
	app::Store s{keep[6]};
	s.fill();
	app::many();
	std::printf("%d\n", keep[5][N - 1] != nullptr);
	return 0;
}
