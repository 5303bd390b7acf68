// What governor.cpp and governor_admit.cpp share: byte scaling and the
// margins the reservation rules use. Not part of the governor's interface.
#pragma once

#include <cmath>
#include <limits>

#include "core/job.hpp"

namespace memgate::governor_detail {

inline Bytes scale(Bytes b, double f) { return static_cast<Bytes>(std::llround(static_cast<double>(b) * f)); }

// A job whose attempt was killed used at least what we saw, and probably
// more (it was still growing): the next attempt must reserve more.
constexpr double kRequeueGrowth = 1.25;
// A job that outgrew its prediction may still be growing.
constexpr double kOvershootGrowth = 1.2;
// Margin on what a job past its peak still holds.
constexpr double kAfterPeakMargin = 1.1;
// With a job frozen, how far (a fraction of the limit) the build's memory
// must grow past where the last freeze left it before another is frozen.
constexpr double kFreezeRegrowth = 0.01;
// A room start (Governor::room_start_open): the least share of its guess
// the room must hold, and how close (a fraction of the limit) the job may
// come to the room's edge before it is frozen.
constexpr double kRoomShare = 0.5;
constexpr double kRoomSlack = 0.03;
// Least release past a job's peak worth tracking: reading the job's CPU
// time at every sample, and scheduling its steps in packing's estimate.
constexpr Bytes kReleaseWorthTracking = 64 * MiB;
constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace memgate::governor_detail
