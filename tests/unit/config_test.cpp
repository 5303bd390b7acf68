// The per-machine config file (cli/config.hpp): its parser, its bounds,
// and where it is looked for.
#include "cli/config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "util/fs.hpp"
#include "util/size.hpp"

using namespace memgate;
using memgate::test::TempDir;

namespace {

std::string error_of(std::string_view text) {
  auto c = parse_config(text, "/etc/x/config");
  return c.ok() ? "" : c.error();
}

using test::ScopedEnv;

}  // namespace

TEST(Config, ReadsEveryKeyWithCommentsAndBlanks) {
  auto c = parse_config(
      "# this machine: a shared 2-core VM\n"
      "\n"
      "  reserve = 1G   # the desktop needs it\n"
      "jobs=3\n"
      "memory = 80%\r\n"
      "history = /var/cache/memgate/history.db\n",
      "f");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->file, "f");
  EXPECT_EQ(c->reserve, "1G");
  EXPECT_EQ(c->jobs, 3);
  EXPECT_EQ(c->memory, "80%");
  EXPECT_EQ(c->history, "/var/cache/memgate/history.db");
}

TEST(Config, AnEmptyFileSetsNothing) {
  auto c = parse_config("", "f");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->reserve || c->memory || c->jobs || c->history);
  auto only_comments = parse_config("# nothing yet\n   # still nothing\n", "f");
  ASSERT_TRUE(only_comments.ok());
  EXPECT_FALSE(only_comments->jobs);
}

TEST(Config, ErrorsNameTheFileAndTheLine) {
  EXPECT_EQ(error_of("jobs = 2\njbos = 3\n"),
            "/etc/x/config:2: unknown key 'jbos'; did you mean 'jobs'? (keys: memory, reserve, jobs, history)");
  EXPECT_EQ(error_of("colour = red"), "/etc/x/config:1: unknown key 'colour' (keys: memory, reserve, jobs, history)");
  EXPECT_EQ(error_of("\n\njobs 4\n"), "/etc/x/config:3: expected 'key = value', got 'jobs 4'");
  EXPECT_EQ(error_of("jobs = 0"), "/etc/x/config:1: jobs: jobs wants a number from 1 to 65536, not '0'");
  EXPECT_EQ(error_of("jobs = 4x"), "/etc/x/config:1: jobs: jobs wants a number from 1 to 65536, not '4x'");
  EXPECT_EQ(error_of("jobs = 65537"), "/etc/x/config:1: jobs: jobs wants a number from 1 to 65536, not '65537'");
  EXPECT_EQ(error_of("jobs = 2\njobs = 3"), "/etc/x/config:2: jobs is set twice (first on line 1)");
  EXPECT_EQ(error_of("reserve ="), "/etc/x/config:1: reserve has no value");
  EXPECT_EQ(error_of("history = relative/h.db"),
            "/etc/x/config:1: history: history wants an absolute path (or one starting with ~/), not 'relative/h.db'");
  EXPECT_EQ(error_of("= 3"), "/etc/x/config:1: unknown key '' (keys: memory, reserve, jobs, history)");
}

TEST(Config, SizesAreCheckedAsTheFlagsCheckThem) {
  EXPECT_NE(error_of("reserve = lots").find("/etc/x/config:1: reserve: "), std::string::npos);
  EXPECT_NE(error_of("memory = 1").find("/etc/x/config:1: memory: "), std::string::npos) << "under 64 MiB: a typo";
  EXPECT_NE(error_of("memory = 0x10G").find("/etc/x/config:1: memory: "), std::string::npos);
  EXPECT_EQ(error_of("memory = 2G\nreserve = 5%"), "");
}

TEST(Config, ATildeIsTheHomeDirectory) {
  ScopedEnv home("HOME", "/home/someone");
  auto c = parse_config("history = ~/builds/h.db", "f");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->history, "/home/someone/builds/h.db");
}

TEST(Config, NoControlCharactersReachTheTerminal) {
  std::string e = error_of("\x1b[2Jkey = 1");
  EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;
}

TEST(Config, AMissingFileIsAnEmptyConfigAndABigOneIsAnError) {
  TempDir d("config");
  auto missing = load_config(d / "none");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->file, "");
  ASSERT_TRUE(write_file(d / "config", "jobs = 5\n", true).ok());
  auto c = load_config(d / "config");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->jobs, 5);
  EXPECT_EQ(c->file, d / "config");
  std::string big(kMaxConfigBytes + 1, '#');
  ASSERT_TRUE(write_file(d / "big", big, true).ok());
  auto b = load_config(d / "big");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error(), "cannot read the config file " + d / "big" + ": larger than 64 KiB, which no memgate config is");
  ASSERT_EQ(::mkdir((d / "dir").c_str(), 0755), 0);
  auto dir = load_config(d / "dir");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().find("not a regular file"), std::string::npos) << dir.error();
}

// Read as root, a config someone else can write chooses root's files (its
// history = may name any file, which a run then moves aside and replaces).
// It is refused whole, before a byte is parsed.
TEST(Config, OneSomebodyElseCanWriteIsRefusedUnread) {
  TempDir d("config");
  const std::string refusal = "refusing the config file ";
  ASSERT_TRUE(write_file(d / "config", "this line would be a parse error\n", true).ok());
  ASSERT_EQ(::chmod((d / "config").c_str(), 0664), 0);
  auto group = load_config(d / "config");
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().rfind(refusal + d / "config: " + d / "config: it is writable by group or others", 0), 0u)
      << group.error();
  ASSERT_EQ(::chmod((d / "config").c_str(), 0644), 0);
  ASSERT_EQ(::chmod(d.path().c_str(), 0777), 0);
  auto open_dir = load_config(d / "config");
  ASSERT_FALSE(open_dir.ok());
  EXPECT_NE(open_dir.error().find(d.path() + ": it is writable by group or others"), std::string::npos)
      << open_dir.error();
  ASSERT_EQ(::chmod(d.path().c_str(), 0700), 0);
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files away";
  ASSERT_EQ(::chown((d / "config").c_str(), 65534, 65534), 0);
  auto theirs = load_config(d / "config");
  ASSERT_FALSE(theirs.ok());
  EXPECT_NE(theirs.error().find("it is owned by uid 65534, neither root nor uid 0"), std::string::npos)
      << theirs.error();
}

TEST(Config, OneInAnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files away";
  TempDir d("config");
  ASSERT_EQ(::mkdir((d / "theirs").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(d / "theirs/config", "jobs = 2\n", true).ok());
  ASSERT_EQ(::chown((d / "theirs").c_str(), 65534, 65534), 0);
  auto c = load_config(d / "theirs/config");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find(d / "theirs: it is owned by uid 65534"), std::string::npos) << c.error();
}

TEST(Config, ASymlinkToATrustedFileIsRead) {
  TempDir d("config");
  ASSERT_TRUE(write_file(d / "dotfiles-config", "jobs = 4\n", true).ok());
  ASSERT_EQ(::symlink((d / "dotfiles-config").c_str(), (d / "config").c_str()), 0);
  auto c = load_config(d / "config");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->jobs, 4);
  ASSERT_EQ(::symlink((d / "gone").c_str(), (d / "dangling").c_str()), 0);
  EXPECT_TRUE(load_config(d / "dangling").ok()) << "a dangling link is no file";
}

TEST(Config, LivesUnderXdgConfigHomeElseTheHomeDirectory) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv xdg("XDG_CONFIG_HOME", "/xdg/config");
    EXPECT_EQ(config_path(), "/xdg/config/memgate/config");
  }
  {
    ScopedEnv xdg("XDG_CONFIG_HOME", "relative");  // the XDG spec says to ignore relative paths
    EXPECT_EQ(config_path(), "/home/someone/.config/memgate/config");
  }
  ScopedEnv xdg("XDG_CONFIG_HOME", nullptr);
  EXPECT_EQ(config_path(), "/home/someone/.config/memgate/config");
}

TEST(Config, HistoryFlagThenEnvironmentThenFile) {
  MachineConfig c;
  c.history = "/from/config.db";
  set_machine_config(c);
  {
    ScopedEnv env("MEMGATE_HISTORY", nullptr);
    EXPECT_EQ(history_flag_or_config("/flag.db"), "/flag.db");
    EXPECT_EQ(history_flag_or_config(""), "/from/config.db");
  }
  {
    ScopedEnv env("MEMGATE_HISTORY", "/env.db");
    EXPECT_EQ(history_flag_or_config("/flag.db"), "/flag.db");
    EXPECT_EQ(history_flag_or_config(""), "") << "empty: History::resolve_path then takes MEMGATE_HISTORY";
  }
  set_machine_config({});
  ScopedEnv env("MEMGATE_HISTORY", nullptr);
  EXPECT_EQ(history_flag_or_config(""), "");
}

TEST(Config, SettingOriginsNameTheFileAndLine) {
  auto c = parse_config("# jobs first\njobs = 3\n\nmemory = 80%\n", "/etc/x/config");
  ASSERT_TRUE(c.ok());
  auto s = setting_origins(*c, "", "/root/.cache/memgate/history.db", 2);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].key, "reserve");
  EXPECT_EQ(s[0].value, "");
  EXPECT_EQ(s[0].source, "default (the rule above)");
  EXPECT_EQ(s[1].key, "memory");
  EXPECT_EQ(s[1].value, "80%");
  EXPECT_EQ(s[1].source, "config /etc/x/config:4");
  EXPECT_EQ(s[2].value, "3");
  EXPECT_EQ(s[2].source, "config /etc/x/config:2");
  EXPECT_EQ(s[3].value, "/root/.cache/memgate/history.db");
  EXPECT_EQ(s[3].source, "default");
}

TEST(Config, SettingOriginsEnvironmentBeatsTheFile) {
  auto c = parse_config("history = /var/h.db\n", "/etc/x/config");
  ASSERT_TRUE(c.ok());
  auto s = setting_origins(*c, "/tmp/env.db", "/d.db", 8);
  EXPECT_EQ(s[3].value, "/tmp/env.db");
  EXPECT_EQ(s[3].source, "environment (MEMGATE_HISTORY)");
  EXPECT_EQ(s[2].value, "8");
  EXPECT_EQ(s[2].source, "default (the usable cores)");
  s = setting_origins(*c, "", "/d.db", 8);
  EXPECT_EQ(s[3].value, "/var/h.db");
  EXPECT_EQ(s[3].source, "config /etc/x/config:1");
}
