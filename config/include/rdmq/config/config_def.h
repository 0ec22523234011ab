// ConfigDef<T>: the table of every configuration key a component reads (in the style of Kafka's
// ConfigDef). Each key has a name, a type, a valid range or set of choices, documentation, the
// component that reads it, and the field of T it sets. Parsing, error messages, `--help` texts,
// `rdmq config list` and docs/configuration.md all come from the tables, so a key is described
// once, where its component defines it.
//
//   const ConfigDef<TopicConfig>& Def() {
//     static const auto* def = [] {
//       auto* d = new ConfigDef<TopicConfig>("topic");
//       d->Define({.name = "partitions", .type = Type::kInt, .doc = "...", .min = 1, .max = 4096},
//                 Field(&TopicConfig::partitions));
//       return d;
//     }();
//     return *def;
//   }
//   Status s = Def().Set(&config, "partitions", "12");
//
// Errors from Set: ConfigErrc::kUnknownKey naming the key and the closest known one;
// ConfigErrc::kBadValue naming key, value and what is accepted (key.h). A failed Set leaves the
// target unchanged. Both map to Errc::kInvalidArgument.
// Threading: a table is immutable once built; Set/Entries may run on any thread (on distinct
// targets).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "rdmq/config/key.h"

namespace rdmq::config {

// How a table reads and writes one key's field of T.
template <class T>
struct Accessor {
  std::function<void(T&, const KeySpec&, const Value&)> set;
  std::function<Value(const T&, const KeySpec&)> get;
};

namespace internal {

template <class D>
struct IsDuration : std::false_type {};
template <class R, class P>
struct IsDuration<std::chrono::duration<R, P>> : std::true_type {};

template <class M>
void Assign(M& out, const KeySpec& spec, const Value& v) {
  if constexpr (std::is_same_v<M, std::string>) {
    out = v.text;
  } else if constexpr (std::is_same_v<M, bool>) {
    out = v.number != 0;
  } else if constexpr (IsDuration<M>::value) {
    out = std::chrono::duration_cast<M>(std::chrono::nanoseconds(v.number * UnitNanos(Resolution(spec))));
  } else {
    static_assert(std::is_enum_v<M> || std::is_integral_v<M>, "unsupported field type");
    out = static_cast<M>(v.number);
  }
}

template <class M>
Value Read(const M& in, const KeySpec& spec) {
  if constexpr (std::is_same_v<M, std::string>) {
    return Value{.text = in};
  } else if constexpr (std::is_same_v<M, bool>) {
    return Value{.number = in ? 1 : 0};
  } else if constexpr (IsDuration<M>::value) {
    return Value{.number = std::chrono::duration_cast<std::chrono::nanoseconds>(in).count() /
                           UnitNanos(Resolution(spec))};
  } else {
    static_assert(std::is_enum_v<M> || std::is_integral_v<M>, "unsupported field type");
    return Value{.number = static_cast<int64_t>(in)};
  }
}

}  // namespace internal

// The accessor for a plain field: strings, bool, integers, enums (the choice's value) and
// std::chrono durations.
template <class T, class M>
Accessor<T> Field(M T::*member) {
  return {[member](T& t, const KeySpec& s, const Value& v) { internal::Assign(t.*member, s, v); },
          [member](const T& t, const KeySpec& s) { return internal::Read(t.*member, s); }};
}

// One key as listings show it.
struct KeyDoc {
  KeySpec spec;
  std::string default_value;  // FormatValue of the default, or spec.default_text
  std::string default_human;  // "64 MiB", "7 d", or ""
};

// The known name closest to `key` by edit distance, or "" when none is close.
std::string_view ClosestKey(std::string_view key, const std::vector<std::string_view>& known);
// ConfigErrc::kUnknownKey: "unknown config key 'x' for the <table> (did you mean 'y'?); ...".
Status UnknownKey(std::string_view table, std::string_view key, const std::vector<std::string_view>& known);
// Splits "key=value" (the value may be empty or hold '='). ConfigErrc::kBadValue otherwise.
Result<std::pair<std::string_view, std::string_view>> SplitKeyValue(std::string_view key_equals_value);

template <class T>
class ConfigDef {
 public:
  struct Key {
    KeySpec spec;
    Accessor<T> access;
  };

  // `name` names the table in errors and listings: "broker", "producer", "topic".
  explicit ConfigDef(std::string name) : name_(std::move(name)) {}

  // Adds a key (names are unique; a second Define of a name replaces the first).
  ConfigDef& Define(KeySpec spec, Accessor<T> access) {
    for (Key& k : keys_) {
      if (k.spec.name == spec.name) {
        k = Key{std::move(spec), std::move(access)};
        return *this;
      }
    }
    keys_.push_back(Key{std::move(spec), std::move(access)});
    return *this;
  }

  // Adds every key of `other`, which sets the member `member` of T.
  template <class U>
  ConfigDef& Include(const ConfigDef<U>& other, U T::*member) {
    for (const auto& k : other.keys()) Define(k.spec, Nest(k.access, member));
    return *this;
  }
  // Adds `other`'s key `other_name` as `name`, with `doc` in front of its documentation and
  // this table's component (the broker's "num.partitions" sets its topic defaults' "partitions").
  template <class U>
  ConfigDef& IncludeAs(const ConfigDef<U>& other, U T::*member, std::string name, std::string_view other_name,
                       std::string_view doc) {
    const auto* k = other.Find(other_name);
    if (k == nullptr) return *this;
    KeySpec spec = k->spec;
    spec.name = std::move(name);
    spec.doc = std::string(doc) + spec.doc;
    spec.component = name_;
    return Define(std::move(spec), Nest(k->access, member));
  }

  const std::string& name() const { return name_; }
  const std::vector<Key>& keys() const { return keys_; }
  const Key* Find(std::string_view key) const {
    for (const Key& k : keys_) {
      if (k.spec.name == key) return &k;
    }
    return nullptr;
  }
  std::vector<std::string_view> Names() const {
    std::vector<std::string_view> out;
    for (const Key& k : keys_) out.push_back(k.spec.name);
    return out;
  }

  // Parses `value` for `key` and sets it in *target (unchanged on error).
  Status Set(T* target, std::string_view key, std::string_view value) const {
    const Key* k = Find(key);
    if (k == nullptr) return UnknownKey(name_, key, Names());
    RDMQ_ASSIGN_OR_RETURN(Value v, ParseValue(k->spec, value));
    k->access.set(*target, k->spec, v);
    return Status::Ok();
  }
  Status Set(T* target, std::string_view key_equals_value) const {
    RDMQ_ASSIGN_OR_RETURN(auto kv, SplitKeyValue(key_equals_value));
    return Set(target, kv.first, kv.second);
  }

  // The key's value in `source` as text that Set reads back.
  std::string Get(const T& source, const Key& key) const {
    return FormatValue(key.spec, key.access.get(source, key.spec));
  }
  // Every key with its value, in table order.
  std::vector<std::pair<std::string, std::string>> Entries(const T& source) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Key& k : keys_) out.emplace_back(k.spec.name, Get(source, k));
    return out;
  }
  // Every key with its default (the value in a default-constructed T), for listings.
  std::vector<KeyDoc> Describe() const {
    const T defaults = T();
    std::vector<KeyDoc> out;
    for (const Key& k : keys_) {
      const Value v = k.access.get(defaults, k.spec);
      if (k.spec.default_text.empty()) {
        out.push_back(KeyDoc{k.spec, FormatValue(k.spec, v), HumanValue(k.spec, v)});
      } else {
        out.push_back(KeyDoc{k.spec, k.spec.default_text, ""});
      }
    }
    return out;
  }

 private:
  template <class U>
  static Accessor<T> Nest(const Accessor<U>& inner, U T::*member) {
    return {[inner, member](T& t, const KeySpec& s, const Value& v) { inner.set(t.*member, s, v); },
            [inner, member](const T& t, const KeySpec& s) { return inner.get(t.*member, s); }};
  }

  std::string name_;
  std::vector<Key> keys_;
};

}  // namespace rdmq::config
