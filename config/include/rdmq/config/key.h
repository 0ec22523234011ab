// One configuration key: its type, valid values and documentation (KeySpec), the value parsed
// from its string form (Value), and the parser and printer between the two.
//
//   KeySpec spec{.name = "partitions", .type = Type::kInt, .doc = "...", .min = 1, .max = 4096};
//   Result<Value> v = ParseValue(spec, "12");   // v->number == 12
//   ParseValue(spec, "0").status().context()    // "partitions=0: must be an integer in [1, 4096]"
//
// Types and the text each accepts:
//   kBool      true | false
//   kInt       a decimal integer in [min, max] (or one of `specials`: -1 = no limit)
//   kBytes     like kInt, optionally with a binary suffix: 64KiB, 1MiB, 2GiB, 1TiB (K, M, G, T too)
//   kDuration  a number of `unit` (a key named *.ms is in ms), optionally with a unit of its own
//              (500us, 250ms, 2s, 5min, 1h, 7d); fractions only where `fractions` is set
//   kString    any text (not empty where `non_empty` is set)
//   kEnum      one of `choices` (several spellings may stand for one value: acks all = -1)
//
// Errors: ConfigErrc::kBadValue whose context is "<key>=<value>: must be <what is accepted>".
// Threading: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"

#define RDMQ_CONFIG_ERRORS(X)                                   \
  X(kBadValue, kInvalidArgument, "invalid configuration value") \
  X(kUnknownKey, kInvalidArgument, "unknown configuration key") \
  X(kUsage, kInvalidArgument, "usage error")
RDMQ_DEFINE_ERRORS(rdmq::config, ConfigErrc, "config", RDMQ_CONFIG_ERRORS)

namespace rdmq::config {

enum class Type : uint8_t { kBool, kInt, kBytes, kDuration, kString, kEnum };
// "bool", "int", "bytes", "duration", "string", "enum".
std::string_view TypeName(Type type) noexcept;

// The units of a duration key.
enum class Unit : uint8_t { kNanos, kMicros, kMillis, kSeconds };
std::string_view UnitName(Unit unit) noexcept;  // "ns", "us", "ms", "s"

// A value accepted outside [min, max], with its meaning: {-1, "no limit"}.
struct Special {
  int64_t value = 0;
  std::string meaning = {};
};

// One spelling of an enum value. Several spellings may share a value; the first is canonical.
struct Choice {
  std::string name = {};
  int64_t value = 0;
};

struct KeySpec {
  // (Every member has a default so that tables may use designated initializers.)
  std::string name = {};       // "retention.ms"
  Type type = Type::kString;   //
  std::string doc = {};        // what the key does, one or more sentences
  std::string component = {};  // who reads it: broker, topic, producer, consumer, client
  int64_t min = 0;             // kInt, kBytes: the range; kDuration: the range in `unit`
  int64_t max = 0;
  std::vector<Special> specials = {};  // kInt, kBytes, kDuration: values allowed outside the range
  Unit unit = Unit::kMillis;           // kDuration: the unit of a plain number, min and max
  // kDuration: fractions of `unit` accepted ("linger.ms=0.05"), to a thousandth of it.
  bool fractions = false;
  std::vector<Choice> choices = {};  // kEnum
  bool non_empty = false;            // kString: "" refused
  std::string default_text = {};     // shown instead of the default where it is derived
};

// A parsed value.
struct Value {
  // kBool: 0 or 1; kInt, kBytes: the amount; kDuration: the amount in Resolution(spec);
  // kEnum: the choice's value.
  int64_t number = 0;
  std::string text = {};  // kString: the text; kEnum: the canonical spelling
};

// Parses `text` as the key's type and checks it. Errors: ConfigErrc::kBadValue naming key,
// value and what is accepted.
Result<Value> ParseValue(const KeySpec& spec, std::string_view text);
// The value as text that ParseValue reads back to the same value ("67108864", "0.05", "all").
std::string FormatValue(const KeySpec& spec, const Value& value);
// An enum value's first spelling (the number as text where no choice has it).
std::string Canonical(const KeySpec& spec, int64_t value);
// What the key accepts, as a phrase that follows "must be": "an integer in [1, 4096]",
// "shm, tcp or verbs", "a byte count in [64 KiB, 64 GiB]". With `syntax`, the suffixes a byte
// count or a duration may take follow ("(suffixes KiB, MiB, GiB, TiB)"), as in errors.
std::string Accepted(const KeySpec& spec, bool syntax = false);
// A reader's form of a value where it helps ("64 MiB", "7 d"), or "" where the number says it all.
std::string HumanValue(const KeySpec& spec, const Value& value);
// Nanoseconds per unit.
int64_t UnitNanos(Unit unit) noexcept;
// The unit a duration's Value::number counts: `unit`, or a thousandth of it with `fractions`.
Unit Resolution(const KeySpec& spec) noexcept;

}  // namespace rdmq::config
