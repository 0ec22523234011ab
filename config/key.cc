#include "rdmq/config/key.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace rdmq::config {
namespace {

Status Bad(const KeySpec& spec, std::string_view text) {
  return Status(ConfigErrc::kBadValue,
                spec.name + "=" + std::string(text) + ": must be " + Accepted(spec, /*syntax=*/true));
}

// Strict decimal: optional '-', digits, nothing else.
bool ParseI64(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool IsSpecial(const KeySpec& spec, int64_t v) {
  return std::any_of(spec.specials.begin(), spec.specials.end(),
                     [v](const Special& s) { return s.value == v; });
}

bool InRange(const KeySpec& spec, int64_t v) {
  return (v >= spec.min && v <= spec.max) || IsSpecial(spec, v);
}

struct Suffix {
  std::string_view name;
  int64_t factor;
};
constexpr Suffix kByteSuffixes[] = {{"B", 1},           {"KiB", 1LL << 10}, {"K", 1LL << 10},
                                    {"MiB", 1LL << 20}, {"M", 1LL << 20},   {"GiB", 1LL << 30},
                                    {"G", 1LL << 30},   {"TiB", 1LL << 40}, {"T", 1LL << 40}};
constexpr Suffix kDurationSuffixes[] = {{"ns", 1},
                                        {"us", 1'000},
                                        {"ms", 1'000'000},
                                        {"s", 1'000'000'000},
                                        {"min", 60'000'000'000},
                                        {"h", 3'600'000'000'000},
                                        {"d", 86'400'000'000'000}};

// Splits "12KiB" / "-1.5s" into the number and the suffix.
std::pair<std::string_view, std::string_view> SplitSuffix(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  return {text.substr(0, i), text.substr(i)};
}

Result<Value> ParseBytes(const KeySpec& spec, std::string_view text) {
  int64_t v = 0;
  if (ParseI64(text, &v)) {
    if (!InRange(spec, v)) return Bad(spec, text);
    return Value{.number = v};
  }
  const auto [number, suffix] = SplitSuffix(text);
  int64_t n = 0;
  if (!ParseI64(number, &n)) return Bad(spec, text);
  for (const Suffix& s : kByteSuffixes) {
    if (!EqualsNoCase(s.name, suffix)) continue;
    if (__builtin_mul_overflow(n, s.factor, &v) || v < spec.min || v > spec.max) return Bad(spec, text);
    return Value{.number = v};
  }
  return Bad(spec, text);
}

Result<Value> ParseDuration(const KeySpec& spec, std::string_view text) {
  const Unit res = Resolution(spec);
  const int64_t per_unit = UnitNanos(spec.unit) / UnitNanos(res);
  int64_t v = 0;
  if (ParseI64(text, &v)) {  // a plain integer in the key's unit: exact for every int64
    if (IsSpecial(spec, v)) return Value{.number = v * per_unit};
    if (v < spec.min || v > spec.max) return Bad(spec, text);
    return Value{.number = v * per_unit};
  }
  const auto split = SplitSuffix(text);
  const std::string_view number = split.first;
  const std::string_view suffix = split.second;
  if (number.empty() || number == "-" || number.find('.') != number.rfind('.') || number.back() == '.' ||
      number.front() == '.' || (number.size() > 1 && number[0] == '-' && number[1] == '.')) {
    return Bad(spec, text);
  }
  int64_t unit_nanos = UnitNanos(spec.unit);
  if (!suffix.empty()) {
    const auto* s = std::find_if(std::begin(kDurationSuffixes), std::end(kDurationSuffixes),
                                 [&](const Suffix& x) { return x.name == suffix; });
    if (s == std::end(kDurationSuffixes)) return Bad(spec, text);
    unit_nanos = s->factor;
  } else if (!spec.fractions) {
    return Bad(spec, text);  // a fraction of the key's unit
  }
  // long double holds every int64 exactly, so the range checks below are exact.
  long double amount = 0;
  const auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), amount);
  if (ec != std::errc() || p != number.data() + number.size()) return Bad(spec, text);
  long double in_res =
      amount * static_cast<long double>(unit_nanos) / static_cast<long double>(UnitNanos(res));
  if (!spec.fractions && in_res != std::trunc(in_res)) return Bad(spec, text);
  in_res = std::trunc(in_res);
  const long double lo = static_cast<long double>(spec.min) * static_cast<long double>(per_unit);
  const long double hi = static_cast<long double>(spec.max) * static_cast<long double>(per_unit);
  if (in_res < lo || in_res > hi) return Bad(spec, text);
  return Value{.number = static_cast<int64_t>(in_res)};
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string SpecialsText(const KeySpec& spec) {
  std::string out;
  for (const Special& s : spec.specials) out += " or " + std::to_string(s.value) + " (" + s.meaning + ")";
  return out;
}

std::string Bound(const KeySpec& spec, int64_t v) {
  if (spec.type == Type::kBytes) {
    const std::string human = HumanValue(spec, Value{.number = v});
    return human.empty() ? std::to_string(v) : human;
  }
  return std::to_string(v);
}

std::string RangeText(const KeySpec& spec) {
  if (spec.max == std::numeric_limits<int64_t>::max()) return ">= " + Bound(spec, spec.min);
  return "in [" + Bound(spec, spec.min) + ", " + Bound(spec, spec.max) + "]";
}

}  // namespace

std::string_view TypeName(Type type) noexcept {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kBytes:
      return "bytes";
    case Type::kDuration:
      return "duration";
    case Type::kString:
      return "string";
    case Type::kEnum:
      return "enum";
  }
  return "?";
}

std::string_view UnitName(Unit unit) noexcept {
  switch (unit) {
    case Unit::kNanos:
      return "ns";
    case Unit::kMicros:
      return "us";
    case Unit::kMillis:
      return "ms";
    case Unit::kSeconds:
      return "s";
  }
  return "?";
}

int64_t UnitNanos(Unit unit) noexcept {
  switch (unit) {
    case Unit::kNanos:
      return 1;
    case Unit::kMicros:
      return 1'000;
    case Unit::kMillis:
      return 1'000'000;
    case Unit::kSeconds:
      return 1'000'000'000;
  }
  return 1;
}

Unit Resolution(const KeySpec& spec) noexcept {
  if (!spec.fractions) return spec.unit;
  switch (spec.unit) {
    case Unit::kSeconds:
      return Unit::kMillis;
    case Unit::kMillis:
      return Unit::kMicros;
    default:
      return Unit::kNanos;
  }
}

Result<Value> ParseValue(const KeySpec& spec, std::string_view text) {
  switch (spec.type) {
    case Type::kBool:
      if (text == "true") return Value{.number = 1};
      if (text == "false") return Value{.number = 0};
      return Bad(spec, text);
    case Type::kInt: {
      int64_t v = 0;
      if (!ParseI64(text, &v) || !InRange(spec, v)) return Bad(spec, text);
      return Value{.number = v};
    }
    case Type::kBytes:
      return ParseBytes(spec, text);
    case Type::kDuration:
      return ParseDuration(spec, text);
    case Type::kString:
      if (spec.non_empty && text.empty()) return Bad(spec, text);
      return Value{.text = std::string(text)};
    case Type::kEnum:
      for (const Choice& c : spec.choices) {
        if (c.name == text) return Value{.number = c.value, .text = Canonical(spec, c.value)};
      }
      return Bad(spec, text);
  }
  return Bad(spec, text);
}

std::string Canonical(const KeySpec& spec, int64_t value) {
  for (const Choice& c : spec.choices) {
    if (c.value == value) return c.name;
  }
  return std::to_string(value);
}

std::string FormatValue(const KeySpec& spec, const Value& value) {
  switch (spec.type) {
    case Type::kBool:
      return value.number != 0 ? "true" : "false";
    case Type::kDuration:
      if (spec.fractions) {
        const int64_t whole = value.number / 1000;
        int64_t frac = std::abs(value.number % 1000);
        std::string out = (value.number < 0 && whole == 0 ? "-" : "") + std::to_string(whole);
        if (frac == 0) return out;
        std::string digits = std::to_string(frac);
        digits.insert(0, 3 - digits.size(), '0');
        while (digits.back() == '0') digits.pop_back();
        return out + "." + digits;
      }
      return std::to_string(value.number);
    case Type::kString:
      return value.text;
    case Type::kEnum:
      return value.text.empty() ? Canonical(spec, value.number) : value.text;
    case Type::kInt:
    case Type::kBytes:
      break;
  }
  return std::to_string(value.number);
}

std::string Accepted(const KeySpec& spec, bool syntax) {
  switch (spec.type) {
    case Type::kBool:
      return "true or false";
    case Type::kInt:
      return "an integer " + RangeText(spec) + SpecialsText(spec);
    case Type::kBytes:
      return "a byte count " + RangeText(spec) + SpecialsText(spec) +
             (syntax ? " (suffixes KiB, MiB, GiB, TiB)" : "");
    case Type::kDuration:
      return "a number of " + std::string(UnitName(spec.unit)) + " " + RangeText(spec) + SpecialsText(spec) +
             (spec.fractions ? ", fractions allowed" : "") +
             (syntax ? " (or with a unit: 500us, 250ms, 2s, 5min, 1h, 7d)" : "");
    case Type::kString:
      return spec.non_empty ? "a non-empty string" : "any string";
    case Type::kEnum: {
      std::vector<std::string> names;
      for (const Choice& c : spec.choices) names.push_back(c.name);
      return Join(names);
    }
  }
  return "?";
}

std::string HumanValue(const KeySpec& spec, const Value& value) {
  const int64_t v = value.number;
  if (spec.type == Type::kBytes) {
    if (v < 1024 || IsSpecial(spec, v)) return "";
    static constexpr std::pair<int64_t, std::string_view> kUnits[] = {
        {1LL << 40, "TiB"}, {1LL << 30, "GiB"}, {1LL << 20, "MiB"}, {1LL << 10, "KiB"}};
    for (const auto& [factor, name] : kUnits) {
      if (v % factor == 0) return std::to_string(v / factor) + " " + std::string(name);
    }
    return "";
  }
  if (spec.type == Type::kDuration && v > 0 &&
      !IsSpecial(spec, v / (UnitNanos(spec.unit) / UnitNanos(Resolution(spec))))) {
    const int64_t res_nanos = UnitNanos(Resolution(spec));
    if (v > std::numeric_limits<int64_t>::max() / res_nanos) return "";
    const int64_t nanos = v * res_nanos;
    for (auto it = std::rbegin(kDurationSuffixes); it != std::rend(kDurationSuffixes); ++it) {
      if (it->factor <= UnitNanos(spec.unit)) break;  // only coarser than the key's own unit
      if (nanos % it->factor == 0) return std::to_string(nanos / it->factor) + " " + std::string(it->name);
    }
  }
  return "";
}

}  // namespace rdmq::config
