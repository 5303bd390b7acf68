// The report's time view (html.cpp's helper, not a public interface): the
// memory chart directly above the job timeline, on one time axis.
//
// Both plots are SVGs of the same width inside one horizontally scrolling
// <div class="scroll">, so they scroll together; their y labels (memory
// ticks, event and slot lane names) sit in a fixed column to the left.
// Each plot carries its scale as data attributes (data-x0, data-px-per-s,
// data-t-end, width), the same on both, which the browser test compares.
//
// Memory chart: used (the build's recorded samples), reserved (derived
// from the jobs, see reserved_series) and the budget, with a legend, and
// the peak marked. Timeline: a time-tick row, one lane per governor event
// kind that occurred (none for kinds that did not), one lane per
// concurrent slot, one labelled bar per job coloured by its absolute peak
// (chart.hpp's bands).
#pragma once

#include <string>

#include "core/job.hpp"
#include "report/summary.hpp"

namespace memgate {

void append_time_view(std::string& out, const BuildRecord& build, const BuildFacts& facts);

// The CSS the time view needs (appended to the page's <style>).
std::string time_view_style();

}  // namespace memgate
