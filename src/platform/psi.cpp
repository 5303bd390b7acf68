#include "platform/psi.hpp"

#include "platform/text.hpp"
#include "util/fs.hpp"

namespace memgate::platform {

namespace {

// "avg10=0.00 avg60=0.00 avg300=0.00 total=6811": all four must be there.
std::optional<PsiWindow> parse_window(const std::vector<std::string_view>& w) {
  if (w.size() != 5) return std::nullopt;
  PsiWindow out;
  bool seen[4] = {false, false, false, false};
  for (size_t i = 1; i < w.size(); ++i) {
    size_t eq = w[i].find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    auto key = w[i].substr(0, eq);
    auto val = w[i].substr(eq + 1);
    if (key == "total") {
      auto t = text::to_uint(val);
      if (!t) return std::nullopt;
      out.total_us = *t;
      seen[3] = true;
      continue;
    }
    auto d = text::to_double(val);
    if (!d || *d < 0) return std::nullopt;
    if (key == "avg10") out.avg10 = *d, seen[0] = true;
    else if (key == "avg60") out.avg60 = *d, seen[1] = true;
    else if (key == "avg300") out.avg300 = *d, seen[2] = true;
    else return std::nullopt;
  }
  for (bool s : seen) {
    if (!s) return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<Psi> parse_psi(std::string_view text) {
  Psi psi;
  auto all = text::lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    // A last line without '\n' may have been cut anywhere, even inside a
    // number that still parses; the kernel always ends lines.
    if (i + 1 == all.size() && !text::ends_complete(text)) break;
    auto w = text::words(all[i]);
    if (w.empty()) continue;
    if (w[0] == "some") psi.some = parse_window(w);
    else if (w[0] == "full") psi.full = parse_window(w);
  }
  if (!psi.some && !psi.full) return std::nullopt;
  return psi;
}

std::optional<Psi> read_psi(const std::string& path) {
  auto text = read_kernel_file(path);
  if (!text) return std::nullopt;
  return parse_psi(*text);
}

}  // namespace memgate::platform
