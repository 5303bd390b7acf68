// Per-machine defaults: an optional file,
// $XDG_CONFIG_HOME/memgate/config, else ~/.config/memgate/config, of
// `key = value` lines; `#` starts a comment (at the start of a line, or
// after a blank). Keys: memory, reserve, jobs (defaults of `run`'s
// --memory, --reserve, --jobs) and history (every subcommand's
// --history). Precedence: flag > environment (MEMGATE_HISTORY) > this
// file > built-in default. An unknown key, a bad value, a key set twice or
// a file over kMaxConfigBytes is an error naming the file and the line:
// a default nobody notices is wrong is worse than a clear stop.
// `memgate wrap` (every compiler call) never reads it.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/doctor.hpp"
#include "util/result.hpp"

namespace memgate {

// More CPU slots than any machine has; beyond it `--jobs` is a typo (and
// the MAX_JOBS memgate derives from it must stay a small number).
inline constexpr int kMaxJobs = 65536;

inline constexpr std::size_t kMaxConfigBytes = 64 * 1024;

struct MachineConfig {
  std::string file;                    // where it was read from; "" when there is none
  std::optional<std::string> memory;   // a SIZE, as --memory takes it
  std::optional<std::string> reserve;  // a SIZE, as --reserve takes it
  std::optional<int> jobs;             // 1..kMaxJobs
  std::optional<std::string> history;  // absolute (a leading ~/ is the home directory)
  std::map<std::string, int> line_of;  // the line each key set was set on
};

// $XDG_CONFIG_HOME/memgate/config (if absolute), else $HOME's (or the
// password database's home) .config/memgate/config; "" if neither is known.
std::string config_path();

// Pure: `file` only names the file in errors ("FILE:LINE: ...").
Result<MachineConfig> parse_config(std::string_view text, const std::string& file);

// A missing file is an empty config; anything else that cannot be read,
// is not a regular file or is larger than kMaxConfigBytes is an error, and
// so is a file that is not trusted (util/trusted_dir.hpp: it and every
// directory above it owned by root or the effective user, and writable by
// nobody else): read as root, it would let its writer choose root's files.
Result<MachineConfig> load_config(const std::string& path);

// The config of this process: cli_main loads it once before any
// subcommand runs (empty until then and for `wrap`).
const MachineConfig& machine_config();
void set_machine_config(MachineConfig config);

// Why the config file was ignored ("" when it was read or is absent):
// doctor and history run on without it and say so; run and plan refuse.
const std::string& machine_config_error();
void set_machine_config_error(std::string error);

// Pure: where each of run's settings (reserve, memory, jobs, history) comes
// from with `config` and MEMGATE_HISTORY = `env_history`; `default_history`
// is the default database path, `cores` the usable cores.
std::vector<doctor::Setting> setting_origins(const MachineConfig& config, const std::string& env_history,
                                             const std::string& default_history, int cores);

// What `memgate --help` says about the file (README says the same).
inline constexpr const char* kConfigHelp =
    "Defaults per machine: $XDG_CONFIG_HOME/memgate/config (else\n"
    "~/.config/memgate/config), 'key = value' lines, '#' comments. Keys: memory,\n"
    "reserve, jobs (memgate run's --memory, --reserve, --jobs) and history (every\n"
    "--history). A flag beats the environment (MEMGATE_HISTORY), which beats the\n"
    "file, which beats the default.";

// What to hand History::resolve_path for a --history flag: the flag if
// given, else "" when MEMGATE_HISTORY is set (it wins over the file), else
// the file's `history`, else "" (the default).
std::string history_flag_or_config(const std::string& flag);

}  // namespace memgate
