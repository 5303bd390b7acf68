// The Python module: binds the functions of the other files.
#include "ops.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "memgate's test torch extension";
  m.def("add_scaled", &add_scaled, "a + alpha * b");
  m.def("sum_of_squares", &sum_of_squares, "sum of t * t");
  m.def("triangle", &triangle, "1 + 2 + ... + n");
}
