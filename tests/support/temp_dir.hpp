// A fresh directory under /tmp for one test, removed with all it holds
// when the TempDir goes. Tests that need files (fixture trees, sockets,
// scripts) make one instead of each writing mkdtemp and rm -rf again.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace memgate::test {

class TempDir {
 public:
  // `tag` names the test in the directory's name: /tmp/memgate-<tag>-test.XXXXXX.
  explicit TempDir(std::string_view tag) {
    std::string tmpl = "/tmp/memgate-" + std::string(tag) + "-test.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;  // best effort: a test may have made a file read-only
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace memgate::test
