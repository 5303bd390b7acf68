// Writing a file over another in a directory others may share
// (util/atomic_file.hpp): the report, the trace, the summary JSON, an
// exported profile file.
#include "util/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "support/temp_dir.hpp"
#include "util/fs.hpp"

using namespace memgate;
using memgate::test::TempDir;

TEST(AtomicFile, ReplacesTheFileAndASymlinkThereWithoutFollowingIt) {
  TempDir t("atomic");
  ASSERT_TRUE(write_file_atomically(t / "out", "one").ok());
  ASSERT_TRUE(write_file_atomically(t / "out", "two").ok());
  EXPECT_EQ(read_file(t / "out"), "two");
  ASSERT_TRUE(write_file(t / "victim", "keep", true).ok());
  ASSERT_EQ(::symlink((t / "victim").c_str(), (t / "link").c_str()), 0);
  ASSERT_TRUE(write_file_atomically(t / "link", "new").ok());
  EXPECT_EQ(read_file(t / "victim"), "keep");
  struct stat st;
  ASSERT_EQ(::lstat((t / "link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read_file(t / "link"), "new");
}

TEST(AtomicFile, AStickyDirectoryIsFineAnOpenOneIsNot) {
  TempDir t("atomic");
  ASSERT_EQ(::mkdir((t / "sticky").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((t / "sticky").c_str(), 01777), 0);
  EXPECT_TRUE(write_file_atomically(t / "sticky/r.html", "<html>").ok());
  ASSERT_EQ(::mkdir((t / "open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((t / "open").c_str(), 0777), 0);
  auto st = write_file_atomically(t / "open/r.html", "<html>");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error(), "cannot write " + t / "open/r.html" + ": " + t / "open" +
                            ": it is writable by group or others and not sticky");
  EXPECT_FALSE(path_exists(t / "open/r.html"));
}

TEST(AtomicFile, ARelativePathIsBelowTheWorkingDirectory) {
  TempDir t("atomic");
  std::string old = current_dir();
  ASSERT_EQ(::chdir(t.path().c_str()), 0);
  auto st = write_file_atomically("rel.json", "{}");
  ASSERT_EQ(::chdir(old.c_str()), 0);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(read_file(t / "rel.json"), "{}");
  EXPECT_FALSE(write_file_atomically(t.path() + "/", "x").ok()) << "not a file name";
}
