// `memgate run`'s end of the wrapper socket (the wrappers' end is
// wrap/client.cpp; the wire is wrap/protocol.hpp): a nonblocking Unix
// stream server that the runner's own poll() loop drives.
//
// How to drive it, once per loop turn:
//
//   std::vector<pollfd> fds = {...the loop's own fds...};
//   server.append_pollfds(fds);          // one fd: the server's epoll set
//   poll(fds.data(), fds.size(), timeout);
//   server.handle_ready(fds);            // accepts, reads, flushes; fires callbacks
//
// The listening socket and every connection sit in one epoll set, so a
// loop turn costs what is ready, not every waiting wrapper. handle_ready
// only looks at the entry whose fd it owns, so the vector may hold
// anything else too. Callbacks run inside handle_ready and may call
// send() and close() on any connection.
//
// Security: memgate often runs as root on shared machines, so a peer whose uid differs from ours is closed
// at accept and counted; a malformed, oversized or truncated frame drops
// that one connection, is logged once and counted, and the server carries
// on. The socket lives in a private 0700 directory (util/private_dir.hpp),
// which also removes it: nobody else can reach or swap anything there.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/private_dir.hpp"
#include "util/result.hpp"
#include "wrap/protocol.hpp"

namespace memgate {

using ConnId = std::uint64_t;  // never reused within one server

struct ServerCounters {
  std::uint64_t accepted = 0;           // connections taken (uid checked)
  std::uint64_t refused_uid = 0;        // closed at accept: another uid
  std::uint64_t dropped_malformed = 0;  // closed for a bad, oversized or truncated frame
  std::uint64_t closed_by_peer = 0;     // clean hang-ups
  std::uint64_t dropped_idle = 0;       // closed: no request, or half a frame, for too long
};

class JobServer {
 public:
  // Binds and listens on `socket_path` (an existing stale socket there is
  // replaced). Also raises RLIMIT_NOFILE's soft limit towards the hard one:
  // every waiting wrapper holds one connection.
  static Result<JobServer> listen(const std::string& socket_path);

  JobServer(JobServer&&) noexcept;
  JobServer& operator=(JobServer&&) noexcept;
  ~JobServer();  // closes everything; the socket file is its directory's to remove

  // A whole message arrived on a connection.
  std::function<void(ConnId, const Message&)> on_message;
  // The peer hung up, or the server dropped the connection (bad frame, I/O
  // error). Not called for connections the owner close()s itself.
  std::function<void(ConnId)> on_closed;

  void append_pollfds(std::vector<pollfd>& fds) const;
  void handle_ready(const std::vector<pollfd>& fds);
  // Drops connections that sent no whole message within kQuietLimit_s of
  // connecting, or have held half a frame that long: such connections
  // would otherwise sit on the connection cap (and their buffers on
  // memgate's memory) forever. A wrapper sends its request at once and
  // whole, then may wait in the queue for as long as it takes. Call it
  // every tick (it looks at most once per kIdleCheckEvery_s); `now_s` is
  // steady-clock seconds (monotonic_seconds()).
  void drop_idle(double now_s);
  static double monotonic_seconds();
  static constexpr double kQuietLimit_s = 30;
  static constexpr double kIdleCheckEvery_s = 1;
  // All connections together buffer at most this much of incomplete
  // frames; the connection that goes over is dropped as malformed.
  static constexpr std::size_t kBufferedCap = 64 * 1024 * 1024;

  // Queues the frame and writes what the socket takes now; the rest goes
  // out on POLLOUT. False if the connection is unknown or already broken.
  bool send(ConnId id, const Message& m);
  void close(ConnId id);

  // The peer's pid from SO_PEERCRED, or 0 for an unknown connection.
  pid_t peer_pid(ConnId id) const;
  std::size_t connection_count() const;
  // Some connection has frames queued that its socket has not taken yet.
  bool has_pending_writes() const;
  // At most this many connections are open at once; beyond it the server
  // stops accepting (the kernel backlog holds the rest, and their connect()
  // simply waits), so no wrapper is turned away and run ungated.
  std::size_t max_connections() const;
  const ServerCounters& counters() const;
  const std::string& path() const;

 private:
  struct State;
  explicit JobServer(std::unique_ptr<State> s);
  void accept_all();
  void flush(ConnId id);
  void read_from(ConnId id);
  bool deliver(ConnId id);
  void drop_malformed(ConnId id, const std::string& why);
  std::size_t buffered_total() const;
  std::unique_ptr<State> s_;
};

// What memgate says once it holds as many connections as it can
// (max_connections()): whether the open-file hard limit is what bounds
// it, and what to do. `nofile_hard` 0: no hard limit.
std::string full_note(std::size_t max_conns, std::uint64_t nofile_hard);

// A fresh private directory for the socket: under $XDG_RUNTIME_DIR, else
// $TMPDIR, else /tmp, else /run, the first that is trusted all the way up
// (a sticky /tmp is; a TMPDIR another user can write is not, and is
// passed over with a warning) and short enough for a socket path. The
// abstract socket namespace is not used: any local user can bind any name
// in it, and builds in a network namespace of their own (sandboxes,
// `unshare -n`) could not reach it.
Result<PrivateDir> make_socket_dir();

}  // namespace memgate
