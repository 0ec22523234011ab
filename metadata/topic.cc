#include "rdmq/metadata/topic.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

namespace rdmq::metadata {
namespace {

template <class T>
Status ParseInt(std::string_view key, std::string_view value, T lo, T hi, T* out) {
  T v{};
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || p != end || value.empty()) {
    return Status(MetadataErrc::kBadConfig, std::string(key) + "=" + std::string(value) + ": not an integer");
  }
  if (v < lo || v > hi) {
    return Status(MetadataErrc::kBadConfig, std::string(key) + "=" + std::string(value) + ": must be in [" +
                                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = v;
  return Status::Ok();
}

// Retention values: -1 (no limit) or a positive amount.
Status ParseRetention(std::string_view key, std::string_view value, int64_t* out) {
  int64_t v = 0;
  RDMQ_RETURN_IF_ERROR(ParseInt<int64_t>(key, value, -1, std::numeric_limits<int64_t>::max(), &v));
  if (v == 0) {
    return Status(MetadataErrc::kBadConfig,
                  std::string(key) + "=0: use -1 for no limit, or a positive value");
  }
  *out = v;
  return Status::Ok();
}

}  // namespace

std::string_view DurabilityName(Durability d) noexcept {
  return d == Durability::kDurable ? "durable" : "visibility";
}

Status SetConfig(TopicConfig* c, std::string_view key, std::string_view value) {
  if (key == "partitions") return ParseInt<int32_t>(key, value, 1, 4096, &c->partitions);
  if (key == "segment.bytes")
    return ParseInt<uint64_t>(key, value, 64ull << 10, 64ull << 30, &c->segment_bytes);
  if (key == "retention.bytes") return ParseRetention(key, value, &c->retention_bytes);
  if (key == "retention.ms") return ParseRetention(key, value, &c->retention_ms);
  if (key == "index.interval.bytes") {
    return ParseInt<uint32_t>(key, value, 64, 64u << 20, &c->index_interval_bytes);
  }
  if (key == "max.message.bytes")
    return ParseInt<uint32_t>(key, value, 128, 64u << 20, &c->max_message_bytes);
  if (key == "durability") {
    if (value == "durable") {
      c->durability = Durability::kDurable;
    } else if (value == "visibility") {
      c->durability = Durability::kVisibility;
    } else {
      return Status(MetadataErrc::kBadConfig,
                    "durability=" + std::string(value) + ": must be 'durable' or 'visibility'");
    }
    return Status::Ok();
  }
  return Status(MetadataErrc::kUnknownConfig,
                std::string(key) +
                    " (known: partitions, segment.bytes, retention.bytes, retention.ms, "
                    "index.interval.bytes, max.message.bytes, durability)");
}

std::vector<std::pair<std::string, std::string>> ConfigEntries(const TopicConfig& c) {
  return {
      {"partitions", std::to_string(c.partitions)},
      {"segment.bytes", std::to_string(c.segment_bytes)},
      {"retention.bytes", std::to_string(c.retention_bytes)},
      {"retention.ms", std::to_string(c.retention_ms)},
      {"index.interval.bytes", std::to_string(c.index_interval_bytes)},
      {"max.message.bytes", std::to_string(c.max_message_bytes)},
      {"durability", std::string(DurabilityName(c.durability))},
  };
}

Status ValidateConfig(const TopicConfig& c) {
  // Round-trip every entry through the parser, which holds the ranges in one place.
  TopicConfig scratch;
  for (const auto& [k, v] : ConfigEntries(c)) RDMQ_RETURN_IF_ERROR(SetConfig(&scratch, k, v));
  if (c.max_message_bytes + 4096ull > c.segment_bytes) {
    return Status(MetadataErrc::kBadConfig, "max.message.bytes=" + std::to_string(c.max_message_bytes) +
                                                " does not fit in segment.bytes=" +
                                                std::to_string(c.segment_bytes) + " (with its 4 KiB header)");
  }
  return Status::Ok();
}

Status ValidateTopicName(std::string_view name) {
  if (name.empty() || name.size() > 249) {
    return Status(MetadataErrc::kBadTopicName, "'" + std::string(name) + "': must be 1 to 249 characters");
  }
  if (name == "." || name == "..") {
    return Status(MetadataErrc::kBadTopicName, "'" + std::string(name) + "' is reserved");
  }
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '.' || ch == '_' || ch == '-';
    if (!ok) {
      return Status(MetadataErrc::kBadTopicName,
                    "'" + std::string(name) + "': only letters, digits, '.', '_' and '-' are allowed");
    }
  }
  return Status::Ok();
}

nlohmann::json ToJson(const TopicConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  j["partitions"] = c.partitions;
  j["segment.bytes"] = c.segment_bytes;
  j["retention.bytes"] = c.retention_bytes;
  j["retention.ms"] = c.retention_ms;
  j["index.interval.bytes"] = c.index_interval_bytes;
  j["max.message.bytes"] = c.max_message_bytes;
  j["durability"] = DurabilityName(c.durability);
  return j;
}

nlohmann::json ToJson(const TopicInfo& t) {
  return {{"name", t.name}, {"id", t.id.value()}, {"created_ms", t.created_ms}, {"config", ToJson(t.config)}};
}

Result<TopicConfig> TopicConfigFromJson(const nlohmann::json& j, const TopicConfig& defaults) {
  if (!j.is_object()) return Status(MetadataErrc::kBadConfig, "topic config must be a JSON object");
  TopicConfig c = defaults;
  for (const auto& [key, value] : j.items()) {
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number_integer()) {
      text = value.dump();
    } else {
      return Status(MetadataErrc::kBadConfig, key + ": must be a string or an integer, got " + value.dump());
    }
    RDMQ_RETURN_IF_ERROR(SetConfig(&c, key, text));
  }
  RDMQ_RETURN_IF_ERROR(ValidateConfig(c));
  return c;
}

Result<TopicInfo> TopicInfoFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status(MetadataErrc::kBadConfig, "topic must be a JSON object");
  const auto name = j.find("name");
  const auto id = j.find("id");
  const auto created = j.find("created_ms");
  const auto config = j.find("config");
  if (name == j.end() || !name->is_string() || id == j.end() || !id->is_number_unsigned() ||
      created == j.end() || !created->is_number_integer() || config == j.end()) {
    return Status(MetadataErrc::kBadConfig, "topic entry needs name, id, created_ms and config: " + j.dump());
  }
  TopicInfo t;
  t.name = name->get<std::string>();
  RDMQ_RETURN_IF_ERROR(ValidateTopicName(t.name));
  t.id = TopicId(id->get<uint64_t>());
  t.created_ms = created->get<int64_t>();
  RDMQ_ASSIGN_OR_RETURN(t.config, TopicConfigFromJson(*config, TopicConfig{}));
  return t;
}

}  // namespace rdmq::metadata
