// What `--help` says and what a mistyped word gets: the usage lines, the
// examples, the synopsis (which README's "Usage" block copies; a test
// compares them) and "did you mean".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace memgate {

// Gives `cmd` a usage line `memgate <cmd> [OPTIONS] <tail>` and an
// "Examples:" footer, both shown by `memgate <cmd> --help`.
void describe_command(CLI::App* cmd, const std::string& tail, const std::vector<std::string>& examples);

// The top-level help: the synopsis of every subcommand and the examples.
void describe_app(CLI::App& app, const std::vector<std::string>& examples);

// One line per subcommand, `memgate <cmd> [--option METAVAR]... <tail>`,
// wrapped at 79 columns: the block `memgate --help` prints under "Usage:".
std::string synopsis(const CLI::App& app);

// The candidate nearest to `word` by edit distance (transpositions count
// one), if it is near enough to be a likely typo.
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates);

// A mistyped subcommand or option in `args` (argv without argv[0], cut at
// "--"): the error to print, with "did you mean" where one is near.
std::optional<std::string> unknown_word(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace memgate
