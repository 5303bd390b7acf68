// Placeholder until the history issue lands the real analysis.
#include "predict/identity.hpp"

namespace memgate {
namespace {
std::string basename_of(const std::string& p) {
  auto pos = p.find_last_of('/');
  return pos == std::string::npos ? p : p.substr(pos + 1);
}
}  // namespace

CommandInfo analyze_command(const std::vector<std::string>& argv, const std::string& cwd) {
  (void)cwd;
  CommandInfo info;
  info.key.tool = argv.empty() ? "unknown" : basename_of(argv[0]);
  for (size_t i = 1; i + 1 < argv.size(); ++i)
    if (argv[i] == "-o") info.output = argv[i + 1];
  info.key.identity = info.key.tool + ":" + info.output;
  info.key.klass = info.key.tool;
  info.key.stem = basename_of(info.output);
  return info;
}

}  // namespace memgate
