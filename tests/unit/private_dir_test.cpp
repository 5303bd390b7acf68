// The socket's private directory (util/private_dir.hpp): where it may be
// made, what it is, and that removing it never follows a swapped name.
#include "util/private_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "run/job_server.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "util/fs.hpp"

using namespace memgate;
using memgate::test::ScopedEnv;
using memgate::test::TempDir;

namespace {

constexpr std::size_t kRoom = 4096;

std::string make_dir(const std::string& path, mode_t mode) {
  EXPECT_EQ(::mkdir(path.c_str(), 0700), 0) << path;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

}  // namespace

TEST(PrivateDir, IsOursMode0700EvenUnderACarelessUmask) {
  TempDir t("pd");
  mode_t old = ::umask(0777);
  auto dir = PrivateDir::create({t.path()}, kRoom);
  ::umask(old);
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(dir->path().rfind(t.path() + "/memgate-", 0), 0u) << dir->path();
  struct stat st;
  ASSERT_EQ(::stat(dir->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(PrivateDir, RemovesWhatIsInsideThenItself) {
  TempDir t("pd");
  auto dir = PrivateDir::create({t.path()}, kRoom);
  ASSERT_TRUE(dir.ok()) << dir.error();
  const std::string path = dir->path();
  ASSERT_TRUE(write_file(path + "/sock.warned", "", true).ok());
  {
    auto s = JobServer::listen(path + "/sock");
    ASSERT_TRUE(s.ok()) << s.error();
  }
  EXPECT_TRUE(dir->remove().ok());
  EXPECT_FALSE(path_exists(path));
  EXPECT_TRUE(dir->remove().ok()) << "twice is harmless";
}

// The attack on a base another user can write: rename memgate's directory
// away and put a symlink to a victim directory in its place. Clean-up by
// path deleted the victim's files; through the directory's fd it removes
// only its own, and leaves the planted name alone.
TEST(PrivateDir, RemovalNeverFollowsASwappedName) {
  TempDir t("pd");
  const std::string victim = make_dir(t / "victim", 0755);
  ASSERT_TRUE(write_file(victim + "/precious", "keep", true).ok());
  auto dir = PrivateDir::create({t.path()}, kRoom);
  ASSERT_TRUE(dir.ok()) << dir.error();
  const std::string path = dir->path();
  ASSERT_TRUE(write_file(path + "/sock.warned", "", true).ok());
  ASSERT_EQ(::rename(path.c_str(), (t / "moved").c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  (void)dir->remove();
  EXPECT_TRUE(path_exists(victim + "/precious"));
  EXPECT_FALSE(path_exists(t / "moved/sock.warned")) << "its own files went, wherever they were moved";
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << "the planted symlink is not ours to remove";
}

TEST(PrivateDir, PassesOverABaseOthersCanWriteAndSaysWhy) {
  TempDir t("pd");
  const std::string open_base = make_dir(t / "shared", 0777);
  const std::string sticky = make_dir(t / "sticky", 01777);
  std::vector<std::string> skipped;
  auto dir = PrivateDir::create({open_base, sticky}, kRoom, &skipped);
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(dir->path().rfind(sticky + "/memgate-", 0), 0u) << "a sticky base is fine: " << dir->path();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0], open_base + ": it is writable by group or others and not sticky");
}

TEST(PrivateDir, PassesOverABaseBelowAnotherUsersDirectory) {
  TempDir t("pd");
  const std::string theirs = make_dir(t / "theirs", 0755);
  const std::string base = make_dir(theirs + "/tmp", 0755);
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  auto dir = PrivateDir::create({base}, kRoom);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error(), base + ": " + theirs + ": it is owned by uid 65534, neither root nor uid 0");
}

TEST(PrivateDir, PassesOverABaseTooLongForASocket) {
  TempDir t("pd");
  std::vector<std::string> skipped;
  auto dir = PrivateDir::create({t.path(), t.path()}, t.path().size() + 10, &skipped);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error(), t.path() + ": too long a path for a socket; " + t.path() + ": too long a path for a socket");
}

TEST(SocketDir, AnUntrustedTmpdirFallsBackToTmp) {
  TempDir t("pd");
  const std::string shared = make_dir(t / "shared", 0777);
  ScopedEnv xdg("XDG_RUNTIME_DIR", nullptr);
  ScopedEnv tmp("TMPDIR", shared.c_str());
  auto dir = make_socket_dir();
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(dir->path().rfind("/tmp/memgate-", 0), 0u) << dir->path();
}
