#include "rdmq/config/args.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include "rdmq/config/render.h"

namespace rdmq::config {

Status UsageError(std::string what) { return Status(ConfigErrc::kUsage, std::move(what)); }

bool ParsedArgs::Has(std::string_view name) const {
  return std::any_of(values_.begin(), values_.end(), [&](const auto& kv) { return kv.first == name; });
}

std::optional<std::string> ParsedArgs::Get(std::string_view name) const {
  for (auto it = values_.rbegin(); it != values_.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return std::nullopt;
}

std::string ParsedArgs::GetOr(std::string_view name, std::string fallback) const {
  auto v = Get(name);
  return v ? *v : std::move(fallback);
}

std::vector<std::string> ParsedArgs::GetAll(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_) {
    if (k == name) out.push_back(v);
  }
  return out;
}

Result<int64_t> ParsedArgs::GetInt(std::string_view name, int64_t fallback, int64_t min, int64_t max) const {
  auto v = Get(name);
  if (!v) return fallback;
  return ParseInt(*v, "--" + std::string(name), min, max);
}

Result<double> ParsedArgs::GetDouble(std::string_view name, double fallback, double min, double max) const {
  auto v = Get(name);
  if (!v) return fallback;
  double d = 0;
  const char* end = v->data() + v->size();
  auto [ptr, ec] = std::from_chars(v->data(), end, d);
  if (v->empty() || ec != std::errc() || ptr != end) {
    return UsageError("--" + std::string(name) + ": '" + *v + "' is not a number");
  }
  if (d < min || d > max) {
    std::ostringstream os;
    os << "--" << name << ": " << *v << " is out of range [" << min << ", " << max << "]";
    return UsageError(os.str());
  }
  return d;
}

namespace {

const OptionSpec* FindLong(const std::vector<OptionSpec>& options, std::string_view name) {
  for (const auto& o : options) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

const OptionSpec* FindShort(const std::vector<OptionSpec>& options, char c) {
  for (const auto& o : options) {
    if (o.short_name == c) return &o;
  }
  return nullptr;
}

std::string Spelling(const OptionSpec& o) {
  std::string s = o.short_name ? std::string("-") + o.short_name + ", " : "    ";
  s += "--" + o.name;
  if (!o.value_name.empty()) s += " " + o.value_name;
  return s;
}

}  // namespace

std::string CommandSpec::SeeHelp() const { return "see '" + path + " --help'"; }

Result<ParsedArgs> CommandSpec::Parse(std::span<const std::string> args) const {
  ParsedArgs out;
  auto add = [&](const OptionSpec& o, std::string value) -> Status {
    if (!o.repeated && out.Has(o.name)) {
      return UsageError("option --" + o.name + " given twice; " + SeeHelp());
    }
    out.values_.emplace_back(o.name, std::move(value));
    return Status::Ok();
  };
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      out.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      out.help_ = true;
      continue;
    }
    const OptionSpec* spec = nullptr;
    std::optional<std::string> inline_value;
    std::string shown;
    if (a[1] == '-') {
      std::string_view body(a);
      body.remove_prefix(2);
      const size_t eq = body.find('=');
      const std::string_view name = body.substr(0, eq);
      if (eq != std::string_view::npos) inline_value = std::string(body.substr(eq + 1));
      shown = "--" + std::string(name);
      spec = FindLong(options, name);
    } else {
      shown = a.substr(0, 2);
      spec = FindShort(options, a[1]);
      if (a.size() > 2) inline_value = a.substr(2);
    }
    if (spec == nullptr) {
      if (out.help_) continue;  // `--help` wins over anything else on the line
      return UsageError("unknown option '" + shown + "'; " + SeeHelp());
    }
    if (spec->value_name.empty()) {
      if (inline_value) {
        if (a[1] != '-') {
          std::string what = "option " + shown + " takes no value (in '";
          what += a;
          return UsageError(what + "'); " + SeeHelp());
        }
        return UsageError("option " + shown + " takes no value; " + SeeHelp());
      }
      RDMQ_RETURN_IF_ERROR(add(*spec, ""));
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        return UsageError("option " + shown + " needs a value (" + spec->value_name + "); " + SeeHelp());
      }
      inline_value = args[++i];
    }
    RDMQ_RETURN_IF_ERROR(add(*spec, std::move(*inline_value)));
  }
  if (!out.help_) {
    if (out.positional_.size() < min_positional) {
      return UsageError("missing argument" +
                        std::string(min_positional - out.positional_.size() > 1 ? "s" : "") +
                        ": usage: " + path + " " + usage + "; " + SeeHelp());
    }
    if (out.positional_.size() > max_positional) {
      return UsageError("unexpected argument '" + out.positional_[max_positional] + "'; " + SeeHelp());
    }
  }
  return out;
}

std::string CommandSpec::HelpText() const {
  std::ostringstream os;
  os << "Usage: " << path << (usage.empty() ? "" : " ") << usage << "\n";
  if (!summary.empty()) os << "\n" << WrapText(summary, 0);
  if (!description.empty()) os << "\n" << description << (description.back() == '\n' ? "" : "\n");
  if (!subcommands.empty()) {
    size_t w = 0;
    for (const auto& [name, help] : subcommands) w = std::max(w, name.size());
    os << "\nCommands:\n";
    for (const auto& [name, help] : subcommands) {
      os << "  " << name << std::string(w - name.size() + 3, ' ') << help << "\n";
    }
  }
  os << "\nOptions:\n";
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& o : options) rows.emplace_back(Spelling(o), o.help);
  rows.emplace_back("-h, --help", "show this help and exit");
  size_t w = 0;
  for (const auto& r : rows) w = std::max(w, r.first.size());
  for (const auto& [spelling, help] : rows) {
    os << "  " << spelling;
    std::string_view h = help;
    bool first = true;
    while (true) {
      const size_t nl = h.find('\n');
      os << std::string(first ? w - spelling.size() + 3 : w + 5, ' ') << h.substr(0, nl) << "\n";
      first = false;
      if (nl == std::string_view::npos) break;
      h.remove_prefix(nl + 1);
    }
  }
  if (!settings.empty()) os << "\n" << settings_title << ":\n" << settings;
  if (!examples.empty()) {
    os << "\nExamples:\n";
    for (const auto& e : examples) os << "  " << e << "\n";
  }
  return os.str();
}

std::optional<ParsedArgs> ParseCommandLine(const CommandSpec& spec, std::span<const std::string> args,
                                           int* exit_code) {
  auto parsed = spec.Parse(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: %s\n", spec.path.c_str(), std::string(parsed.status().context()).c_str());
    *exit_code = 2;
    return std::nullopt;
  }
  if (parsed->help()) {
    std::fputs(spec.HelpText().c_str(), stdout);
    *exit_code = 0;
    return std::nullopt;
  }
  return std::move(*parsed);
}

std::optional<ParsedArgs> ParseCommandLine(const CommandSpec& spec, int argc, char** argv, int* exit_code) {
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  return ParseCommandLine(spec, args, exit_code);
}

Result<int64_t> ParseInt(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  int64_t v = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (!text.empty() && text[0] == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
    return UsageError(std::string(what) + ": '" + std::string(text) + "' is not an integer");
  }
  if (ec == std::errc::result_out_of_range || v < min || v > max) {
    return UsageError(std::string(what) + ": " + std::string(text) + " is out of range [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view text, std::string_view what) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return UsageError(std::string(what) + ": '" + std::string(text) + "' is not key=value");
  }
  if (eq == 0) return UsageError(std::string(what) + ": '" + std::string(text) + "' has an empty key");
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

}  // namespace rdmq::config
