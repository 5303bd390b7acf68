#include <numeric>
#include <vector>
#include "greet.hpp"
int sum_of_squares(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 1);
  return std::accumulate(v.begin(), v.end(), 0, [](int acc, int x) { return acc + x * x; });
}
