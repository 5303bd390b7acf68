// /proc/meminfo: what the kernel says about the whole machine. Inside a
// container these are the host's figures; the cgroup limit (cgroup.hpp)
// is what bounds us there.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/size.hpp"

namespace memgate::platform {

// Every field is in bytes; a field that is missing or malformed is nullopt,
// so a damaged file degrades field by field instead of failing whole.
struct MemInfo {
  std::optional<Bytes> total, available, free, cached, shmem, swap_total, swap_free;
};

MemInfo parse_meminfo(std::string_view text);

// nullopt when the file cannot be read at all.
std::optional<MemInfo> read_meminfo(const std::string& path = "/proc/meminfo");

}  // namespace memgate::platform
