// Packing's timeline: the memory and slots free now and what the running
// (and newly admitted) jobs are predicted to give back, and when. As the
// head's reservation (AdmissionPolicy::packing, governor.hpp) it tells
// the earliest moment the first job that cannot start fits, and whether
// a later job that would delay it starts; stretched, it is what a timed
// start's climb is checked against. Pure arithmetic on predictions.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/job.hpp"
#include "governor/gov_job.hpp"

namespace memgate {

class Shadow {
 public:
  Shadow(const GovJob& head, Bytes need, Bytes free_mem, int free_slots, int slots, double now);
  // Each running job's releases are added unsorted; seal() sorts them
  // once and works out when the head fits (one sort over every running
  // job, not an insertion and a walk per job: 512 running jobs made a
  // step quadratic).
  void add_running(const GovJob& r, Bytes held, double now);
  void seal();
  // The earliest moment the head fits (infinity: cannot be told).
  double head_time() const;
  bool by_cpu() const { return by_cpu_; }
  // Whether a job that fits now should start: it does not delay the
  // head, or, by the predictions, starting it now ends the waiting jobs
  // no later than making it wait behind the head: the two jobs, or,
  // while at most kLookAhead jobs wait (`queue`), all of them. If so,
  // it is counted in (it holds its memory and slots, and gives them
  // back as predicted).
  bool admits(const GovJob& j, Bytes need, double now, std::span<GovJob* const> queue);
  // Every release f times as far from now: a timeline that counts on
  // the running jobs' falls with room for them to come late.
  void stretch(double f);
  // Whether a job of `need` bytes whose memory climbs as `rise` (the
  // most it has used by each point of its progress, as fractions of
  // `need`), started now and through all of its progress within
  // `climb_s` seconds, stays within what is free at every moment as
  // the running jobs give their memory back (the job's fall is not
  // counted: what is free only grows).
  bool climbs_in_time(const std::vector<double>& rise, Bytes need, double climb_s) const;

 private:
  struct Release {
    double t;
    Bytes mem;
    int slots;
  };
  // A waiting job as the look-ahead places it.
  struct Planned {
    const Prediction* pred;
    Bytes need;
    int w;
  };
  // How many waiting jobs the look-ahead weighs, the head among them.
  // Weighed by the two jobs alone, the other jobs go wherever the
  // choice leaves them: on warm real nvcc kernels, a forward kernel
  // held for the second backward one left one core idle for the first
  // 150 s, and the last kernel ran alone at the end (bench/real-kernels,
  // 1.29-1.33x the CPU bound; docs/envelope.md).
  static constexpr std::size_t kLookAhead = 8;
  // The waiting jobs but the head, in queue order, `j` among them; none
  // when more than kLookAhead wait with the head, or one of them but `j`
  // has no predicted duration.
  std::vector<const GovJob*> look_ahead(std::span<GovJob* const> queue, const GovJob& j) const;
  // When the last of the jobs ends if `first` (if any) starts now and
  // each of `order` then starts in turn, at the first moment it fits
  // after the one before it, on this timeline (infinity: one never
  // fits). Not the running jobs' ends: they are the same either way.
  double finish(const Planned* first, const std::vector<Planned>& order) const;
  // The earliest moment >= `from` a job of `need` bytes and `w` slots
  // fits, with `extra` releases and `taken` held from now.
  double fit_time(Bytes need, int w, double from, const std::vector<Release>& extra, Bytes taken_mem,
                  int taken_slots) const;
  static void releases_of(const Prediction& p, Bytes need, int w, double start, std::vector<Release>& out);
  // What the envelope gives back of `held` (of predicted `peak`) from
  // progress x0 at time t0 on, at the predicted speed; `held` ends as
  // what is left.
  static void envelope_releases(const Prediction& p, Bytes peak, Bytes& held, double x0, double t0,
                                std::vector<Release>& out);
  const GovJob* head_;
  Bytes need_;
  int w_;
  Bytes mem_;
  int free_slots_;
  int slots_;
  bool by_cpu_;
  double now_;
  double head_t_;
  std::vector<Release> releases_;  // sorted by time
};

}  // namespace memgate
