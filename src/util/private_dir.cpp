#include "util/private_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "util/fs.hpp"

namespace memgate {
namespace {

constexpr int kNameTries = 64;

// A new 0700 directory of ours in the verified `base`, opened.
Result<std::pair<UniqueFd, std::string>> make_in(int base, const std::string& shown) {
  for (int i = 0; i < kNameTries; ++i) {
    std::string letters = random_letters(6);
    if (letters.empty()) return Error{fmt::format("cannot pick a name in {}: no random bytes", shown)};
    std::string name = "memgate-" + letters;
    if (::mkdirat(base, name.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;
      return Error{fmt::format("cannot create a directory in {}: {}", shown, std::strerror(errno))};
    }
    UniqueFd fd(::openat(base, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    // A umask can only have narrowed it; say exactly what it is.
    if (!fd || ::fchmod(fd.get(), 0700) != 0 || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() ||
        (st.st_mode & 07777) != 0700)
      return Error{fmt::format("the directory made in {} is not a private one of ours", shown)};
    return std::pair{std::move(fd), name};
  }
  return Error{fmt::format("no free name in {} after {} tries", shown, kNameTries)};
}

}  // namespace

PrivateDir::PrivateDir(UniqueFd base, UniqueFd dir, std::string name, std::string path)
    : base_(std::move(base)), dir_(std::move(dir)), name_(std::move(name)), path_(std::move(path)) {}

PrivateDir& PrivateDir::operator=(PrivateDir&& o) noexcept {
  if (this != &o) {
    (void)remove();
    base_ = std::move(o.base_);
    dir_ = std::move(o.dir_);
    name_ = std::move(o.name_);
    path_ = std::move(o.path_);
  }
  return *this;
}

PrivateDir::~PrivateDir() { (void)remove(); }

Result<PrivateDir> PrivateDir::create(const std::vector<std::string>& bases, std::size_t max_len,
                                      std::vector<std::string>* skipped) {
  std::vector<std::string> why;
  for (const std::string& base : bases) {
    std::string real;
    auto fd = open_trusted_base(base, ::geteuid(), &real);
    if (!fd) {
      why.push_back(fd.error());
      continue;
    }
    if (join_path(real, "memgate-XXXXXX").size() > max_len) {
      why.push_back("too long a path for a socket");
      continue;
    }
    auto made = make_in(fd->get(), real);
    if (!made) {
      why.push_back(made.error());
      continue;
    }
    if (skipped) *skipped = why;
    std::string path = join_path(real, made->second);
    return PrivateDir(std::move(*fd), std::move(made->first), std::move(made->second), std::move(path));
  }
  std::string all;
  for (std::size_t i = 0; i < why.size(); ++i) all += fmt::format("{}{}: {}", i ? "; " : "", bases[i], why[i]);
  return Error{all.empty() ? std::string("no candidate directory") : all};
}

Status PrivateDir::remove() {
  if (!dir_) return ok_status();
  std::string failed;
  if (auto names = list_entries(dir_.get(), path_)) {
    for (const std::string& n : *names)
      if (::unlinkat(dir_.get(), n.c_str(), 0) != 0 && failed.empty()) failed = std::strerror(errno);
  } else {
    failed = names.error();
  }
  // The name in the base is removed only while it still is our directory.
  struct stat mine, there;
  bool same = ::fstat(dir_.get(), &mine) == 0 && ::fstatat(base_.get(), name_.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
              mine.st_dev == there.st_dev && mine.st_ino == there.st_ino;
  if (same && ::unlinkat(base_.get(), name_.c_str(), AT_REMOVEDIR) != 0 && failed.empty())
    failed = std::strerror(errno);
  dir_ = UniqueFd();
  base_ = UniqueFd();
  if (!failed.empty()) return Error{fmt::format("cannot remove {}: {}", path_, failed)};
  return ok_status();
}

}  // namespace memgate
