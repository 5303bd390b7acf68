// What a run knows before its first job, and learns from as it goes: the
// Predictor, seeded from the priors this copy ships, the history
// database (its jobs and imported profiles) and --prior, in that order,
// each later one replacing what it names; the database itself, which the
// build's record goes back into; and the last complete, successful build
// of the same command here, whose job count is the progress total.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "history/history.hpp"
#include "predict/predictor.hpp"
#include "report/status.hpp"
#include "run/runner.hpp"

namespace memgate {

class Knowledge {
 public:
  // The shipped priors, then the history --history (or MEMGATE_HISTORY,
  // or the default) names, for the build of `command` in `cwd`. False: a
  // history the user named where it cannot be (an error, logged); one
  // that cannot be opened is a warning, and the run goes on without.
  // What this install could not use goes into `degraded`.
  bool open_history(const RunOptions& opt, const std::string& cwd, const std::string& command,
                    std::vector<std::string>& degraded);
  // --prior, else MEMGATE_PRIOR: for this run only, never written to
  // history. False: the file the user named cannot be used (logged).
  bool load_prior(const RunOptions& opt);

  Predictor& predictor() { return predictor_; }
  History* history() const { return history_.get(); }  // null: running without
  const std::string& history_path() const { return history_path_; }
  const ProgressReference& progress() const { return progress_; }

 private:
  void load_shipped_priors(std::vector<std::string>& degraded);

  Predictor predictor_;
  std::unique_ptr<History> history_;
  std::string history_path_;
  ProgressReference progress_;
};

}  // namespace memgate
