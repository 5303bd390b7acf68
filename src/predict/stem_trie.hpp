#pragma once
// The similarity groups of the predictor's rung 4 (predictor.hpp): per
// klass (and klass family), a trie over the tokens of each job's stem.
// Every node holds the entries of all jobs below it, so the root is the
// whole klass and a deeper node the jobs whose stems share more tokens.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/job.hpp"
#include "predict/envelope.hpp"

namespace memgate {

// A stem cut at every character that is not a letter or digit.
std::vector<std::string> stem_tokens(const std::string& stem);
double median_of(std::vector<double> v);

// What one group says: quantiles of its peaks per unit of CPU weight, and
// medians of its times.
struct GroupStats {
  double peak_w = 0;
  double wall_s = 0;
  double cpu_s = 0;
  double peak_over_frac = 1.0;
  double after_w = 0;
  // What its members still use from each point of their progress on, as
  // fractions of their own peaks: the same quantile, point by point
  // (envelope.hpp quantile_envelope). A group's prediction releases past
  // its peak as its members did, not by the step of peak_over_frac and
  // after_w, which holds 70-87% of a real nvcc job's peak to its end.
  Envelope envelope;
  std::size_t n = 0;
  bool in_build = false;
  bool only_profiles = false;  // no run seen here among them: a guess from elsewhere
};

// What one identity contributes to the similarity groups: its latest
// complete run (or its profile), peaks per unit of CPU weight.
struct StemEntry {
  double peak_w = 0;
  double wall_s = 0;
  double cpu_s = 0;
  double peak_over_frac = 1.0;
  double after_w = 0;
  bool in_build = false;
  bool profile = false;  // from a profile (imported, prior), not a run seen here
  // Its envelope, shared by its entries at every depth of both tries;
  // null: high to its end.
  std::shared_ptr<const Envelope> envelope;
};

struct StemTrie {
  std::unordered_map<int, StemEntry> entries;  // by interned identity
  std::unordered_map<std::string, std::unique_ptr<StemTrie>> children;

  // A group's statistics are quantiles over all its entries, so working
  // them out after every finished job made a build of N similar jobs cost
  // N^2: a group of more than kExactBelow entries is worked out again once
  // the entries put since number a sixteenth of it (one more in thousands
  // moves no quantile), or when one changes what kind of group it is.
  static constexpr std::size_t kExactBelow = 64;
  void put(int id, const StemEntry& e);
  const GroupStats& stats(double q) const;
  bool has_runs() const;

  // Tokens every known job of the group shares, once it has this many,
  // are the project's prefix (flash_, fa_flash_, libfoo_): however many
  // there are, they count as one token of the depth two stems must share,
  // so a two-token prefix does not make every pair of jobs alike. With
  // fewer jobs, a shared prefix is all there is to go by.
  static constexpr std::size_t kSharedPrefixJobs = 4;
  // The deepest node along `tokens` that has entries, at least
  // `min_entries` of them (with `runs`: runs seen here, not only
  // profiles), and its depth.
  std::pair<const StemTrie*, int> deepest(const std::vector<std::string>& tokens, bool runs,
                                          std::size_t min_entries = 1) const;

 private:
  mutable std::optional<GroupStats> cache_;
  mutable std::size_t stale_ = 0;  // entries put since the cache was worked out
};

}  // namespace memgate
