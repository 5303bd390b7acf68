// The future-max envelope E(x) of a job (core/job.hpp Envelope): learned
// from the recorded memory profiles of its runs, combined over runs as a
// robust upper envelope, and read by admission at the job's progress x.
// Pure.
#pragma once

#include <vector>

#include "core/job.hpp"

namespace memgate {

// Points of a learned envelope: x = 0, 1/31, ..., 1.
constexpr int kEnvelopePoints = 32;
// Points a stored envelope may have (history export v2 checks it).
constexpr int kEnvelopeMinPoints = 2;
constexpr int kEnvelopeMaxPoints = 64;

// One run's envelope from its profile, and its fall (Envelope::fall_x;
// a profile that never falls below half its peak after reaching 90% of it
// has none) (t relative to the run's start,
// time-ordered). On the job's CPU clock where every point has one
// (MemSample::cpu_s, the last point's the run's CPU time): admission
// reads x as CPU progress, and a run slowed for a stretch (shared cores,
// a freeze) would otherwise show its peak at another share of its life
// than its progress had it, later (held too long) or earlier (released
// too soon). Else on wall time: `duration_s` is the run's wall time; 0
// takes the last sample's time. Memory between two samples is taken as the higher of
// them, so E(x) also counts the last sample at or before x: never below
// the truth; likewise its climb (Envelope::rise) counts the first sample
// at or after x. Empty for an empty profile or a zero peak.
Envelope envelope_of(const std::vector<MemSample>& profile, double duration_s = 0);

// The upper envelope over several runs, robust to one noisy run: at each
// point the second-highest value of three or more runs, the highest of
// one or two; then made non-increasing and 1 at x = 0; its fall the
// earliest of theirs, unknown if one run's is; its climb the highest of
// theirs at each point, unknown if one run's is. Empty runs are skipped;
// all empty gives an empty envelope.
Envelope combine_envelopes(const std::vector<Envelope>& runs);

// Nearest rank, rounding up, so that small groups lean high; q is
// clamped to [0, 1]. 0 for an empty v. Reorders v.
double rank_quantile(std::vector<double>& v, double q);

// A group's envelope (the predictor's similar stems and klass
// statistics): at each point the rank quantile q of its members' values
// (as rank_quantile: rounding up, so a small group leans high; the
// highest of two), then made non-increasing and 1 at x = 0. A member
// without an envelope counts as high to the end. Empty for no members.
Envelope quantile_envelope(const std::vector<const Envelope*>& members, double q);

// The step an older record's two numbers make: the peak until
// `peak_over_frac`, `after_frac` (of the peak) from there on. Empty when
// the step says nothing (peak_over_frac >= 1, or nothing known after it).
Envelope step_envelope(double peak_over_frac, double after_frac);

// E(x) as a fraction of the peak: the value of the last point at or
// before x (the envelope holds for all progress from a point on). 1 for
// an empty envelope; x is clamped to [0, 1].
double envelope_at(const Envelope& e, double x);

// The prediction's envelope: its own, else the step of its
// peak_over_frac and after_peak.
Envelope envelope_for(const Prediction& p);

// envelope_at(envelope_for(p), x) without building the envelope: what
// the governor reads for every running job at every step.
double envelope_at(const Prediction& p, double x);

// Where the prediction's envelope peaks, as far as it knows: the
// progress of its last point at 1 (1 when it never declines). Does not
// copy it.
double envelope_peak_end(const Prediction& p);

// Whether the prediction's envelope falls below 1: what the job holds
// past its peak then depends on its progress. Does not copy it.
bool envelope_declines(const Prediction& p);

// The most the job still used once its memory had first halved from its
// peak: E at the first point at or after its fall (Envelope::fall_x).
// -1 when the envelope has no fall.
double envelope_after_fall(const Envelope& e);

// What the prediction's envelope gives back by the job's end, in bytes:
// the peak less its last point (0 when it does not decline).
Bytes envelope_gives_back(const Prediction& p);

// A stored envelope made safe to use: values clamped to [0, 1], made
// non-increasing, 1 at x = 0. Empty when it has too few or too many
// points or a value that is not a number. Its fall (Envelope::fall_x)
// where it is in [0, 1], unknown otherwise.
Envelope sanitized_envelope(const std::vector<double>& at, double fall_x = -1);

}  // namespace memgate
