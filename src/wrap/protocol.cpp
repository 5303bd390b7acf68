#include "wrap/protocol.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "util/json.hpp"

namespace memgate {
namespace {

using json = nlohmann::json;

// Deeper nesting than any real message has is rejected before a value is
// built (util/json.hpp), so a hostile peer cannot make the parser or the
// destructor recurse deeply. No frame can hold more values than half its
// bytes ("0,"), so that limit only says so.
constexpr JsonLimits kWireLimits{16, kMaxFrame / 2};
// One argv element longer than this is cut in a request (it still fits
// any real path or flag; only giant -D values lose their tail).
constexpr std::size_t kMaxArgBytes = 64 * 1024;
constexpr std::string_view kClosed = "closed by peer";

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json to_json(const Message& m) {
  json j;
  if (auto* r = std::get_if<RequestMsg>(&m)) {
    j = {{"type", "request"}, {"v", r->v}, {"argv", r->argv}, {"cwd", r->cwd},
         {"tool", r->tool}, {"identity", r->identity}, {"klass", r->klass}, {"stem", r->stem},
         {"cpu_weight", r->cpu_weight}};
    if (r->argv_truncated) j["argv_truncated"] = true;
    if (!r->engine.empty()) j["engine"] = r->engine;
    if (r->tu_bytes > 0) j["tu_bytes"] = r->tu_bytes;
  } else if (auto* g = std::get_if<GrantMsg>(&m)) {
    j = {{"type", "grant"}, {"job", g->job}, {"attempt", g->attempt}, {"cgroups", g->cgroups}};
    if (!g->offload.empty()) j["offload"] = g->offload;
    if (g->decline) j["decline"] = true;
  } else if (auto* s = std::get_if<StartedMsg>(&m)) {
    j = {{"type", "started"}, {"pid", s->pid}};
  } else if (auto* e = std::get_if<ExitMsg>(&m)) {
    j = {{"type", "exit"}, {"status", e->status}, {"cpu_s", e->cpu_s}, {"maxrss_bytes", e->maxrss_bytes}};
    if (e->ran_here) j["ran_here"] = true;
  } else if (auto* v = std::get_if<VerdictMsg>(&m)) {
    j = {{"type", "verdict"}, {"rerun", v->rerun}};
  }
  return j;
}

// Field readers: each returns false (and names the field) when the field
// is missing or has the wrong type, so decode can stay a flat list.
struct Reader {
  const json& j;
  std::string error;

  const json* field(const char* name) {
    auto it = j.find(name);
    if (it == j.end()) {
      if (error.empty()) error = fmt::format("missing field '{}'", name);
      return nullptr;
    }
    return &*it;
  }
  bool bad(const char* name, const char* want) {
    if (error.empty()) error = fmt::format("field '{}' is not {}", name, want);
    return false;
  }
  bool get(const char* name, std::int64_t& out, std::int64_t lo, std::int64_t hi) {
    const json* f = field(name);
    if (!f) return false;
    if (!f->is_number_integer()) return bad(name, "an integer");
    if (f->is_number_unsigned() && f->get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      return bad(name, "in range");
    std::int64_t v = f->get<std::int64_t>();
    if (v < lo || v > hi) return bad(name, "in range");
    out = v;
    return true;
  }
  bool get(const char* name, int& out) {
    std::int64_t v = 0;
    if (!get(name, v, INT_MIN, INT_MAX)) return false;
    out = static_cast<int>(v);
    return true;
  }
  bool get(const char* name, int& out, int lo, int hi) {
    std::int64_t v = 0;
    if (!get(name, v, lo, hi)) return false;
    out = static_cast<int>(v);
    return true;
  }
  // NaN fails both comparisons, so it is out of range too.
  bool get(const char* name, double& out, double lo, double hi) {
    const json* f = field(name);
    if (!f) return false;
    if (!f->is_number()) return bad(name, "a number");
    double v = f->get<double>();
    if (!(v >= lo && v <= hi)) return bad(name, "in range");
    out = v;
    return true;
  }
  bool get(const char* name, bool& out) {
    const json* f = field(name);
    if (!f) return false;
    if (!f->is_boolean()) return bad(name, "a boolean");
    out = f->get<bool>();
    return true;
  }
  bool get(const char* name, std::string& out) {
    const json* f = field(name);
    if (!f) return false;
    if (!f->is_string()) return bad(name, "a string");
    out = f->get<std::string>();
    return true;
  }
  bool get(const char* name, std::vector<std::string>& out) {
    const json* f = field(name);
    if (!f) return false;
    if (!f->is_array()) return bad(name, "an array of strings");
    out.clear();
    for (const auto& e : *f) {
      if (!e.is_string()) return bad(name, "an array of strings");
      out.push_back(e.get<std::string>());
    }
    return true;
  }
};

// An engine is a bare program name the wrapper looks up in PATH: never a
// path, never empty, short.
bool valid_engine(const std::string& engine, Reader& r) {
  bool ok = !engine.empty() && engine.size() <= 32 && engine.find('/') == std::string::npos &&
            engine != "." && engine != "..";
  return ok || r.bad("engine", "a program name");
}

Result<Message> decode_request(Reader& r) {
  RequestMsg m;
  bool ok = r.get("v", m.v) && r.get("argv", m.argv) && r.get("cwd", m.cwd) && r.get("tool", m.tool) &&
            r.get("identity", m.identity) && r.get("klass", m.klass) && r.get("stem", m.stem) &&
            r.get("cpu_weight", m.cpu_weight, 1, kMaxCpuWeight);
  if (ok && r.j.contains("argv_truncated")) ok = r.get("argv_truncated", m.argv_truncated);
  if (ok && r.j.contains("engine")) ok = r.get("engine", m.engine) && valid_engine(m.engine, r);
  if (ok && r.j.contains("tu_bytes")) ok = r.get("tu_bytes", m.tu_bytes, 0, kMaxReportedBytes);
  if (!ok) return Error{r.error};
  if (m.v != kProtocolVersion)
    return Error{fmt::format("unsupported protocol version {} (this memgate speaks {})", m.v, kProtocolVersion)};
  return Message{std::move(m)};
}

Result<Message> decode_object(const json& j) {
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) return Error{"no message type"};
  const std::string& t = type->get_ref<const std::string&>();
  Reader r{j, {}};
  if (t == "request") return decode_request(r);
  if (t == "grant") {
    GrantMsg m;
    bool ok = r.get("job", m.job) && r.get("attempt", m.attempt) && r.get("cgroups", m.cgroups);
    if (ok && r.j.contains("offload")) ok = r.get("offload", m.offload) && valid_engine(m.offload, r);
    if (ok && r.j.contains("decline")) ok = r.get("decline", m.decline);
    if (ok) return Message{m};
  } else if (t == "started") {
    StartedMsg m;
    if (r.get("pid", m.pid, 1, INT_MAX)) return Message{m};
  } else if (t == "exit") {
    ExitMsg m;
    std::int64_t rss = 0;
    if (r.get("status", m.status) && r.get("cpu_s", m.cpu_s, 0, kMaxSeconds) &&
        r.get("maxrss_bytes", rss, 0, kMaxReportedBytes) &&
        (!r.j.contains("ran_here") || r.get("ran_here", m.ran_here))) {
      m.maxrss_bytes = rss;
      return Message{m};
    }
  } else if (t == "verdict") {
    VerdictMsg m;
    if (r.get("rerun", m.rerun)) return Message{m};
  } else {
    return Error{fmt::format("unknown message type '{}'", t.substr(0, 40))};
  }
  return Error{fmt::format("{} message: {}", t, r.error)};
}

// Cuts argv (element lengths first, then the element count) until the
// request fits; halving keeps this to a few encodes even for huge argvs.
std::string encode_request_bounded(RequestMsg r) {
  std::string out = dump(to_json(r));
  if (out.size() <= kMaxFrame) return out;
  r.argv_truncated = true;
  for (auto& a : r.argv)
    if (a.size() > kMaxArgBytes) a.resize(kMaxArgBytes);
  for (auto* s : {&r.cwd, &r.tool, &r.identity, &r.klass, &r.stem})
    if (s->size() > kMaxArgBytes) s->resize(kMaxArgBytes);
  for (;;) {
    out = dump(to_json(r));
    if (out.size() <= kMaxFrame || r.argv.size() <= 1) return out;
    r.argv.resize(r.argv.size() / 2);
  }
}

Status write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{fmt::format("write: {}", std::strerror(errno))};
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok_status();
}

// 1 = filled, 0 = EOF before any byte, -1 = error or EOF mid-way.
int read_exact(int fd, char* buf, std::size_t len, std::string& error) {
  std::size_t got = 0;
  while (got < len) {
    ssize_t n = ::read(fd, buf + got, len - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = fmt::format("read: {}", std::strerror(errno));
      return -1;
    }
    if (n == 0) {
      if (got == 0) return 0;
      error = "truncated frame";
      return -1;
    }
    got += static_cast<std::size_t>(n);
  }
  return 1;
}

}  // namespace

const char* message_type(const Message& m) {
  static const char* const names[] = {"request", "grant", "started", "exit", "verdict"};
  return names[m.index()];
}

std::string encode_payload(const Message& m) {
  if (auto* r = std::get_if<RequestMsg>(&m)) return encode_request_bounded(*r);
  return dump(to_json(m));
}

std::string encode_frame(const Message& m) {
  std::string payload = encode_payload(m);
  auto n = static_cast<std::uint32_t>(payload.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += payload;
  return out;
}

Result<Message> decode_payload(std::string_view payload) {
  auto j = parse_json_bounded(payload, kWireLimits);
  if (!j) return Error{j.error()};
  if (!j->is_object()) return Error{"not a JSON object"};
  return decode_object(*j);
}

Result<std::uint32_t> decode_length(const unsigned char header[4]) {
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(header[i]) << (8 * i);
  if (n == 0) return Error{"zero-length frame"};
  if (n > kMaxFrame) return Error{fmt::format("frame of {} bytes exceeds the {} byte limit", n, kMaxFrame)};
  return n;
}

void FrameDecoder::feed(std::string_view bytes) {
  if (failed_) return;
  // Compact lazily: only when the consumed prefix dominates the buffer.
  if (pos_ > 0 && pos_ * 2 >= buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

std::optional<Result<Message>> FrameDecoder::pop() {
  if (failed_) return std::nullopt;
  if (buf_.size() - pos_ < 4) return std::nullopt;
  auto len = decode_length(reinterpret_cast<const unsigned char*>(buf_.data() + pos_));
  if (!len) {
    failed_ = true;
    return Result<Message>(Error{len.error()});
  }
  if (buf_.size() - pos_ - 4 < *len) return std::nullopt;
  auto msg = decode_payload(std::string_view(buf_).substr(pos_ + 4, *len));
  pos_ += 4 + *len;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  if (!msg) failed_ = true;
  return msg;
}

Status write_message(int fd, const Message& m) { return write_all(fd, encode_frame(m)); }

Result<Message> read_message(int fd) {
  unsigned char header[4];
  std::string error;
  int r = read_exact(fd, reinterpret_cast<char*>(header), 4, error);
  if (r == 0) return Error{std::string(kClosed)};
  if (r < 0) return Error{error};
  auto len = decode_length(header);
  if (!len) return Error{len.error()};
  std::string payload(*len, '\0');
  if (read_exact(fd, payload.data(), payload.size(), error) != 1)
    return Error{error.empty() ? "truncated frame" : error};
  return decode_payload(payload);
}

bool is_closed_error(const std::string& error) { return error == kClosed; }

}  // namespace memgate
