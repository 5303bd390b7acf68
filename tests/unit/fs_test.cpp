// Reading kernel files relative to a directory held open (util/fs.hpp
// read_kernel_file_at): what a tick reads per job cgroup.
#include "util/fs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/temp_dir.hpp"

using namespace memgate;
using memgate::test::TempDir;

TEST(ReadKernelFileAt, ReadsBelowTheOpenDirectoryAndNeverThroughALinkOrFromTheRoot) {
  TempDir t("fsat");
  ASSERT_EQ(::mkdir((t.path() + "/job-1").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(t.path() + "/job-1/memory.usage_in_bytes", "4096\n", true).ok());
  ASSERT_TRUE(write_file(t.path() + "/secret", "root's\n", true).ok());
  ASSERT_EQ(::symlink((t.path() + "/secret").c_str(), (t.path() + "/job-1/memory.peak").c_str()), 0);
  const int dir = ::open(t.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(read_kernel_file_at(dir, "job-1/memory.usage_in_bytes"), "4096\n");
  EXPECT_EQ(read_kernel_file_at(dir, "job-1/memory.peak"), std::nullopt) << "a planted link is not followed";
  EXPECT_EQ(read_kernel_file_at(dir, t.path() + "/secret"), std::nullopt) << "only paths below the directory";
  EXPECT_EQ(read_kernel_file_at(dir, ""), std::nullopt);
  EXPECT_EQ(read_kernel_file_at(-1, "job-1/memory.usage_in_bytes"), std::nullopt);
  ::close(dir);
}
