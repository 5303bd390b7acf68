#include "util/text.hpp"

#include <gtest/gtest.h>

#include "util/log.hpp"

using namespace memgate;

// Identities, commands and paths are chosen by the build
// (or by another user); with escape sequences in them they reached the
// terminal through `history --build` and the event log.
TEST(Printable, ControlsBecomeQuestionMarks) {
  EXPECT_EQ(printable("a.o"), "a.o");
  EXPECT_EQ(printable("x\x1b[2J\x1b]0;owned\ay.o"), "x?[2J?]0;owned?y.o");
  EXPECT_EQ(printable("two\nlines\r\t"), "two?lines??");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul?x");
  EXPECT_EQ(printable("del\x7f"), "del?");
  EXPECT_EQ(printable("csi\xc2\x9b" "2J"), "csi?2J");  // U+009B, the 8-bit CSI, in UTF-8
  EXPECT_EQ(printable("caf\xc3\xa9 \xc2\xa0ok"), "caf\xc3\xa9 \xc2\xa0ok");  // other UTF-8 stays
}

TEST(Printable, EveryLogLineIsOneSafeLine) {
  std::string line = log::format_line(log::Level::info, "job 3 (cc:\x1b[31mred\n.o): frozen");
  EXPECT_EQ(line, "memgate: job 3 (cc:?[31mred?.o): frozen\n");
}
