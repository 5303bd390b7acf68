// Telling whether LD_PRELOAD can reach into a program (platform/elf.hpp).
#include "platform/elf.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "elf_bytes.hpp"

using namespace memgate::platform;
using memgate::test::tiny_elf;

TEST(Elf, TellsStaticFromDynamicByTheProgramInterpreter) {
  EXPECT_EQ(elf_linkage(tiny_elf(false)), Linkage::static_elf);
  EXPECT_EQ(elf_linkage(tiny_elf(true)), Linkage::dynamic_elf);
  EXPECT_EQ(elf_linkage(tiny_elf(false, true)), Linkage::static_elf);
  EXPECT_EQ(elf_linkage(tiny_elf(true, true)), Linkage::dynamic_elf);
}

TEST(Elf, AnythingElseIsNotElf) {
  EXPECT_EQ(elf_linkage(""), Linkage::not_elf);
  EXPECT_EQ(elf_linkage("#!/bin/sh\n"), Linkage::not_elf);
  EXPECT_EQ(elf_linkage("\x7f" "ELF"), Linkage::not_elf);
  std::string cut = tiny_elf(true);
  cut.resize(cut.size() - 10);  // program headers cut short
  EXPECT_EQ(elf_linkage(cut), Linkage::not_elf);
}

TEST(Elf, ShebangInterpreter) {
  EXPECT_EQ(shebang_interpreter("#!/bin/sh\necho"), "/bin/sh");
  EXPECT_EQ(shebang_interpreter("#! /usr/bin/env python3\n"), "/usr/bin/env");
  EXPECT_EQ(shebang_interpreter("#!/usr/bin/make -f"), "/usr/bin/make");
  EXPECT_EQ(shebang_interpreter("echo hi"), "");
}

TEST(Elf, RealProgramsOnThisMachine) {
  auto sh = inspect_executable("/bin/sh");
  ASSERT_TRUE(sh);
  EXPECT_EQ(sh->linkage, Linkage::dynamic_elf);
  EXPECT_FALSE(sh->secure_exec);
  // Debian's ldconfig is statically linked.
  if (access("/sbin/ldconfig", X_OK) == 0) {
    auto ldconfig = inspect_executable("/sbin/ldconfig");
    ASSERT_TRUE(ldconfig);
    EXPECT_EQ(ldconfig->linkage, Linkage::static_elf);
  }
  EXPECT_FALSE(inspect_executable("/nonexistent/program"));
}
