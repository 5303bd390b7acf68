#include "run/knowledge.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "history/pending.hpp"
#include "history/profiles.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/trusted_dir.hpp"
#include "wrap/parts.hpp"

namespace memgate {

namespace {

// How long the history database may keep a run waiting for its lock, at
// the start and again at the end. Another build's write takes
// milliseconds; anything longer is a lock held on purpose or a hung
// process, and the record then goes to a side file (history/pending.hpp)
// instead of stalling the build for the default 10 s and being lost.
constexpr int kHistoryBusy_ms = 1000;

}  // namespace

// The priors this copy ships (<parts>/priors/*.json, e.g. flash-attn 2.x
// kernels), before anything else that may replace them: imported
// profiles, then --prior. They are read only from a trusted directory, as
// the other parts are used (wrap/parts.hpp): whoever could write them
// would choose what root admits. A shipped file that cannot be read is
// this install's fault, not the user's: a warning, and the run goes on.
void Knowledge::load_shipped_priors(std::vector<std::string>& degraded) {
  const std::string dir = join_path(find_parts().dir, "priors");
  if (!path_exists(dir)) return;
  std::string real;
  auto fd = open_trusted_dir(dir, ::geteuid(), false, 0755, &real);
  auto names = fd ? list_entries(fd->get(), real) : Result<std::vector<std::string>>(Error{fd.error()});
  if (!names) {
    log::warn("shipped priors not used: {}", names.error());
    degraded.push_back("shipped priors not used: " + names.error());
    return;
  }
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    auto file = open_trusted_file(join_path(real, name), ::geteuid());
    auto profiles = file ? read_profiles_fd(file->fd.get(), file->path, PredictionSource::prior)
                         : Result<std::vector<JobProfile>>(Error{file.error()});
    if (!profiles) {
      log::warn("shipped prior not used: {}", profiles.error());
      continue;
    }
    for (const JobProfile& p : *profiles) predictor_.add_profile(p);
  }
}

// A history the user named in a directory that does not exist is a typo
// to stop at; one that is locked, corrupt beyond repair or unwritable is
// not the build's problem: it runs without.
bool Knowledge::open_history(const RunOptions& opt, const std::string& cwd, const std::string& command,
                             std::vector<std::string>& degraded) {
  load_shipped_priors(degraded);
  history_path_ = History::resolve_path(opt.history);
  if (auto s = History::check_location(history_path_); !s) {
    log::error("{}", s.error());
    return false;
  }
  auto h = History::open(history_path_, kHistoryBusy_ms);
  if (!h) {
    log::warn("running without history: {}", h.error());
    return true;
  }
  history_ = std::move(*h);
  if (int n = merge_pending(*history_, history_path_))
    log::info("merged {} build record(s) saved beside the history while it was locked", n);
  for (const JobRecord& j : history_->jobs_for_prediction(20)) predictor_.add_history(j);
  for (const JobProfile& p : history_->imported_profiles()) predictor_.add_profile(p);
  // A failed or interrupted build stopped part way: its count is no total.
  // A configure step or a relink is a different job list from the build.
  History::BuildQuery ref{cwd, command, true};
  ref.succeeded = true;
  ref.full_only = true;
  if (auto last = history_->last_build_id(ref)) {
    if (auto b = history_->load_build(*last)) {
      progress_.jobs = static_cast<int>(b->jobs.size());
      progress_.wall_s = b->wall_s();
      for (const JobRecord& j : b->jobs) progress_.job_s += std::max(0.0, j.wall_s());
    }
  }
  return true;
}

// A prior seeds the predictor and nothing else: it is never written to
// history (that is what `history import` is for). Named by --prior, else
// MEMGATE_PRIOR; a file that cannot be used stops the run before the
// build starts, since the user asked for it.
bool Knowledge::load_prior(const RunOptions& opt) {
  std::string path = opt.prior;
  if (path.empty())
    if (const char* env = std::getenv("MEMGATE_PRIOR")) path = env;
  if (path.empty()) return true;
  auto profiles = read_profiles_file(path, PredictionSource::prior);
  if (!profiles) {
    log::error("--prior: {}", profiles.error());
    return false;
  }
  for (const JobProfile& p : *profiles) predictor_.add_profile(p);
  log::debug("prior {}: {} job profiles", path, profiles->size());
  return true;
}

}  // namespace memgate
