#include "predict/gpu_arch.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace memgate {
namespace {

// Lower case, without the quotes, brackets and spaces a shell or a
// ninja file may leave around list values.
std::string clean(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\'' || c == '[' || c == ']' || std::isspace(static_cast<unsigned char>(c)))
      continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  std::string c = clean(s);
  size_t i = 0;
  while (i <= c.size()) {
    size_t j = c.find(',', i);
    if (j == std::string::npos) j = c.size();
    if (j > i) out.push_back(c.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::tuple<long, std::string, std::string> arch_sort_key(const std::string& a) {
  size_t d = a.find_first_of("0123456789");
  if (d == std::string::npos) return {-1, a, ""};
  size_t e = a.find_first_not_of("0123456789", d);
  if (e == std::string::npos) e = a.size();
  long num = std::stol(a.substr(d, std::min<size_t>(e - d, 9)));
  // Real targets before the PTX (compute_) of the same number.
  std::string variant = a.substr(e) + (a.compare(0, 8, "compute_") == 0 ? "~" : "");
  return {num, variant, a.substr(0, d)};
}

}  // namespace

std::string virtual_arch_of(std::string_view target) {
  for (std::string_view real : {"sm_", "lto_"}) {
    if (target.substr(0, real.size()) == real) return "compute_" + std::string(target.substr(real.size()));
  }
  return std::string(target);
}

bool arch_less(const std::string& a, const std::string& b) { return arch_sort_key(a) < arch_sort_key(b); }

void GpuArchs::add_gencode(std::string_view value) {
  std::string virt;
  std::vector<std::string> codes;
  bool in_code = false;
  for (const auto& tok : split_list(value)) {
    if (tok.compare(0, 5, "arch=") == 0) {
      virt = tok.substr(5);
      in_code = false;
    } else if (tok.compare(0, 5, "code=") == 0) {
      codes.push_back(tok.substr(5));
      in_code = true;
    } else if (in_code) {
      codes.push_back(tok);
    }
  }
  codes.erase(std::remove(codes.begin(), codes.end(), std::string()), codes.end());
  if (codes.empty() && !virt.empty()) codes.push_back(virt);
  if (virt.empty() && !codes.empty()) virt = virtual_arch_of(codes.front());
  if (virt.empty()) return;
  virtual_.insert(virt);
  targets_.insert(codes.begin(), codes.end());
}

void GpuArchs::add_arch(std::string_view value) {
  for (auto& a : split_list(value)) arch_.push_back(std::move(a));
}

void GpuArchs::add_code(std::string_view value) {
  for (auto& c : split_list(value)) code_.push_back(std::move(c));
}

void GpuArchs::add_offload(std::string_view value) {
  for (auto& a : split_list(value)) {
    virtual_.insert(a);
    targets_.insert(std::move(a));
  }
}

void GpuArchs::remove_offload(std::string_view value) {
  for (const auto& a : split_list(value)) {
    if (a == "all") {
      targets_.clear();
      virtual_.clear();
      return;
    }
    targets_.erase(a);
    virtual_.erase(a);
  }
}

std::vector<std::string> GpuArchs::targets() const {
  std::set<std::string> all = targets_;
  if (!code_.empty()) all.insert(code_.begin(), code_.end());
  else all.insert(arch_.begin(), arch_.end());
  std::vector<std::string> out(all.begin(), all.end());
  std::sort(out.begin(), out.end(), arch_less);
  return out;
}

int GpuArchs::pipelines() const {
  std::set<std::string> virt = virtual_;
  const auto& source = arch_.empty() ? code_ : arch_;
  for (const auto& a : source) virt.insert(virtual_arch_of(a));
  return static_cast<int>(virt.size());
}

}  // namespace memgate
