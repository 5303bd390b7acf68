// The build as one self-contained HTML page: no network, no scripts, no
// external fonts; everything is inline SVG and CSS, so it opens anywhere
// and can be attached to a bug report.
//
// It holds a summary table (the numbers of the end summary), a chart of
// the build's memory against its budget with the governor's events, a
// timeline with one lane per concurrent slot, and the heaviest jobs.
//
// Timeline bars: every job has exactly one <rect class="job ..."> bar, its
// final attempt. Earlier attempts of a requeued or OOM-killed job are
// drawn as <rect class="attempt ..."> bars in the lanes they ran in, so a
// count of ".job" is the number of jobs. Each bar's <title> tooltip gives
// the identity, peak (and predicted) memory, CPU seconds and time waited.
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
