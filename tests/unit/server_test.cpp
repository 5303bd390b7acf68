// JobServer driven in-process by the test's own poll loop; clients are raw
// sockets (and, for the uid check, a forked child running as nobody).
#include "run/job_server.hpp"

#include <gtest/gtest.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "util/fs.hpp"
#include "util/log.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;

namespace {

// Runs the server's loop until `done` holds (false after the deadline).
template <class Pred>
bool pump(JobServer& server, Pred done, int timeout_ms = 20000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::vector<pollfd> fds;
    server.append_pollfds(fds);
    if (::poll(fds.data(), fds.size(), 100) > 0) server.handle_ready(fds);
  }
  return true;
}

int connect_to(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_raw(int fd, const std::string& bytes) {
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

std::string header_of(std::uint32_t n) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

// True once the server has closed its end: read sees EOF (or a reset).
bool peer_closed(int fd) {
  char c;
  ssize_t n = ::read(fd, &c, 1);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// A request tagged with `n` (in its identity), so replies can be matched.
RequestMsg request(int n) {
  RequestMsg r;
  r.argv = {"g++", "-c", "a.cpp"};
  r.cwd = "/tmp";
  r.tool = "g++";
  r.identity = std::to_string(n);
  return r;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    auto s = JobServer::listen(dir_ + "/sock");
    ASSERT_TRUE(s.ok()) << s.error();
    server_.emplace(std::move(s.value()));
    server_->on_message = [this](ConnId id, const Message& m) { received_.push_back({id, m}); };
    server_->on_closed = [this](ConnId id) { closed_.insert(id); };
    log::set_sink([this](log::Level, std::string_view line) { log_.emplace_back(line); });
  }
  void TearDown() override {
    log::reset_sink();
    server_.reset();
  }
  std::string sock() const { return dir_ + "/sock"; }

  test::TempDir tmp_{"server"};
  std::string dir_;
  std::optional<JobServer> server_;
  std::vector<std::pair<ConnId, Message>> received_;
  std::set<ConnId> closed_;
  std::vector<std::string> log_;
};

}  // namespace

TEST_F(ServerTest, ServesARequestWithAGrant) {
  int c = connect_to(sock());
  ASSERT_GE(c, 0);
  ASSERT_TRUE(write_message(c, request(1)).ok());
  ASSERT_TRUE(pump(*server_, [&] { return !received_.empty(); }));
  auto [id, msg] = received_[0];
  ASSERT_TRUE(std::holds_alternative<RequestMsg>(msg));
  EXPECT_EQ(std::get<RequestMsg>(msg).argv[2], "a.cpp");
  EXPECT_EQ(server_->peer_pid(id), ::getpid());
  EXPECT_TRUE(server_->send(id, GrantMsg{1, 1, {"/cg/job1"}, {}, false}));
  auto grant = read_message(c);
  ASSERT_TRUE(grant.ok()) << grant.error();
  EXPECT_EQ(std::get<GrantMsg>(grant.value()).cgroups[0], "/cg/job1");
  EXPECT_EQ(server_->counters().accepted, 1u);

  ::close(c);
  ASSERT_TRUE(pump(*server_, [&] { return closed_.count(id) == 1; }));
  EXPECT_EQ(server_->counters().closed_by_peer, 1u);
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(ServerTest, MalformedConnectionsAreDroppedWhileAGoodOneIsServed) {
  int garbage = connect_to(sock()), oversized = connect_to(sock()), truncated = connect_to(sock()),
      zero = connect_to(sock()), good = connect_to(sock());
  ASSERT_TRUE(garbage >= 0 && oversized >= 0 && truncated >= 0 && zero >= 0 && good >= 0);
  std::string junk = "definitely { not json";
  send_raw(garbage, header_of(static_cast<std::uint32_t>(junk.size())) + junk);
  send_raw(oversized, header_of(kMaxFrame + 1));
  send_raw(truncated, encode_frame(request(1)).substr(0, 20));
  ::shutdown(truncated, SHUT_WR);  // EOF in the middle of a frame
  send_raw(zero, header_of(0));
  ASSERT_TRUE(write_message(good, request(2)).ok());

  ASSERT_TRUE(pump(*server_, [&] { return server_->counters().dropped_malformed == 4 && !received_.empty(); }));
  ASSERT_EQ(received_.size(), 1u);  // only the good request got through
  EXPECT_EQ(std::get<RequestMsg>(received_[0].second).identity, "2");
  EXPECT_TRUE(server_->send(received_[0].first, GrantMsg{5, 1, {}, {}, false}));
  auto grant = read_message(good);
  ASSERT_TRUE(grant.ok()) << grant.error();
  EXPECT_EQ(std::get<GrantMsg>(grant.value()).job, 5);

  for (int fd : {garbage, oversized, truncated, zero}) EXPECT_TRUE(peer_closed(fd));
  EXPECT_EQ(closed_.size(), 4u);
  EXPECT_EQ(server_->connection_count(), 1u);
  int drops = 0;
  for (const auto& line : log_)
    if (line.find("warning: dropped a malformed message from pid " + std::to_string(::getpid())) !=
        std::string::npos)
      ++drops;
  EXPECT_EQ(drops, 4);
  for (int fd : {garbage, oversized, truncated, zero, good}) ::close(fd);
}

TEST_F(ServerTest, ThreeHundredWaitingWrappersAreAllServed) {
  constexpr int kClients = 320;
  std::vector<int> clients;
  for (int i = 0; i < kClients; ++i) {
    int fd = connect_to(sock());
    ASSERT_GE(fd, 0) << "client " << i;
    ASSERT_TRUE(write_message(fd, request(1000 + i)).ok());
    clients.push_back(fd);
  }
  ASSERT_TRUE(pump(*server_, [&] { return received_.size() == kClients; }));
  EXPECT_EQ(server_->connection_count(), static_cast<std::size_t>(kClients));
  EXPECT_GE(server_->max_connections(), static_cast<std::size_t>(kClients));
  std::map<int, ConnId> by_pid;  // by the client's tag
  for (auto& [id, m] : received_) by_pid[std::stoi(std::get<RequestMsg>(m).identity)] = id;
  ASSERT_EQ(by_pid.size(), static_cast<std::size_t>(kClients));
  // Grant in reverse order: each reply must reach its own wrapper.
  for (int i = kClients - 1; i >= 0; --i) EXPECT_TRUE(server_->send(by_pid[1000 + i], GrantMsg{i, 1, {}, {}, false}));
  for (int i = 0; i < kClients; ++i) {
    auto g = read_message(clients[static_cast<std::size_t>(i)]);
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(std::get<GrantMsg>(g.value()).job, i);
  }
  EXPECT_EQ(server_->counters().accepted, static_cast<std::uint64_t>(kClients));
  for (int fd : clients) ::close(fd);
}

TEST_F(ServerTest, LargeRepliesQueueUntilThePeerReads) {
  int c = connect_to(sock());
  ASSERT_TRUE(write_message(c, request(1)).ok());
  ASSERT_TRUE(pump(*server_, [&] { return !received_.empty(); }));
  ConnId id = received_[0].first;
  GrantMsg big{1, 1, std::vector<std::string>(2000, std::string(200, 'c')), {}, false};  // ~400 KiB per frame
  for (int i = 0; i < 8; ++i) {
    big.attempt = i;
    EXPECT_TRUE(server_->send(id, big));  // more than a socket buffer: most of it queues
  }
  EXPECT_TRUE(server_->has_pending_writes());
  // A reader thread drains while the loop flushes on POLLOUT.
  std::vector<int> attempts;
  std::thread reader([&] {
    for (int i = 0; i < 8; ++i) {
      auto g = read_message(c);
      if (!g.ok()) return;
      attempts.push_back(std::get<GrantMsg>(g.value()).attempt);
    }
  });
  ASSERT_TRUE(pump(*server_, [&] { return !server_->has_pending_writes(); }));
  reader.join();
  EXPECT_EQ(attempts, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  ::close(c);
}

TEST_F(ServerTest, ClosingFromTheCallbackIsSafe) {
  int a = connect_to(sock()), b = connect_to(sock());
  server_->on_message = [this](ConnId id, const Message& m) {
    received_.emplace_back(id, m);
    server_->close(id);
  };
  ASSERT_TRUE(write_message(a, request(1)).ok());
  ASSERT_TRUE(write_message(a, request(1)).ok());  // a second frame after the close: never delivered
  ASSERT_TRUE(write_message(b, request(2)).ok());
  ASSERT_TRUE(pump(*server_, [&] { return received_.size() >= 2 && server_->connection_count() == 0; }));
  EXPECT_EQ(received_.size(), 2u);
  EXPECT_TRUE(closed_.empty());  // the owner closed them: no on_closed
  EXPECT_TRUE(peer_closed(a));
  EXPECT_FALSE(server_->send(received_[0].first, VerdictMsg{}));
  ::close(a);
  ::close(b);
}

TEST_F(ServerTest, APeerWithAnotherUidIsRefused) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);  // reachable by nobody, for this test only
  ASSERT_EQ(::chmod(sock().c_str(), 0777), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(3);
    int fd = connect_to(dir_ + "/sock");
    if (fd < 0) ::_exit(4);
    (void)write_message(fd, request(static_cast<int>(::getpid())));
    ::_exit(peer_closed(fd) ? 0 : 5);
  }
  ASSERT_TRUE(pump(*server_, [&] { return server_->counters().refused_uid == 1; }));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: cannot become nobody, 4: cannot connect, 5: not refused";
  EXPECT_TRUE(received_.empty());
  EXPECT_EQ(server_->counters().accepted, 0u);
  // Ours still get in afterwards.
  int ok = connect_to(sock());
  ASSERT_TRUE(write_message(ok, request(1)).ok());
  ASSERT_TRUE(pump(*server_, [&] { return received_.size() == 1; }));
  ::close(ok);
}

TEST_F(ServerTest, ListeningReplacesAStaleSocket) {
  std::string path = dir_ + "/stale";
  {
    auto first = JobServer::listen(path);
    ASSERT_TRUE(first.ok());
  }  // destroyed: the socket file stays, its directory's to remove (as a crashed governor's would)
  EXPECT_TRUE(path_exists(path));
  auto again = JobServer::listen(path);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE(JobServer::listen("/tmp/" + std::string(200, 'x')).ok());
}

TEST_F(ServerTest, DropsConnectionsThatStayQuietOrHalfSpoken) {
  int silent = connect_to(sock());
  int half = connect_to(sock());
  int waiting = connect_to(sock());
  ASSERT_GE(silent, 0);
  ASSERT_GE(half, 0);
  ASSERT_GE(waiting, 0);
  send_raw(half, header_of(100) + "{\"type\":");  // a frame that never completes
  ASSERT_TRUE(write_message(waiting, request(::getpid())).ok());
  ASSERT_TRUE(pump(*server_, [&] { return server_->connection_count() == 3 && received_.size() == 1; }));
  double now = JobServer::monotonic_seconds();
  server_->drop_idle(now + 1);
  EXPECT_EQ(server_->connection_count(), 3u) << "a second is not idle";
  server_->drop_idle(now + JobServer::kQuietLimit_s - 0.5);
  EXPECT_EQ(server_->connection_count(), 3u);
  // Quiet for long enough now, but the connections were looked at less
  // than kIdleCheckEvery_s ago: the next look drops them.
  server_->drop_idle(now + JobServer::kQuietLimit_s + 0.2);
  EXPECT_EQ(server_->connection_count(), 3u) << "looked at once a second, not every tick";
  server_->drop_idle(now + JobServer::kQuietLimit_s + 1);
  EXPECT_EQ(server_->connection_count(), 1u) << "the silent and the half-spoken go; the queued wrapper stays";
  EXPECT_EQ(server_->counters().dropped_idle, 2u);
  EXPECT_EQ(closed_.size(), 2u);
  EXPECT_TRUE(peer_closed(silent));
  EXPECT_TRUE(peer_closed(half));
  for (int fd : {silent, half, waiting}) ::close(fd);
}

TEST_F(ServerTest, BuffersAtMostTheCapOfIncompleteFramesAcrossConnections) {
  // Each connection holds just under one frame; together they pass the cap.
  const std::size_t per = kMaxFrame - 16;
  const std::size_t n = JobServer::kBufferedCap / per + 2;
  std::vector<int> fds;
  std::string chunk = header_of(kMaxFrame) + std::string(per - 4, 'x');
  for (std::size_t i = 0; i < n; ++i) {
    int fd = connect_to(sock());
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  ASSERT_TRUE(pump(*server_, [&] { return server_->connection_count() == n; }));
  // Writers run beside the loop: each connection's data exceeds the socket buffer.
  std::vector<std::thread> writers;
  std::atomic<std::size_t> written{0};
  for (int fd : fds) writers.emplace_back([fd, &chunk, &written] {
    std::size_t off = 0;
    while (off < chunk.size()) {
      ssize_t w = ::send(fd, chunk.data() + off, chunk.size() - off, MSG_NOSIGNAL);
      if (w <= 0) break;  // dropped by the server
      off += static_cast<std::size_t>(w);
    }
    ++written;
  });
  // Keep serving until every writer is done: a writer blocks until the
  // server reads its data.
  bool ok = pump(*server_, [&] { return written == fds.size(); });
  if (!ok)
    for (int fd : fds) ::shutdown(fd, SHUT_RDWR);  // unblock the writers so the test ends
  for (auto& w : writers) w.join();
  ASSERT_TRUE(ok);
  EXPECT_GE(server_->counters().dropped_malformed, 1u);
  EXPECT_LT(server_->connection_count(), n);
  for (int fd : fds) ::close(fd);
}
