// lambdas.cc: a C++ program whose debug information is large for its
// code, for bench/suites/report.sh: 300 distinct lambdas stored in
// std::function, each inlining std::string, std::to_string and std::map
// code, in one compilation unit that also pulls in <regex>. Built with
// g++ -O2 -g, its one CU holds thousands of inlined instances among the
// types of <regex>, <map> and <functional>, which is what made `report`
// slow when every address walked the CU from its start.
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

using table = std::map<int, std::string>;

// One lambda: allocates through std::string, std::to_string, operator+
// and the map's node, all inlined into its operator().
#define LAMBDA(n)                                                      \
	fns.emplace_back([](table &m, const std::regex &re) {          \
		std::string s(n % 40 + 20, char('a' + n % 26));        \
		m[n] = s + std::to_string(n * 7919);                   \
		return std::regex_search(m[n], re);                    \
	});
#define L10(b)                                                         \
	LAMBDA(b##0) LAMBDA(b##1) LAMBDA(b##2) LAMBDA(b##3) LAMBDA(b##4) \
	LAMBDA(b##5) LAMBDA(b##6) LAMBDA(b##7) LAMBDA(b##8) LAMBDA(b##9)

int main()
{
	std::vector<std::function<bool(table &, const std::regex &)>> fns;
	L10(1) L10(2) L10(3) L10(4) L10(5) L10(6) L10(7) L10(8) L10(9)
	L10(10) L10(11) L10(12) L10(13) L10(14) L10(15) L10(16) L10(17)
	L10(18) L10(19) L10(20) L10(21) L10(22) L10(23) L10(24) L10(25)
	L10(26) L10(27) L10(28) L10(29) L10(30)
	std::regex re("[a-f]+[0-9]{3}");
	size_t hits = 0;
	for (int round = 0; round < 3; round++) {
		table m;
		for (auto &f : fns)
			hits += f(m, re);
	}
	std::printf("%zu lambdas, %zu matches\n", fns.size(), hits);
	return 0;
}
