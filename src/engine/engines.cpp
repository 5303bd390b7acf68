// The adapters: distcc, icecc and sccache, as engine.hpp sees them.
#include <array>

#include "core/job_class.hpp"
#include "engine/distcc.hpp"
#include "engine/engine.hpp"
#include "util/text.hpp"

namespace memgate {

int Engine::remote_slots(const EnvLookup&) const { return 0; }

bool Engine::takes(const JobKey& key) const {
  constexpr std::array<std::string_view, 6> kCFamily = {"cc", "c++", "gcc", "g++", "clang", "clang++"};
  bool c_family = false;
  for (auto t : kCFamily) c_family |= key.tool == t;
  const JobClass klass = parse_job_class(key.klass);
  return c_family && !klass.remote() && klass.tool == key.tool && klass.is_compile();
}

std::unique_ptr<EngineAttempt> Engine::watch() const { return nullptr; }

std::vector<std::string> Engine::command(const std::string& engine_exe, const std::vector<std::string>& argv) const {
  std::vector<std::string> out{engine_exe};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

JobKey Engine::key(JobKey local) const { return with_engine(std::move(local), name()); }

namespace {

class Distcc final : public Engine {
 public:
  std::string_view name() const override { return "distcc"; }
  bool sends_away() const override { return true; }
  int remote_slots(const EnvLookup& env) const override {
    const char* hosts = env("DISTCC_HOSTS");
    return hosts ? distcc_remote_slots(hosts) : 0;
  }
  std::unique_ptr<EngineAttempt> watch() const override { return watch_distcc_log(); }
};

// icecc's scheduler decides where a job goes and how many may be out: its
// jobs take local slots, and it says nothing of a local fallback.
class Icecc final : public Engine {
 public:
  std::string_view name() const override { return "icecc"; }
  bool sends_away() const override { return true; }
};

// Without its dist server sccache compiles, or finds in its cache, here.
class Sccache final : public Engine {
 public:
  std::string_view name() const override { return "sccache"; }
  bool sends_away() const override { return false; }
};

const Distcc kDistcc;
const Icecc kIcecc;
const Sccache kSccache;
const std::array<const Engine*, 3> kEngines = {&kDistcc, &kIcecc, &kSccache};

}  // namespace

const Engine* find_engine(std::string_view program) {
  std::string_view base = base_name(program);
  if (base == "pump") return &kDistcc;  // distcc's include server, in front of distcc
  for (const Engine* e : kEngines)
    if (e->name() == base) return e;
  return nullptr;
}

const Engine* sending_engine(std::string_view program) {
  const Engine* e = find_engine(program);
  return e && e->sends_away() ? e : nullptr;
}

const std::vector<std::string>& engine_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Engine* e : kEngines) v.emplace_back(e->name());
    return v;
  }();
  return names;
}

}  // namespace memgate
