#include "predict/stem_trie.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "predict/envelope.hpp"

namespace memgate {

std::vector<std::string> stem_tokens(const std::string& stem) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : stem) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void StemTrie::put(int id, const StemEntry& e) {
  entries[id] = e;
  ++stale_;
  const bool new_kind = cache_ && ((!e.profile && cache_->only_profiles) || (e.in_build && !cache_->in_build));
  if (new_kind || entries.size() < kExactBelow || stale_ * 16 >= entries.size()) cache_.reset();
}

const GroupStats& StemTrie::stats(double q) const {
  if (cache_) return *cache_;
  stale_ = 0;
  std::vector<double> peaks, walls, cpus, pofs, afters;
  std::vector<const Envelope*> envelopes;
  GroupStats s;
  // Runs seen here (history, this build) outweigh every profile: a prior
  // names jobs like these, the runs measured them.
  s.only_profiles = std::all_of(entries.begin(), entries.end(), [](const auto& kv) { return kv.second.profile; });
  for (const auto& [id, e] : entries) {
    if (e.profile && !s.only_profiles) continue;
    peaks.push_back(e.peak_w);
    if (e.wall_s > 0) walls.push_back(e.wall_s);
    if (e.cpu_s > 0) cpus.push_back(e.cpu_s);
    pofs.push_back(e.peak_over_frac);
    afters.push_back(e.after_w);
    envelopes.push_back(e.envelope.get());
    s.in_build = s.in_build || e.in_build;
  }
  s.n = peaks.size();
  s.peak_w = rank_quantile(peaks, q);
  s.wall_s = median_of(walls);
  s.cpu_s = median_of(cpus);
  s.peak_over_frac = rank_quantile(pofs, q);
  s.after_w = rank_quantile(afters, q);
  s.envelope = quantile_envelope(envelopes, q);
  cache_ = s;
  return *cache_;
}

bool StemTrie::has_runs() const {
  return std::any_of(entries.begin(), entries.end(), [](const auto& kv) { return !kv.second.profile; });
}

std::pair<const StemTrie*, int> StemTrie::deepest(const std::vector<std::string>& tokens, bool runs,
                                                   std::size_t min_entries) const {
  const StemTrie* n = this;
  const StemTrie* best = this;
  int depth = 0, best_depth = 0;
  bool in_prefix = false;
  for (const auto& t : tokens) {
    auto it = n->children.find(t);
    if (it == n->children.end() || it->second->entries.size() < std::max<std::size_t>(1, min_entries)) break;
    n = it->second.get();
    const bool shared = entries.size() >= kSharedPrefixJobs && n->entries.size() == entries.size();
    if (!(shared && in_prefix)) ++depth;
    in_prefix = shared;
    if (!runs || n->has_runs()) {
      best = n;
      best_depth = depth;
    }
  }
  return {best, best_depth};
}

}  // namespace memgate
