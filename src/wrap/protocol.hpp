// The wire protocol between a wrapper and the runner (the `memgate run`
// process; its Governor class only decides, it never touches the wire).
//
// A frame is a 4-byte little-endian payload length followed by the
// payload, a JSON object whose "type" names the message. One wrapper
// connection carries one job:
//
//   wrapper -> runner     request   what is about to run
//   runner  -> wrapper    grant     start now (join these cgroups first)
//   wrapper -> runner     started   the child's pid
//   wrapper -> runner     exit      how the attempt ended, with measurements
//   runner  -> wrapper    verdict   rerun (wait for another grant) or done
//
// Anything else on the wire (a length over kMaxFrame, a zero length, bad
// JSON, an unknown type, a missing or wrongly typed field, a number out of
// its range) is a protocol error: the receiver drops the connection.
// Ranges: cpu_weight 1..kMaxCpuWeight, pids > 0, times 0..kMaxSeconds,
// maxrss_bytes and tu_bytes 0..kMaxReportedBytes; nothing a peer sends can reach the
// governor's arithmetic or history unbounded. JSON stays inside protocol.cpp
// so the rest of memgate compiles without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/job.hpp"
#include "util/result.hpp"
#include "util/size.hpp"

namespace memgate {

constexpr std::uint32_t kMaxFrame = 1024 * 1024;  // payload bytes
constexpr int kProtocolVersion = 1;
constexpr double kMaxSeconds = 1e8;                  // a job's wall or CPU time: about 3 years
constexpr std::int64_t kMaxReportedBytes = std::int64_t{1} << 50;  // 1 PiB

struct RequestMsg {
  int v = kProtocolVersion;
  std::vector<std::string> argv;  // real program + args; may be truncated (see argv_truncated)
  bool argv_truncated = false;    // argv was cut to keep the frame under kMaxFrame (history says so)
  std::string cwd;
  std::string tool, identity, klass, stem;  // from analyze_command()
  int cpu_weight = 1;  // 1..kMaxCpuWeight on the wire
  // The distributed engine the build's own launcher hands this compile to
  // ("distcc", "icecc"; see engine_of_launch), empty for a local job.
  // Optional on the wire.
  std::string engine;
  // The translation unit's preprocessed size in bytes (wrap/tu_size.hpp),
  // 0 when not measured. Optional on the wire.
  std::int64_t tu_bytes = 0;
};

struct GrantMsg {
  int job = 0;
  int attempt = 0;
  std::vector<std::string> cgroups;  // dirs the child joins (cgroup.procs) before exec
  // Run the program through this engine ("distcc": `distcc PROGRAM ARGS`)
  // instead of here: memgate offloads a job that would wait for local
  // memory (--offload). Optional on the wire; a bare program name.
  std::string offload;
  // Do not run it at all: exit non-zero at once (--decline-after on a build
  // server: the distcc client then compiles the file itself).
  bool decline = false;
};

struct StartedMsg {
  int pid = 0;  // the child running the program
};

struct ExitMsg {
  int status = 0;       // raw wait status (WIFEXITED/WIFSIGNALED apply)
  double cpu_s = 0;     // user + system of the child and the descendants it reaped
  // Largest RSS of any single process in the tree (getrusage): a floor
  // under the job's peak where no cgroup measured it.
  Bytes maxrss_bytes = 0;
  // The engine the job went through compiled it on this machine after all
  // (distcc's log says "exec on localhost": its fallback, its local retry,
  // localhost in its hosts). Optional on the wire.
  bool ran_here = false;
};

struct VerdictMsg {
  bool rerun = false;  // true: wait for a new grant and run the program again
};

using Message = std::variant<RequestMsg, GrantMsg, StartedMsg, ExitMsg, VerdictMsg>;

// "request", "grant", ... for logs.
const char* message_type(const Message& m);

// The JSON payload alone. A request whose argv would not fit in kMaxFrame
// is encoded with its argv cut short and argv_truncated set; the argv only
// serves identity, digests and display. Strings that are not UTF-8 are
// encoded with U+FFFD in place of the bad bytes.
std::string encode_payload(const Message& m);
// Length prefix + payload.
std::string encode_frame(const Message& m);
Result<Message> decode_payload(std::string_view payload);

// Parses the 4-byte header; an error for a zero or oversized length.
Result<std::uint32_t> decode_length(const unsigned char header[4]);

// Incremental decoding for nonblocking readers: feed whatever arrived,
// then pop messages until it says it needs more. After an error the stream
// cannot be resynchronised, so the error is sticky.
class FrameDecoder {
 public:
  void feed(std::string_view bytes);
  // nullopt: no complete frame buffered yet. Otherwise a message or the
  // protocol error that ended the stream.
  std::optional<Result<Message>> pop();
  bool failed() const { return failed_; }
  // Bytes of an incomplete frame are buffered: an EOF now means the peer
  // sent a truncated frame.
  bool mid_frame() const { return buf_.size() > pos_; }
  // Bytes held for frames not yet complete.
  std::size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  std::size_t pos_ = 0;  // start of the unconsumed bytes
  bool failed_ = false;
};

// Blocking helpers for the wrapper. Writes never raise SIGPIPE on a
// socket. read_message returns an error that says "closed" when the peer
// hung up cleanly between frames.
Status write_message(int fd, const Message& m);
Result<Message> read_message(int fd);
bool is_closed_error(const std::string& error);

}  // namespace memgate
