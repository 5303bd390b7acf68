#include "core/job_class.hpp"

#include <utility>

namespace memgate {
namespace {

constexpr auto npos = std::string_view::npos;

// The parts every stored form shares, peeled from the outside in: the
// engine in front, the targets at the end. A marker counts only where
// what it marks is not empty, so any text comes back as it was given.
struct Outer {
  std::string_view engine;
  std::string_view body;
  std::vector<std::string> targets;
};

bool is_engine_word(std::string_view w) {
  return !w.empty() && w.back() != '-' && w.find_first_of(":/[#,") == npos;
}

Outer split_outer(std::string_view s) {
  Outer o;
  if (auto gt = s.find('>'); gt != npos && is_engine_word(s.substr(0, gt))) {
    o.engine = s.substr(0, gt);
    s.remove_prefix(gt + 1);
  }
  if (s.size() >= 3 && s.back() == ']') {
    auto open = s.rfind('[');
    if (open != npos && open > 0 && open + 2 < s.size()) {
      std::string_view inside = s.substr(open + 1, s.size() - open - 2);
      for (std::size_t from = 0;;) {
        auto comma = inside.find(',', from);
        o.targets.emplace_back(inside.substr(from, comma == npos ? npos : comma - from));
        if (comma == npos) break;
        from = comma + 1;
      }
      s = s.substr(0, open);
    }
  }
  o.body = s;
  return o;
}

// "TOOL:REST" -> TOOL and REST; no split where REST would be empty.
std::pair<std::string_view, std::string_view> split_colon(std::string_view s) {
  auto c = s.find(':');
  if (c == npos || c + 1 == s.size()) return {s, {}};
  return {s.substr(0, c), s.substr(c + 1)};
}

std::string join_targets(const std::vector<std::string>& targets) {
  if (targets.empty()) return {};
  std::string out = "[";
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (i) out += ',';
    out += targets[i];
  }
  return out + "]";
}

std::string head(const JobClass& c) { return c.engine.empty() ? c.tool : c.engine + ">" + c.tool; }

// The pieces of one part of an identity between any of its markers, so a
// word hidden behind one ("a:b", "x,y") is still a word.
void add_words(std::string_view part, std::vector<std::string>& out) {
  for (std::size_t from = 0; from <= part.size();) {
    auto end = part.find_first_of("/:>[],#", from);
    if (end == npos) end = part.size();
    if (end > from) out.emplace_back(part.substr(from, end - from));
    from = end + 1;
  }
}

}  // namespace

std::string JobClass::family() const {
  std::string out = head(*this);
  if (!mode.empty()) out += ":" + mode;
  return out;
}

std::string JobClass::str() const { return family() + join_targets(targets); }

std::string JobIdentity::str() const {
  std::string out = head(klass);
  if (!klass.mode.empty() || !source.empty()) out += ":" + klass.mode;
  if (!source.empty()) out += ":" + source;
  if (!output.empty()) out += "->" + output;
  if (!tag.empty()) out += "#" + tag;
  return out + join_targets(klass.targets);
}

// A further source may follow a '+' ("a.c+/abs/b.c" in older records),
// and any text may come from an imported profile: a '/' after a marker
// starts a path too.
bool JobIdentity::names_absolute_path() const {
  for (std::string_view part : {std::string_view(klass.tool), std::string_view(source), std::string_view(output)})
    if (!part.empty() && (part.front() == '/' || part.find("+/") != npos || part.find(":/") != npos)) return true;
  return false;
}

std::vector<std::string> JobIdentity::words() const {
  std::vector<std::string> out;
  for (std::string_view part : {std::string_view(klass.engine), std::string_view(klass.tool),
                                std::string_view(klass.mode), std::string_view(source), std::string_view(output),
                                std::string_view(tag)})
    add_words(part, out);
  for (const std::string& t : klass.targets) add_words(t, out);
  return out;
}

JobClass parse_job_class(std::string_view stored) {
  Outer o = split_outer(stored);
  JobClass c;
  c.engine = o.engine;
  auto [tool, mode] = split_colon(o.body);
  c.tool = tool;
  c.mode = mode;
  c.targets = std::move(o.targets);
  return c;
}

std::string SourceKey::str() const { return source.empty() ? std::string() : klass.str() + ":" + source; }

SourceKey source_key(const JobIdentity& id) { return SourceKey{id.klass, id.source}; }

JobIdentity parse_job_identity(std::string_view stored) {
  Outer o = split_outer(stored);
  JobIdentity id;
  id.klass.engine = o.engine;
  id.klass.targets = std::move(o.targets);
  std::string_view body = o.body;
  // A tag is a word at the end: an argv digest, never a path or an output.
  if (auto hash = body.rfind('#'); hash != npos && hash + 1 < body.size()) {
    std::string_view tag = body.substr(hash + 1);
    if (tag.find("->") == npos && tag.find_first_of(":/") == npos) {
      id.tag = tag;
      body = body.substr(0, hash);
    }
  }
  if (auto arrow = body.find("->"); arrow != npos && arrow + 2 < body.size()) {
    id.output = body.substr(arrow + 2);
    body = body.substr(0, arrow);
  }
  auto [tool, rest] = split_colon(body);
  id.klass.tool = tool;
  auto [mode, source] = split_colon(rest);
  id.klass.mode = mode;
  id.source = source;
  return id;
}

JobKey make_job_key(const JobIdentity& id, std::string stem, int cpu_weight) {
  JobKey key;
  key.tool = id.klass.tool;
  key.identity = id.str();
  key.klass = id.klass.str();
  key.stem = std::move(stem);
  key.cpu_weight = cpu_weight;
  return key;
}

JobKey with_engine(JobKey key, std::string_view engine) {
  if (engine.empty()) return key;
  JobClass c = parse_job_class(key.klass);
  if (c.remote()) return key;
  c.engine = engine;
  key.klass = c.str();
  JobIdentity id = parse_job_identity(key.identity);
  id.klass.engine = engine;
  key.identity = id.str();
  return key;
}

std::string klass_family(std::string_view klass) { return parse_job_class(klass).family(); }

bool is_probe_klass(std::string_view klass) { return parse_job_class(klass).is_probe(); }

std::string classify_build(const std::vector<JobRecord>& jobs) {
  if (jobs.empty()) return "empty";
  bool all_probes = true, compiled = false, linked = false;
  for (const JobRecord& j : jobs) {
    const JobClass c = parse_job_class(j.key.klass);
    all_probes = all_probes && c.is_probe();
    compiled = compiled || c.is_compile();
    linked = linked || c.is_link();
  }
  if (all_probes) return "configure";
  if (!compiled && linked) return "relink";
  return "build";
}

bool is_full_build_kind(std::string_view kind) { return kind.empty() || kind == "build"; }

}  // namespace memgate
