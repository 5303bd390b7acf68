#include "cli/help.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <numeric>

namespace memgate {

namespace {

constexpr size_t kWidth = 79;

// `left` padded to `column`, then `text` word-wrapped so no line passes
// kWidth, continuation lines indented to `column` (a `left` as wide as the
// column puts the text on the next line).
std::string hanging(const std::string& left, const std::string& text, size_t column) {
  std::string out = left;
  if (text.empty()) return out + "\n";
  if (!out.empty() && out.size() + 1 > column) out += "\n" + std::string(column, ' ');
  else out += std::string(column - out.size(), ' ');
  size_t line = column;
  size_t at = 0;
  bool first = true;
  while (at < text.size()) {
    if (text[at] == '\n') {
      out += "\n" + std::string(column, ' ');
      line = column, first = true, ++at;
      continue;
    }
    size_t end = text.find_first_of(" \n", at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    if (!first && line + 1 + word.size() > kWidth) {
      out += "\n" + std::string(column, ' ');
      line = column, first = true;
    }
    if (!first) out += ' ', ++line;
    out += word;
    line += word.size();
    first = false;
    at = end < text.size() && text[end] == ' ' ? end + 1 : end;
  }
  return out + "\n";
}

// "Usage: memgate <cmd> [OPTIONS] <tail>" for a subcommand; the synopsis
// for the top level.
class Formatter : public CLI::Formatter {
 public:
  explicit Formatter(std::string tail) : tail_(std::move(tail)) {}
  const std::string& tail() const { return tail_; }
  std::string make_usage(const CLI::App* app, std::string) const override {
    if (app->get_parent() == nullptr) {
      std::string out = "Usage:\n";
      std::string lines = synopsis(*app);
      size_t at = 0;
      while (at < lines.size()) {
        size_t end = lines.find('\n', at);
        out += "  " + lines.substr(at, end - at) + "\n";
        at = end + 1;
      }
      return out;
    }
    std::string path = app->get_name();  // "history export" for a nested command
    for (const CLI::App* p = app->get_parent(); p && p->get_parent(); p = p->get_parent()) path = p->get_name() + " " + path;
    std::string out = "Usage: memgate " + path;
    if (app->get_options([](const CLI::Option* o) { return o->nonpositional(); }).size() > 1) out += " [OPTIONS]";
    if (!tail_.empty()) out += " " + tail_;
    return out + "\n";
  }
  // The metavar alone: CLI11 appends its validators (":SIZE", ":INT in
  // [1 - 65536]"), defaults and "Excludes: ..."; each option's own help
  // says its range, default and what it cannot be combined with, in words.
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_expected_max() == 0) return "";
    const std::string& type = opt->get_type_name();
    const std::string name = type.substr(0, type.find(':'));
    return name.empty() ? "" : " " + name;
  }
  // Help lines wrapped at kWidth, not left as long as the text.
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return hanging("  " + make_option_name(opt, is_positional) + make_option_opts(opt), make_option_desc(opt),
                   get_column_width());
  }
  std::string make_description(const CLI::App* app) const override {
    return app->get_description().empty() ? "" : hanging("", app->get_description(), 0);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    return hanging("  " + sub->get_display_name(), sub->get_description(), get_column_width());
  }

 private:
  std::string tail_;
};

std::string examples_footer(const std::vector<std::string>& examples) {
  std::string out = "Examples:";
  for (const std::string& e : examples) out += "\n  " + e;
  return out;
}

std::vector<std::string> visible_subcommands(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }))
    names.push_back(sub->get_name());
  return names;
}

// Every spelling of the options of `cmd` ("--memory", "-j", "--help").
std::vector<std::string> option_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string unknown_message(const std::string& what, const std::string& word, const std::vector<std::string>& known) {
  std::string msg = fmt::format("unknown {} '{}'", what, word);
  if (auto near = nearest(word, known)) msg += fmt::format("; did you mean '{}'?", *near);
  return msg;
}

// The options of `cmd` in `args` (from the first one after the subcommand):
// the first unknown one. `run` stops at its build command.
std::optional<std::string> unknown_option(const CLI::App& cmd, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      if (cmd.get_prefix_command()) return std::nullopt;
      continue;
    }
    bool is_long = a[1] == '-';
    std::string name = is_long ? a.substr(0, a.find('=')) : a.substr(0, 2);
    const CLI::Option* o = cmd.get_option_no_throw(name);
    if (o == nullptr) {
      std::string msg = fmt::format("unknown option '{}'", name);
      if (cmd.get_parent()) msg += fmt::format(" for 'memgate {}'", cmd.get_name());
      if (auto near = nearest(name, option_names(cmd))) msg += fmt::format("; did you mean '{}'?", *near);
      return msg;
    }
    // An option's value is the next word unless given as --name=value or -jN.
    bool takes_value = o->get_expected_max() != 0;
    bool joined = is_long ? a.find('=') != std::string::npos : a.size() > 2;
    if (takes_value && !joined) ++i;
  }
  return std::nullopt;
}

}  // namespace

void describe_command(CLI::App* cmd, const std::string& tail, const std::vector<std::string>& examples) {
  cmd->formatter(std::make_shared<Formatter>(tail));
  cmd->footer(examples_footer(examples));
}

void describe_app(CLI::App& app, const std::vector<std::string>& examples) {
  app.formatter(std::make_shared<Formatter>(""));
  app.footer(examples_footer(examples));
}

namespace {

// One command's synopsis lines: `head` and its options, wrapped at kWidth;
// then, one line each, the commands nested in it ("memgate history export").
void synopsis_of(const CLI::App& cmd, const std::string& head, std::string& out) {
  std::vector<std::string> items;
  auto f = std::dynamic_pointer_cast<const Formatter>(cmd.get_formatter());
  const std::string tail = f ? f->tail() : "";
  for (const CLI::Option* o : cmd.get_options()) {
    if (o == cmd.get_help_ptr() || o->get_group().empty()) continue;
    if (!o->nonpositional()) {  // a positional: its name, required (unless the tail names it)
      if (tail.empty()) items.push_back(o->get_name());
      continue;
    }
    std::string name = o->get_lnames().empty() ? "-" + o->get_snames().front() : "--" + o->get_lnames().front();
    // A validator adds ":POSITIVE" and the like to the metavar.
    if (o->get_expected_max() != 0) name += " " + o->get_type_name().substr(0, o->get_type_name().find(':'));
    items.push_back("[" + name + "]");
  }
  if (!tail.empty()) items.push_back(tail);
  std::string line = head;
  for (const std::string& item : items) {
    if (line.size() + 1 + item.size() > kWidth) {
      out += line + "\n";
      line = std::string(head.size(), ' ');
    }
    line += " " + item;
  }
  out += line + "\n";
  for (const CLI::App* sub : cmd.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }))
    synopsis_of(*sub, head + " " + sub->get_name(), out);
}

}  // namespace

std::string synopsis(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }))
    synopsis_of(*sub, "memgate " + sub->get_name(), out);
  out += "memgate --version | --help\n";
  return out;
}

std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance: "histroy" is one edit from "history".
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  std::optional<std::string> best;
  size_t best_d = 0;
  for (const std::string& c : candidates) {
    size_t d = distance(word, c);
    if (!best || d < best_d) best = c, best_d = d;
  }
  // A prefix ("hist", "--rec") is near too; otherwise at most 2 edits, and
  // fewer than half the word.
  for (const std::string& c : candidates)
    if (word.size() >= 3 && c.rfind(word, 0) == 0) return c;
  if (!best || best_d > 2 || best_d * 2 > word.size()) return std::nullopt;
  return best;
}

std::optional<std::string> unknown_word(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.empty()) return std::nullopt;
  const std::string& first = args[0];
  if (first.size() > 1 && first[0] == '-') {
    if (first == "--help" || first == "-h" || first == "--version") return std::nullopt;
    return unknown_option(app, {first});
  }
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }))
    if (s->get_name() == first) sub = s;
  if (sub == nullptr) return unknown_message("command", first, visible_subcommands(app));
  return unknown_option(*sub, std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace memgate
