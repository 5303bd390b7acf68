// The /proc parsers of src/platform: /proc/meminfo, /proc/pressure/memory
// (and a cgroup's memory.pressure), /proc/PID/stat, /proc/PID/status,
// /proc/PID/cmdline, and what elf.hpp reads from an executable's first
// bytes. Every parser gets the whole input: corpus files are recorded
// kernel files (tests/fixtures/proc) as they are.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "platform/elf.hpp"
#include "platform/meminfo.hpp"
#include "platform/proc.hpp"
#include "platform/psi.hpp"

using namespace memgate;
using namespace memgate::platform;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);

  MemInfo mi = parse_meminfo(text);
  for (const auto& v : {mi.total, mi.available, mi.free, mi.cached, mi.shmem, mi.swap_total, mi.swap_free})
    if (v) FUZZ_CHECK(*v >= 0);

  if (auto psi = parse_psi(text)) (void)psi;

  if (auto st = parse_proc_stat(text)) FUZZ_CHECK(st->comm.size() <= text.size());
  if (auto status = parse_proc_status(text)) (void)status;
  std::vector<std::string> args = parse_cmdline(text);
  FUZZ_CHECK(args.size() <= text.size() + 1);

  (void)elf_linkage(text);
  std::string interp = shebang_interpreter(text);
  FUZZ_CHECK(interp.size() <= text.size());
  return 0;
}
