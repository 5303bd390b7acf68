#include "run/job_server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include <fmt/core.h>

#include "util/clock.hpp"
#include "util/log.hpp"

namespace memgate {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
// One connection gets at most this much reading per loop turn, so a
// flooding peer cannot starve the others (or the governor's own work).
constexpr std::size_t kReadPerTurn = 1024 * 1024;
constexpr std::size_t kConnectionCap = 16384;
constexpr std::size_t kFdReserve = 64;  // fds kept for cgroups, /proc, history
constexpr rlim_t kNofileTarget = 65536;
constexpr std::uint64_t kMaxLoggedDrops = 20;
// Readiness comes from epoll, so a loop turn costs what is ready, not
// every connection: thousands of wrappers wait at once on a big build.
// At most this many ready connections are served per turn.
constexpr int kEventsPerTurn = 1024;
constexpr std::uint64_t kListenTag = 0;  // epoll data of the listening socket; ConnIds start at 1

struct Conn {
  int fd = -1;
  pid_t pid = 0;
  double accepted_s = 0;
  double partial_since_s = -1;  // when an incomplete frame began to wait; -1: none
  bool spoke = false;           // a whole message arrived
  FrameDecoder decoder;
  std::string out;  // frames not yet taken by the socket
  bool broken = false;
  std::uint32_t watched = 0;  // the epoll events registered for it
};

// Raises the soft fd limit (hundreds of wrappers wait at once) and
// returns how many connections that leaves room for; *hard is the hard
// limit (0: unknown or unlimited).
std::size_t connection_limit(rlim_t* hard) {
  rlimit rl{};
  *hard = 0;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 256;
  if (rl.rlim_max != RLIM_INFINITY) *hard = rl.rlim_max;
  rlim_t want = std::min<rlim_t>(rl.rlim_max, kNofileTarget);
  if (rl.rlim_cur < want) {
    rlimit raised = rl;
    raised.rlim_cur = want;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  std::size_t soft = rl.rlim_cur == RLIM_INFINITY ? kConnectionCap : static_cast<std::size_t>(rl.rlim_cur);
  if (soft < kFdReserve + 16) return 16;
  return std::min(kConnectionCap, soft - kFdReserve);
}

}  // namespace

std::string full_note(std::size_t max_conns, std::uint64_t nofile_hard) {
  if (nofile_hard > 0 && max_conns + kFdReserve >= nofile_hard)
    return fmt::format("{} wrapper connections are open, as many as the open-file hard limit of {} lets memgate hold; the "
                       "rest wait to connect and are seen as others finish (admission cannot choose among them, "
                       "and at most {} jobs run at once): raise the hard limit (ulimit -Hn, systemd LimitNOFILE=) "
                       "to let memgate see them all",
                       max_conns, nofile_hard, max_conns);
  return fmt::format("{} wrapper connections are open, as many as memgate holds at once; the rest wait to connect and are "
                     "seen as others finish",
                     max_conns);
}

struct JobServer::State {
  std::string path;
  int listen_fd = -1;
  int epoll_fd = -1;
  bool listening = false;  // the listening socket is in the epoll set
  std::unordered_map<ConnId, Conn> conns;
  std::unordered_map<int, ConnId> by_fd;
  ConnId next_id = 1;
  ServerCounters counters;
  std::size_t max_conns = 256;
  bool skip_accept_once = false;  // after EMFILE: sit out one poll turn
  std::uint64_t logged_drops = 0;
  std::uint64_t logged_refusals = 0;
  std::size_t writers = 0;  // connections waiting for POLLOUT
  rlim_t nofile_hard = 0;   // RLIMIT_NOFILE's hard limit (0: none)
  bool warned_full = false;
  double next_idle_check_s = 0;  // drop_idle walks the connections once a second

  // Registers what the connection waits for: input always, output while
  // frames are queued.
  bool watch(ConnId id, Conn& c) {
    std::uint32_t want = EPOLLIN | (!c.out.empty() && !c.broken ? EPOLLOUT : 0u);
    if (want == c.watched) return true;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd, c.watched == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd, &ev) != 0) return false;
    if ((want & EPOLLOUT) && !(c.watched & EPOLLOUT)) ++writers;
    if (!(want & EPOLLOUT) && (c.watched & EPOLLOUT)) --writers;
    c.watched = want;
    return true;
  }
  void listen_for(bool accept) {
    if (accept == listening) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenTag;
    if (::epoll_ctl(epoll_fd, accept ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd, &ev) == 0) listening = accept;
  }

  Conn* find(ConnId id) {
    auto it = conns.find(id);
    return it == conns.end() ? nullptr : &it->second;
  }
  void drop(ConnId id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    if (it->second.watched & EPOLLOUT) --writers;
    by_fd.erase(it->second.fd);
    ::close(it->second.fd);  // also leaves the epoll set
    conns.erase(it);
  }
};

JobServer::JobServer(std::unique_ptr<State> s) : s_(std::move(s)) {}
JobServer::JobServer(JobServer&&) noexcept = default;
JobServer& JobServer::operator=(JobServer&&) noexcept = default;

JobServer::~JobServer() {
  if (!s_) return;
  for (auto& [id, c] : s_->conns) ::close(c.fd);
  if (s_->listen_fd >= 0) ::close(s_->listen_fd);
  if (s_->epoll_fd >= 0) ::close(s_->epoll_fd);
}

Result<JobServer> JobServer::listen(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path)
    return Error{fmt::format("socket path too long ({} bytes, at most {}): {}", socket_path.size(),
                             sizeof addr.sun_path - 1, socket_path)};
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);

  struct stat st;
  if (::lstat(socket_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(socket_path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{fmt::format("socket: {}", std::strerror(errno))};
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    int e = errno;
    ::close(fd);
    return Error{fmt::format("cannot listen on {}: {}", socket_path, std::strerror(e))};
  }
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    int e = errno;
    ::close(fd);
    return Error{fmt::format("epoll_create1: {}", std::strerror(e))};
  }
  auto s = std::make_unique<State>();
  s->path = socket_path;
  s->listen_fd = fd;
  s->epoll_fd = ep;
  s->max_conns = connection_limit(&s->nofile_hard);
  return JobServer(std::move(s));
}

void JobServer::append_pollfds(std::vector<pollfd>& fds) const {
  s_->listen_for(s_->conns.size() < s_->max_conns && !s_->skip_accept_once);
  s_->skip_accept_once = false;
  fds.push_back({s_->epoll_fd, POLLIN, 0});
}

void JobServer::handle_ready(const std::vector<pollfd>& fds) {
  bool ours = false;
  for (const pollfd& p : fds) ours |= p.fd == s_->epoll_fd && p.revents != 0;
  if (!ours) return;
  epoll_event events[kEventsPerTurn];
  int n;
  do {
    n = ::epoll_wait(s_->epoll_fd, events, kEventsPerTurn, 0);
  } while (n < 0 && errno == EINTR);
  bool listen_ready = false;
  for (int i = 0; i < n; ++i) {
    const ConnId id = events[i].data.u64;
    if (id == kListenTag) {
      listen_ready = true;
      continue;
    }
    if (!s_->find(id)) continue;  // closed by a callback this turn
    if (events[i].events & EPOLLOUT) flush(id);
    if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_from(id);
  }
  if (listen_ready) accept_all();
}

void JobServer::accept_all() {
  while (s_->conns.size() < s_->max_conns) {
    int fd = ::accept4(s_->listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) s_->skip_accept_once = true;
      return;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
      ++s_->counters.refused_uid;
      if (s_->logged_refusals++ < kMaxLoggedDrops)
        log::warn("refused a connection from uid {} (pid {}): only uid {} may use this socket", cred.uid,
                  cred.pid, ::geteuid());
      ::close(fd);
      continue;
    }
    ConnId id = s_->next_id++;
    Conn c;
    c.fd = fd;
    c.pid = cred.pid;
    c.accepted_s = monotonic_seconds();
    auto& conn = s_->conns.emplace(id, std::move(c)).first->second;
    s_->by_fd[fd] = id;
    if (!s_->watch(id, conn)) {  // never to be heard: the wrapper sees the hang-up and retries or fails open
      log::warn("cannot watch a wrapper connection: {}", std::strerror(errno));
      s_->drop(id);
      continue;
    }
    ++s_->counters.accepted;
    if (s_->conns.size() == s_->max_conns && !s_->warned_full) {
      s_->warned_full = true;
      log::warn("{}", full_note(s_->max_conns, s_->nofile_hard));
    }
  }
}

void JobServer::flush(ConnId id) {
  Conn* c = s_->find(id);
  if (!c) return;
  if (c->out.empty()) {
    s_->watch(id, *c);
    return;
  }
  ssize_t n;
  do {
    n = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) {
    c->out.erase(0, static_cast<std::size_t>(n));
  } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
    // The peer is gone; reading will see the hang-up and report it.
    c->broken = true;
    c->out.clear();
  }
  s_->watch(id, *c);
}

void JobServer::drop_malformed(ConnId id, const std::string& why) {
  Conn* c = s_->find(id);
  if (!c) return;
  ++s_->counters.dropped_malformed;
  if (s_->logged_drops < kMaxLoggedDrops)
    log::warn("dropped a malformed message from pid {}: {}", c->pid, why);
  else if (s_->logged_drops == kMaxLoggedDrops)
    log::warn("more malformed messages were dropped; not logging them any more");
  ++s_->logged_drops;
  s_->drop(id);
  if (on_closed) on_closed(id);
}

void JobServer::read_from(ConnId id) {
  char buf[kReadChunk];
  std::size_t taken = 0;
  while (taken < kReadPerTurn) {
    Conn* c = s_->find(id);
    if (!c) return;  // a callback closed it
    ssize_t n = ::read(c->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      if (n == 0 && c->decoder.mid_frame()) return drop_malformed(id, "truncated frame");
      ++s_->counters.closed_by_peer;
      s_->drop(id);
      if (on_closed) on_closed(id);
      return;
    }
    taken += static_cast<std::size_t>(n);
    c->decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    if (!deliver(id)) return;
    c = s_->find(id);
    if (!c) return;
    if (!c->decoder.mid_frame()) c->partial_since_s = -1;
    else if (c->partial_since_s < 0) c->partial_since_s = monotonic_seconds();
    // Summing every connection is cheap next to a 64 KiB read, and only a
    // frame that keeps arriving in pieces gets here.
    if (c->decoder.buffered() >= kReadChunk && buffered_total() > kBufferedCap)
      return drop_malformed(id, "too much incomplete data buffered");
  }
}

// Pops every complete frame; false once the connection is gone.
bool JobServer::deliver(ConnId id) {
  for (;;) {
    Conn* c = s_->find(id);
    if (!c) return false;
    auto msg = c->decoder.pop();
    if (!msg) return true;
    if (!*msg) {
      drop_malformed(id, msg->error());
      return false;
    }
    c->spoke = true;
    if (on_message) on_message(id, msg->value());
  }
}

std::size_t JobServer::buffered_total() const {
  std::size_t sum = 0;
  for (const auto& [id, c] : s_->conns) sum += c.decoder.buffered();
  return sum;
}

double JobServer::monotonic_seconds() { return monotonic_s(); }

void JobServer::drop_idle(double now_s) {
  // A tick comes every few ms under load; a connection's quiet is counted
  // in tens of seconds, so a walk of every connection (5000 wrappers
  // waiting at bench/scale's largest size) once a second is enough.
  if (now_s < s_->next_idle_check_s) return;
  s_->next_idle_check_s = now_s + kIdleCheckEvery_s;
  std::vector<ConnId> quiet;
  for (const auto& [id, c] : s_->conns) {
    bool silent = !c.spoke && now_s - c.accepted_s > kQuietLimit_s;
    bool stuck = c.partial_since_s >= 0 && now_s - c.partial_since_s > kQuietLimit_s;
    if (silent || stuck) quiet.push_back(id);
  }
  for (ConnId id : quiet) {
    Conn* c = s_->find(id);
    if (!c) continue;  // an earlier on_closed closed it
    ++s_->counters.dropped_idle;
    if (s_->logged_drops++ < kMaxLoggedDrops)
      log::warn("dropped a connection from pid {}: {} for {:.0f} s", c->pid,
                c->spoke ? "half a message" : "nothing sent", kQuietLimit_s);
    s_->drop(id);
    if (on_closed) on_closed(id);
  }
}

bool JobServer::send(ConnId id, const Message& m) {
  Conn* c = s_->find(id);
  if (!c || c->broken) return false;
  bool idle = c->out.empty();
  c->out += encode_frame(m);
  if (idle) flush(id);
  c = s_->find(id);
  return c && !c->broken;
}

void JobServer::close(ConnId id) { s_->drop(id); }

pid_t JobServer::peer_pid(ConnId id) const {
  Conn* c = s_->find(id);
  return c ? c->pid : 0;
}
std::size_t JobServer::connection_count() const { return s_->conns.size(); }
bool JobServer::has_pending_writes() const { return s_->writers > 0; }
std::size_t JobServer::max_connections() const { return s_->max_conns; }
const ServerCounters& JobServer::counters() const { return s_->counters; }
const std::string& JobServer::path() const { return s_->path; }

Result<PrivateDir> make_socket_dir() {
  std::vector<std::string> bases;
  std::vector<std::string> named;  // "VAR=value", for the warning
  for (const char* var : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* v = std::getenv(var);
    if (v && v[0] == '/') {
      bases.emplace_back(v);
      named.push_back(fmt::format("{}={}", var, v));
    }
  }
  bases.emplace_back("/tmp");
  bases.emplace_back("/run");
  // Room for "/sock.warned" and friends inside sun_path's 108 bytes.
  constexpr std::size_t kMaxDirLen = sizeof(sockaddr_un::sun_path) - 32;
  std::vector<std::string> skipped;
  auto dir = PrivateDir::create(bases, kMaxDirLen, &skipped);
  if (!dir) return Error{fmt::format("no safe directory for the socket ({})", dir.error())};
  // A base the user named (environment) and memgate passed over is worth
  // a line: a shared TMPDIR is a mistake on a machine run as root.
  for (std::size_t i = 0; i < skipped.size() && i < named.size(); ++i)
    log::warn("not putting the socket under {}: {}; using {}", named[i], skipped[i],
              dir->path().substr(0, dir->path().find_last_of('/')));
  return dir;
}

}  // namespace memgate
