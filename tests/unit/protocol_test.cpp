#include "wrap/protocol.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

using namespace memgate;

namespace {

std::string frame_of(std::string_view payload) {
  auto n = static_cast<std::uint32_t>(payload.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += payload;
  return out;
}

std::string header_of(std::uint32_t n) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

Message round_trip(const Message& m) {
  auto decoded = decode_payload(encode_payload(m));
  EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.error());
  return decoded.ok() ? decoded.value() : Message{};
}

RequestMsg sample_request() {
  RequestMsg r;
  r.argv = {"/usr/bin/g++", "-O2", "-c", "a b.cpp", "-o", "a.o"};
  r.cwd = "/home/u/proj";
  r.tool = "g++";
  r.identity = "g++:a.o";
  r.klass = "g++";
  r.stem = "a b";
  r.cpu_weight = 4;
  return r;
}

}  // namespace

TEST(Protocol, RequestRoundTrips) {
  RequestMsg r = sample_request();
  auto m = round_trip(r);
  ASSERT_TRUE(std::holds_alternative<RequestMsg>(m));
  const auto& got = std::get<RequestMsg>(m);
  EXPECT_EQ(got.argv, r.argv);
  EXPECT_EQ(got.cwd, r.cwd);
  EXPECT_EQ(got.tool, "g++");
  EXPECT_EQ(got.identity, "g++:a.o");
  EXPECT_EQ(got.klass, "g++");
  EXPECT_EQ(got.stem, "a b");
  EXPECT_EQ(got.cpu_weight, 4);
  EXPECT_FALSE(got.argv_truncated);
  EXPECT_STREQ(message_type(m), "request");
}

TEST(Protocol, GovernorMessagesRoundTrip) {
  auto g = round_trip(GrantMsg{7, 2, {"/sys/fs/cgroup/memory/x/job7", "/sys/fs/cgroup/freezer/x/job7"}, {}, false});
  ASSERT_TRUE(std::holds_alternative<GrantMsg>(g));
  EXPECT_EQ(std::get<GrantMsg>(g).job, 7);
  EXPECT_EQ(std::get<GrantMsg>(g).attempt, 2);
  EXPECT_EQ(std::get<GrantMsg>(g).cgroups.size(), 2u);
  EXPECT_EQ(std::get<GrantMsg>(g).cgroups[1], "/sys/fs/cgroup/freezer/x/job7");

  auto v = round_trip(VerdictMsg{true});
  ASSERT_TRUE(std::holds_alternative<VerdictMsg>(v));
  EXPECT_TRUE(std::get<VerdictMsg>(v).rerun);
  EXPECT_FALSE(std::get<VerdictMsg>(round_trip(VerdictMsg{false})).rerun);
}

TEST(Protocol, WrapperReportsRoundTrip) {
  auto s = round_trip(StartedMsg{4321});
  ASSERT_TRUE(std::holds_alternative<StartedMsg>(s));
  EXPECT_EQ(std::get<StartedMsg>(s).pid, 4321);

  ExitMsg e{9, 30.25, 7 * GiB, false};
  auto d = round_trip(e);
  ASSERT_TRUE(std::holds_alternative<ExitMsg>(d));
  const auto& x = std::get<ExitMsg>(d);
  EXPECT_EQ(x.status, 9);
  EXPECT_DOUBLE_EQ(x.cpu_s, 30.25);
  EXPECT_EQ(x.maxrss_bytes, 7 * GiB);
}

TEST(Protocol, FrameIsLittleEndianLengthThenJson) {
  std::string f = encode_frame(VerdictMsg{true});
  ASSERT_GT(f.size(), 4u);
  std::uint32_t n = static_cast<unsigned char>(f[0]) | static_cast<unsigned char>(f[1]) << 8 |
                    static_cast<unsigned char>(f[2]) << 16 | static_cast<std::uint32_t>(static_cast<unsigned char>(f[3])) << 24;
  EXPECT_EQ(n, f.size() - 4);
  EXPECT_EQ(f[4], '{');
  EXPECT_NE(f.find("\"type\":\"verdict\""), std::string::npos);
}

TEST(Protocol, HugeArgvIsTruncatedToFitTheFrame) {
  RequestMsg r = sample_request();
  for (int i = 0; i < 50000; ++i) r.argv.push_back("-DSOME_LONG_MACRO_NAME_" + std::to_string(i) + "=1");
  r.argv.push_back(std::string(3 * 1024 * 1024, 'x'));  // one giant argument
  std::string payload = encode_payload(r);
  EXPECT_LE(payload.size(), kMaxFrame);
  auto d = decode_payload(payload);
  ASSERT_TRUE(d.ok()) << d.error();
  const auto& got = std::get<RequestMsg>(d.value());
  EXPECT_TRUE(got.argv_truncated);
  ASSERT_FALSE(got.argv.empty());
  EXPECT_EQ(got.argv[0], "/usr/bin/g++");
  EXPECT_LT(got.argv.size(), r.argv.size());
}

TEST(Protocol, NonUtf8ArgumentsStillEncode) {
  RequestMsg r = sample_request();
  r.argv.push_back(std::string("caf\xe9.c"));  // Latin-1 file name
  auto d = decode_payload(encode_payload(r));
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(std::get<RequestMsg>(d.value()).argv.size(), r.argv.size());
}

TEST(Protocol, BadPayloadsAreErrors) {
  const char* bad[] = {
      "",                                          // empty
      "{not json",                                 // garbage
      "[1,2,3]",                                   // not an object
      "\"request\"",                               // not an object
      "{}",                                        // no type
      "{\"type\":42}",                             // type not a string
      "{\"type\":\"launch_missiles\"}",            // unknown type
      "{\"type\":\"grant\",\"job\":\"7\",\"attempt\":1,\"cgroups\":[]}",  // job is a string
      "{\"type\":\"grant\",\"job\":7,\"attempt\":1,\"cgroups\":[1]}",     // cgroup not a string
      "{\"type\":\"grant\",\"job\":7,\"attempt\":1}",                     // missing field
      "{\"type\":\"grant\",\"job\":1e3,\"attempt\":1,\"cgroups\":[]}",    // float for an int
      "{\"type\":\"grant\",\"job\":99999999999,\"attempt\":1,\"cgroups\":[]}",  // out of int range
      "{\"type\":\"verdict\",\"rerun\":1}",        // int for a bool
      "{\"type\":\"exit\",\"status\":0,\"cpu_s\":\"1\",\"maxrss_bytes\":0}",
      "{\"type\":\"exit\",\"status\":0,\"cpu_s\":0,\"maxrss_bytes\":-5}",
      "{\"type\":\"started\",\"pid\":null}",
      "{\"type\":\"started\",\"pid\":0}",                         // no such process
      "{\"type\":\"started\",\"pid\":-1}",                        // kill(-1) would be everything
      "{\"type\":\"exit\",\"status\":0,\"cpu_s\":-1,\"maxrss_bytes\":0}",
      "{\"type\":\"exit\",\"status\":0,\"cpu_s\":1e300,\"maxrss_bytes\":0}",
      "{\"type\":\"exit\",\"status\":0,\"cpu_s\":0,\"maxrss_bytes\":9223372036854775807}",
  };
  for (const char* p : bad) EXPECT_FALSE(decode_payload(p).ok()) << p;
}

// A cpu_weight of INT_MAX (or a negative one) once
// reached the predictor, whose peak (per-slot peak x weight) overflowed to
// -9.2e18 and went into history and the admission arithmetic.
TEST(Protocol, RequestNumbersOutOfRangeAreProtocolErrors) {
  const std::string good = encode_payload(sample_request());
  ASSERT_NE(good.find("\"cpu_weight\":4"), std::string::npos);
  for (const char* weight : {"0", "-1", "-2147483648", "2147483647", "1025", "1e3", "4.5"}) {
    std::string p = good;
    p.replace(p.find("\"cpu_weight\":4"), 14, std::string("\"cpu_weight\":") + weight);
    EXPECT_FALSE(decode_payload(p).ok()) << weight;
  }
  std::string most = good;
  most.replace(most.find("\"cpu_weight\":4"), 14, "\"cpu_weight\":" + std::to_string(kMaxCpuWeight));
  auto m = decode_payload(most);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(std::get<RequestMsg>(m.value()).cpu_weight, kMaxCpuWeight);
}

TEST(Protocol, RequestFieldsAreChecked) {
  std::string good = encode_payload(sample_request());
  ASSERT_TRUE(decode_payload(good).ok());
  std::string wrong_argv = good;
  wrong_argv.replace(wrong_argv.find("\"argv\":["), 8, "\"argv\":[1,");
  EXPECT_FALSE(decode_payload(wrong_argv).ok());
  std::string future = good;
  future.replace(future.find("\"v\":1"), 5, "\"v\":2");
  auto r = decode_payload(future);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("version"), std::string::npos);
}

TEST(Protocol, DeepNestingIsRejectedWithoutRecursing) {
  std::string deep = "{\"type\":\"verdict\",\"rerun\":true,\"x\":" + std::string(500000, '[') + std::string(500000, ']') + "}";
  auto r = decode_payload(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("deep"), std::string::npos);
}

TEST(FrameDecoder, ReassemblesFramesSplitIntoSingleBytes) {
  std::string stream = encode_frame(sample_request()) + encode_frame(VerdictMsg{true});
  FrameDecoder d;
  std::vector<Message> got;
  for (char c : stream) {
    d.feed(std::string_view(&c, 1));
    while (auto m = d.pop()) {
      ASSERT_TRUE(m->ok()) << m->error();
      got.push_back(m->value());
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(std::get<RequestMsg>(got[0]).argv, sample_request().argv);
  EXPECT_TRUE(std::get<VerdictMsg>(got[1]).rerun);
  EXPECT_FALSE(d.mid_frame());
}

TEST(FrameDecoder, PopsSeveralFramesFromOneFeed) {
  std::string stream;
  for (int i = 1; i <= 10; ++i) stream += encode_frame(StartedMsg{i});
  stream += encode_frame(StartedMsg{99}).substr(0, 6);  // and the start of one more
  FrameDecoder d;
  d.feed(stream);
  for (int i = 1; i <= 10; ++i) {
    auto m = d.pop();
    ASSERT_TRUE(m && m->ok());
    EXPECT_EQ(std::get<StartedMsg>(m->value()).pid, i);
  }
  EXPECT_FALSE(d.pop());
  EXPECT_TRUE(d.mid_frame());  // an EOF now would be a truncated frame
  d.feed(encode_frame(StartedMsg{99}).substr(6));
  auto last = d.pop();
  ASSERT_TRUE(last && last->ok());
  EXPECT_EQ(std::get<StartedMsg>(last->value()).pid, 99);
}

TEST(FrameDecoder, OversizedLengthFailsAtTheHeader) {
  FrameDecoder d;
  d.feed(header_of(kMaxFrame + 1));  // no payload needed to know
  auto m = d.pop();
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->ok());
  EXPECT_TRUE(d.failed());
  d.feed(encode_frame(VerdictMsg{true}));
  EXPECT_FALSE(d.pop());  // sticky: the stream cannot be trusted any more
}

TEST(FrameDecoder, ZeroLengthAndGarbageAreErrors) {
  FrameDecoder zero;
  zero.feed(header_of(0));
  auto z = zero.pop();
  ASSERT_TRUE(z);
  EXPECT_FALSE(z->ok());

  FrameDecoder garbage;
  garbage.feed(frame_of("this is not json"));
  auto g = garbage.pop();
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->ok());
  EXPECT_TRUE(garbage.failed());
}

TEST(FrameDecoder, MaxSizedFrameIsAccepted) {
  std::string payload = "{\"type\":\"verdict\",\"rerun\":false,\"pad\":\"";
  payload += std::string(kMaxFrame - payload.size() - 2, 'p');
  payload += "\"}";
  ASSERT_EQ(payload.size(), kMaxFrame);
  FrameDecoder d;
  d.feed(frame_of(payload));
  auto m = d.pop();
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->ok()) << m->error();
}

TEST(BlockingIo, WriteThenReadOverASocketPair) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ASSERT_TRUE(write_message(sv[0], GrantMsg{3, 1, {"/cg"}, {}, false}).ok());
  auto m = read_message(sv[1]);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(std::get<GrantMsg>(m.value()).job, 3);

  std::string partial = encode_frame(VerdictMsg{true}).substr(0, 7);
  ASSERT_EQ(write(sv[0], partial.data(), partial.size()), static_cast<ssize_t>(partial.size()));
  close(sv[0]);
  auto truncated = read_message(sv[1]);
  ASSERT_FALSE(truncated.ok());
  EXPECT_FALSE(is_closed_error(truncated.error()));
  auto closed = read_message(sv[1]);
  ASSERT_FALSE(closed.ok());
  EXPECT_TRUE(is_closed_error(closed.error()));
  close(sv[1]);
}

TEST(BlockingIo, WritingToAClosedPeerIsAnErrorNotSigpipe) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  close(sv[1]);
  EXPECT_FALSE(write_message(sv[0], StartedMsg{1}).ok());  // the test would die of SIGPIPE otherwise
  close(sv[0]);
}

TEST(BlockingIo, OversizedHeaderIsRejectedBeforeReadingThePayload) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::string h = header_of(0xffffffffu);
  ASSERT_EQ(write(sv[0], h.data(), h.size()), 4);
  auto m = read_message(sv[1]);  // would block forever if it tried to read 4 GiB
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("exceeds"), std::string::npos);
  close(sv[0]);
  close(sv[1]);
}

// The engine a request goes through, and the runner's offload
// and decline.
TEST(Protocol, EngineOffloadAndDeclineRoundTrip) {
  RequestMsg r = sample_request();
  r.engine = "distcc";
  EXPECT_EQ(std::get<RequestMsg>(round_trip(r)).engine, "distcc");
  EXPECT_EQ(std::get<RequestMsg>(round_trip(sample_request())).engine, "");

  GrantMsg g{3, 1, {}, {}, false};
  g.offload = "distcc";
  auto got = std::get<GrantMsg>(round_trip(g));
  EXPECT_EQ(got.offload, "distcc");
  EXPECT_FALSE(got.decline);
  GrantMsg no{4, 1, {}, {}, false};
  no.decline = true;
  EXPECT_TRUE(std::get<GrantMsg>(round_trip(no)).decline);
}

// A compile's preprocessed size rides on its request when measured, and a
// size out of range drops the connection like any bad field.
TEST(Protocol, ATranslationUnitSizeRoundTripsAndIsBounded) {
  RequestMsg r = sample_request();
  r.tu_bytes = 3 * MiB;
  EXPECT_EQ(std::get<RequestMsg>(round_trip(r)).tu_bytes, 3 * MiB);
  EXPECT_EQ(std::get<RequestMsg>(round_trip(sample_request())).tu_bytes, 0);
  std::string payload = encode_payload(sample_request());
  for (const char* bad : {"-1", "1e30", "\"big\"", "1125899906842625"}) {
    std::string p = payload;
    p.insert(p.size() - 1, std::string(",\"tu_bytes\":") + bad);
    EXPECT_FALSE(decode_payload(p).ok()) << bad;
  }
}

TEST(Protocol, AnOffloadEngineThatIsAPathIsRefused) {
  for (const char* bad : {"/tmp/evil", "../bin/distcc", "", ".."}) {
    auto m = decode_payload(std::string(R"({"type":"grant","job":1,"attempt":1,"cgroups":[],"offload":")") + bad +
                            "\"}");
    EXPECT_FALSE(m.ok()) << bad;
  }
}

TEST(Protocol, AnExitSaysWhenTheEngineRanTheJobHere) {
  ExitMsg e{0, 1.5, 64 * MiB, false};
  EXPECT_FALSE(std::get<ExitMsg>(round_trip(e)).ran_here);
  EXPECT_EQ(encode_payload(e).find("ran_here"), std::string::npos) << "optional: absent when false";
  e.ran_here = true;
  EXPECT_TRUE(std::get<ExitMsg>(round_trip(e)).ran_here);
  EXPECT_FALSE(decode_payload(R"({"type":"exit","status":0,"cpu_s":0,"maxrss_bytes":0,"ran_here":"yes"})").ok());
}
