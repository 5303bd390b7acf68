#include "plan/flash_attn.hpp"

#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/core.h>

#include "util/text.hpp"

namespace memgate::plan {

namespace {

struct KernelName {
  std::string_view kind, dtype;
  int hdim = 0;
  bool causal = false;
};

std::optional<KernelName> parse_kernel(std::string_view file) {
  if (!file.starts_with("flash_") || !file.ends_with("_sm80.cu")) return std::nullopt;
  std::string_view mid = file.substr(6, file.size() - 6 - 8);
  size_t h = mid.find("_hdim");
  if (h == std::string_view::npos) return std::nullopt;
  KernelName k;
  k.kind = mid.substr(0, h);
  if (k.kind != "fwd" && k.kind != "bwd" && k.kind != "fwd_split" && k.kind != "fwd_split_align") return std::nullopt;
  std::vector<std::string_view> rest = split(mid.substr(h + 5), '_');
  if (rest.size() < 2 || rest.size() > 3) return std::nullopt;
  auto [end, ec] = std::from_chars(rest[0].data(), rest[0].data() + rest[0].size(), k.hdim);
  if (ec != std::errc() || end != rest[0].data() + rest[0].size() || k.hdim <= 0) return std::nullopt;
  k.dtype = rest[1];
  k.causal = rest.size() == 3;
  if (k.causal && rest[2] != "causal") return std::nullopt;
  return k;
}

}  // namespace

std::vector<std::string> flash_attn_kernel_files() {
  std::vector<std::string> out;
  for (const char* kind : {"fwd", "fwd_split", "fwd_split_align", "bwd"})
    for (int hdim : {32, 64, 96, 128, 192, 256})
      for (const char* dtype : {"fp16", "bf16"})
        for (const char* causal : {"", "_causal"})
          out.push_back(fmt::format("flash_{}_hdim{}_{}{}_sm80.cu", kind, hdim, dtype, causal));
  return out;
}

bool is_flash_attn_kernel(std::string_view file) { return parse_kernel(file).has_value(); }

const MeasuredRow* nearest_flash_attn_kernel(const std::vector<MeasuredRow>& measured, std::string_view file) {
  auto want = parse_kernel(file);
  if (!want) return nullptr;
  const MeasuredRow* best = nullptr;
  double best_score = 1e18;
  for (const MeasuredRow& m : measured) {
    auto k = parse_kernel(m.file);
    if (!k || k->kind != want->kind) continue;
    double dist = std::fabs(std::log2(static_cast<double>(k->hdim) / want->hdim));
    // Head dim first, the larger (heavier) one on a tie; then dtype, causality.
    double score = dist * 100 - (k->hdim > want->hdim ? 1 : 0) + (k->dtype != want->dtype ? 0.1 : 0) +
                   (k->causal != want->causal ? 0.01 : 0);
    if (score < best_score) best_score = score, best = &m;
  }
  return best;
}

}  // namespace memgate::plan
