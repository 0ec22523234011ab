#include "rdmq/config/options.h"

#include "rdmq/config/render.h"

namespace rdmq::config {
namespace {

constexpr size_t kHelpWidth = 66;

std::string ValueName(const KeySpec& spec) {
  switch (spec.type) {
    case Type::kBool:
      return "";
    case Type::kInt:
      return "N";
    case Type::kBytes:
      return "BYTES";
    case Type::kDuration:
      if (spec.unit == Unit::kSeconds) return "SECONDS";
      return spec.unit == Unit::kMillis ? "MS" : spec.unit == Unit::kMicros ? "US" : "NS";
    case Type::kEnum:
      return "NAME";
    case Type::kString:
      break;
  }
  return "TEXT";
}

}  // namespace

std::vector<OptionSpec> OptionsFromKeys(const std::vector<KeyDoc>& keys,
                                        const std::vector<std::pair<std::string, char>>& short_names) {
  std::vector<OptionSpec> out;
  for (const KeyDoc& k : keys) {
    OptionSpec o{.name = k.spec.name, .value_name = ValueName(k.spec), .help = k.spec.doc};
    if (!o.help.empty() && o.help.back() == '.') o.help.pop_back();  // a sentence in the table
    for (const auto& [name, letter] : short_names) {
      if (name == k.spec.name) o.short_name = letter;
    }
    if (k.spec.type == Type::kEnum) o.help += " (" + Accepted(k.spec) + ")";
    if (k.spec.type != Type::kBool && !k.default_value.empty()) {
      o.help += "; default " + k.default_value;
      if (!k.default_human.empty()) o.help += " (" + k.default_human + ")";
    }
    // Wrapped to fit beside the option column of --help (a line per '\n').
    o.help = WrapText(o.help, 0, kHelpWidth);
    if (!o.help.empty()) o.help.pop_back();
    out.push_back(std::move(o));
  }
  return out;
}

Status BadOption(const KeySpec& spec, std::string_view value) {
  return UsageError("--" + spec.name + " " + std::string(value) + ": must be " + Accepted(spec, true));
}

}  // namespace rdmq::config
