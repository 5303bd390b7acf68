#include <iostream>
#include "greet.hpp"
int main() {
  std::cout << greet("memgate") << " " << sum_of_squares(10) << "\n";
  return 0;
}
