// A compile's translation-unit size: how many bytes its source is once
// preprocessed. A build memgate has never seen has no history to predict
// from; the size is what its cold predictions scale by (the predictor's
// class statistics per preprocessed byte, and the same source under a new
// identity). `memgate run` asks for it with MEMGATE_TU_SIZE=1 only while
// it has no complete build of the command in that directory, so a warm
// build pays nothing; a cold one pays one preprocessor run per C or C++
// compile, a few percent of the compile, before the job is queued.
//
// Only gcc and clang compiles of one C or C++ source are measured: nvcc's
// memory is cicc's template instantiation, which the preprocessed size
// does not tell, and rustc has no preprocessor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "predict/identity.hpp"
#include "util/size.hpp"

namespace memgate {

// The preprocessor's command for this compile: its argv with -E, the
// output on stdout, and nothing else written (-c, -o F, -MD, -MMD, -MF F,
// -MT T, -MQ T, -Wp,-MD..., -save-temps dropped). None for anything but a
// gcc or clang compile of one C or C++ file. Pure.
std::optional<std::vector<std::string>> preprocess_command(const std::vector<std::string>& argv,
                                                           const CommandInfo& info);

// Runs `exe` with `argv` (no shell) with MEMGATE_JOB=probe, so that
// nothing below it is gated or reported as ungated, and counts what it
// writes to stdout. 0 when it fails, or does not end within `timeout_s`
// (its process group is killed then).
Bytes preprocessed_size(const std::string& exe, const std::vector<std::string>& argv, double timeout_s);

}  // namespace memgate
