// Placeholder: the wrapper issue fills this in.
#include "wrap/wrapper.hpp"

namespace memgate {

std::optional<std::string> shim_tool_name(const char*) { return std::nullopt; }
int shim_main(const std::string&, int, char**) { return 127; }
int wrap_main(int, char**) { return 127; }

}  // namespace memgate
