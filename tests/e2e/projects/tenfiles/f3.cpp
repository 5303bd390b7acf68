// One of ten translation units of a small library, for the existing-directory test.
#include <map>
#include <string>
#include <vector>

namespace tenfiles {
int f3(int n) {
  std::map<std::string, std::vector<int>> m;
  for (int k = 0; k < n; ++k) m["k" + std::to_string(k % 3)].push_back(k * 3);
  int sum = 0;
  for (const auto& [key, values] : m) sum += static_cast<int>(key.size() + values.size());
  return sum;
}
}  // namespace tenfiles
