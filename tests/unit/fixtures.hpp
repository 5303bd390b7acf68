// Reading the recorded (v1, /proc) and hand-written (v2) kernel files under
// tests/fixtures/, shared by the platform parser tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "platform/cgroup.hpp"
#include "util/fs.hpp"

namespace memgate::test {

inline const std::string kFixtures = MEMGATE_FIXTURES;

// The text of tests/fixtures/REL; a missing file fails the test.
inline std::string fixture(const std::string& rel) {
  auto t = read_file(kFixtures + "/" + rel);
  if (!t) ADD_FAILURE() << "missing fixture " << rel;
  return t.value_or("");
}

// The cgroup layout of a fake tree: TREE/self_cgroup, TREE/mountinfo and
// the cgroup files below TREE.
inline platform::CgroupLayout layout_of(const std::string& tree) {
  return platform::detect_cgroups(fixture(tree + "/self_cgroup"), fixture(tree + "/mountinfo"), kFixtures + "/" + tree);
}

}  // namespace memgate::test
