// A C++ translation unit for the memory suite's clang workload
// (bench/suites/memory.sh): the standard containers, strings, streams and
// <regex> make the compiler instantiate many templates, so clang (libLLVM
// and libclang-cpp, built without frame pointers) allocates from code
// spread over much of its 100 MiB of text.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

struct Entry {
	std::string name;
	std::vector<int> values;
	std::map<std::string, double> attrs;
};

int main(int argc, char **argv)
{
	std::unordered_map<std::string, std::unique_ptr<Entry>> index;
	std::regex number("[0-9]+(\\.[0-9]+)?");
	for (int i = 1; i < argc; i++) {
		auto e = std::make_unique<Entry>();
		e->name = argv[i];
		std::istringstream in(e->name);
		for (std::string tok; std::getline(in, tok, ',');)
			if (std::regex_match(tok, number))
				e->values.push_back(std::stoi(tok));
		std::sort(e->values.begin(), e->values.end());
		e->attrs["count"] = static_cast<double>(e->values.size());
		index.emplace(e->name, std::move(e));
	}
	std::set<std::string> names;
	for (const auto &kv : index)
		names.insert(kv.first);
	for (const auto &n : names)
		std::cout << n << ' ' << index[n]->attrs["count"] << '\n';
	return 0;
}
