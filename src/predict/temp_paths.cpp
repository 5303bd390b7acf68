#include "predict/temp_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace memgate {
namespace {

bool all_of_set(std::string_view s, bool allow_upper) {
  return std::all_of(s.begin(), s.end(), [allow_upper](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           (allow_upper && c >= 'A' && c <= 'Z');
  });
}

bool has_digit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Python's tempfile: "tmp" + 8 of [a-z0-9_]. Longer or shorter made-up
// names need a digit, so that words such as "tmpfiles" are not taken.
bool is_python_tmp(std::string_view rest) {
  if (rest.size() == 8 && all_of_set(rest, false)) return true;
  return rest.size() >= 6 && rest.size() <= 16 && all_of_set(rest, true) && has_digit(rest);
}

// gcc's own temp files directly in /tmp: ccXXXXXX.s, ccXXXXXX.o.
bool is_gcc_tmp_file(std::string_view name) {
  if (name.size() < 9 || name.substr(0, 2) != "cc" || name[8] != '.') return false;
  return all_of_set(name.substr(2, 6), true);
}

bool is_ccache_tmp_dir(const std::vector<std::string>& comps, size_t i) {
  return comps[i] == "tmp" && i > 0 && comps[i - 1].find("ccache") != std::string::npos;
}

// Where the temp root prefix ends (0 if the path has none).
size_t temp_root_length(const std::vector<std::string>& comps) {
  std::vector<std::vector<std::string>> roots = {{"tmp"}, {"var", "tmp"}, {"dev", "shm"}};
  if (const char* t = std::getenv("TMPDIR"); t && t[0] == '/') {
    auto c = path_components(lexical_normal(t));
    if (!c.empty()) roots.push_back(std::move(c));
  }
  size_t best = 0;
  for (const auto& root : roots) {
    if (root.size() < comps.size() && std::equal(root.begin(), root.end(), comps.begin()))
      best = std::max(best, root.size());
  }
  return best;
}

}  // namespace

std::vector<std::string> path_components(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view c = path.substr(i, j - i);
    if (!c.empty() && c != ".") out.emplace_back(c);
    i = j + 1;
  }
  return out;
}

std::string lexical_normal(std::string_view path) {
  if (path.empty()) return {};
  std::string s = std::filesystem::path(path).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool is_random_temp_name(std::string_view name) {
  if (name.substr(0, 4) == "pip-") {
    size_t dash = name.rfind('-');
    std::string_view last = name.substr(dash + 1);
    return dash > 3 && last.size() >= 6 && all_of_set(last, false);
  }
  if (name.substr(0, 7) == "tmpxft_") return true;
  if (name.substr(0, 4) == ".tmp") return name.size() >= 8 && all_of_set(name.substr(4), true);
  if (name.substr(0, 4) == "tmp.") return name.size() >= 10 && all_of_set(name.substr(4), true);
  if (name.substr(0, 3) == "tmp") return is_python_tmp(name.substr(3));
  return false;
}

std::vector<std::string> strip_temp_dirs(std::string_view path) {
  auto comps = path_components(lexical_normal(path));
  size_t cut = (!path.empty() && path[0] == '/') ? temp_root_length(comps) : 0;
  // The file name itself stays even when it looks random: it is all that
  // is left to tell jobs apart.
  for (size_t i = 0; i + 1 < comps.size(); ++i) {
    if (is_random_temp_name(comps[i]) || is_ccache_tmp_dir(comps, i)) cut = i + 1;
  }
  return {comps.begin() + static_cast<std::ptrdiff_t>(cut), comps.end()};
}

std::string mask_temp_names(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::string prev, prevprev;
  size_t i = 0;
  for (;;) {
    size_t j = text.find('/', i);
    std::string piece(text.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    std::string masked = piece;
    if (piece.substr(0, 7) == "tmpxft_") {
      size_t dash = piece.find('-');
      masked = "tmpxft_*" + (dash == std::string::npos ? std::string() : piece.substr(dash));
    } else if (is_random_temp_name(piece)) {
      if (piece.substr(0, 4) == "pip-") masked = piece.substr(0, piece.rfind('-') + 1) + "*";
      else if (piece.substr(0, 4) == ".tmp") masked = ".tmp*";
      else if (piece.substr(0, 4) == "tmp.") masked = "tmp.*";
      else masked = "tmp*";
    } else if (prev == "tmp" && prevprev.find("ccache") != std::string::npos) {
      masked = "*";
    } else if (prev == "tmp" && is_gcc_tmp_file(piece)) {
      masked = "cc*" + piece.substr(8);
    }
    out += masked;
    if (j == std::string_view::npos) break;
    out += '/';
    prevprev = std::move(prev);
    prev = std::move(piece);
    i = j + 1;
  }
  return out;
}

std::string last_components(const std::vector<std::string>& components, size_t n) {
  size_t start = components.size() > n ? components.size() - n : 0;
  std::string out;
  for (size_t i = start; i < components.size(); ++i) {
    if (!out.empty()) out += '/';
    out += components[i];
  }
  return out;
}

}  // namespace memgate
