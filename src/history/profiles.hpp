// The portable history file: learned job profiles keyed by identity, for
// `memgate history export FILE`, `history import FILE` and `run --prior
// FILE` (README "Shared history"). A team or a CI fleet shares one, so a
// new machine's first build starts warm.
//
//   {"format": "memgate-profiles", "version": 2,
//    "profiles": [{"identity": "nvcc:compile:src/flash_fwd...cu->...o[sm_80]",
//                  "tool": "nvcc", "klass": "nvcc:compile[sm_80]",
//                  "stem": "flash_fwd_hdim128_fp16_sm80", "cpu_weight": 1,
//                  "peak_bytes": 4300000000, "wall_s": 141, "cpu_s": 141,
//                  "peak_over_frac": 0.3, "after_peak_bytes": 1100000000,
//                  "envelope": [1, 1, ..., 0.26, 0.25], "runs": 3}, ...]}
//
// Version 2 added "envelope": the future-max curve E(x) (core/job.hpp
// Envelope), 2 to 64 fractions of the peak at even steps of progress,
// what admission reads. Version 1 files (no envelope) still import: their
// peak_over_frac and after_peak_bytes become a step envelope.
//
// Nothing in it names a machine or a person: identities are relative by
// construction (predict/identity.hpp), and export leaves out any whose
// identity still holds an absolute path, the user's name or a component
// of the home directory. No cwd, no command line, no time stamps.
// Reading is strict: a file that is not JSON, not a profile file, of
// another format version, or with one malformed profile is refused
// whole, with an error that says which.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "util/result.hpp"

namespace memgate {

inline constexpr int kProfilesVersion = 2;
// The oldest format version read.
inline constexpr int kProfilesOldestVersion = 1;

// One profile per identity from recorded jobs (oldest first): the newest
// complete successful runs (up to 3), peak the max of them, times the
// median, the envelope their robust upper envelope (predict/envelope.hpp).
// Failed, killed and probe jobs are left out.
std::vector<JobProfile> summarize_profiles(const std::vector<JobRecord>& jobs);

// Whether an identity can leave this machine: no absolute path, and no
// path component equal to one of `private_words` (the user's name, the
// components of the home directory other than "home").
bool is_portable(std::string_view identity, const std::vector<std::string>& private_words);
// The user's name and home directory components, from the environment
// and the password database.
std::vector<std::string> private_words();

std::string encode_profiles(const std::vector<JobProfile>& profiles);
// `origin` is what the profiles count as once read (imported or prior).
Result<std::vector<JobProfile>> decode_profiles(std::string_view text, PredictionSource origin);

// The file, at most 64 MiB, a regular file. Errors name the path. Its
// JSON may nest at most 16 deep and hold at most 2 Mi values, checked
// before a parse tree is built (util/json.hpp).
Result<std::vector<JobProfile>> read_profiles_file(const std::string& path, PredictionSource origin);
// The same from an open file (not closed); `path` names it in errors.
Result<std::vector<JobProfile>> read_profiles_fd(int fd, const std::string& path, PredictionSource origin);
// Written to a temp file beside it and renamed over
// (util/atomic_file.hpp), so a reader never sees half a file, a symlink at
// PATH is replaced, not followed, and a directory others may swap is refused.
Status write_profiles_file(const std::string& path, const std::vector<JobProfile>& profiles);

}  // namespace memgate
