// The build as one self-contained HTML page: no network, no scripts, no
// external fonts; everything is inline SVG and CSS, so it opens anywhere
// and can be attached to a bug report.
//
// Top to bottom:
//  - the first screen: how close the build came to its budget (peak
//    against budget, a gauge), what limited it (the summary's verdict and
//    what memgate did), its totals, and the five heaviest jobs with how
//    long each ran;
//  - the time view (html_time.hpp): the memory chart (used, reserved,
//    budget) directly above the job timeline, on one time axis and in one
//    scroll container;
//  - details: every number of the end summary, and the 20 heaviest jobs.
//
// Timeline bars: every job has exactly one <rect class="job ..."> bar, its
// final attempt. Earlier attempts of a requeued or OOM-killed job are
// drawn as <rect class="attempt ..."> bars in the lanes they ran in, so a
// count of ".job" is the number of jobs. Each bar's <title> tooltip gives
// the identity, peak (and predicted) memory, CPU seconds and time waited;
// a bar wide enough carries its source's name.
//
// Built for 10,000 jobs: integer coordinates, short class names, the
// memory series thinned to at most 2,000 points.
#pragma once

#include <string>
#include <string_view>

#include "core/job.hpp"

namespace memgate {

std::string render_html_report(const BuildRecord& build);

// Text made safe for HTML element content and attribute values.
std::string html_escape(std::string_view text);

}  // namespace memgate
