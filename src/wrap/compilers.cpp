#include "wrap/compilers.hpp"

namespace memgate {

ToolKind classify_program(std::string_view path, std::string_view extra_launchers) {
  std::string p(path), extra(extra_launchers);
  return static_cast<ToolKind>(mg_classify_program(p.c_str(), extra.empty() ? nullptr : extra.c_str()));
}

bool is_gated_command(const std::vector<std::string>& argv, std::string_view extra_launchers) {
  if (argv.empty()) return false;
  // mg_is_job only looks at argv[0] and argv[1].
  char* args[3] = {const_cast<char*>(argv[0].c_str()), argv.size() > 1 ? const_cast<char*>(argv[1].c_str()) : nullptr,
                   nullptr};
  std::string extra(extra_launchers);
  return mg_is_job(argv[0].c_str(), args, extra.empty() ? nullptr : extra.c_str()) != 0;
}

}  // namespace memgate
