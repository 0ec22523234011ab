#include "metadata/topic_json.h"

#include <nlohmann/json.hpp>

namespace rdmq::metadata {

using config::Type;

nlohmann::json ToJson(const TopicConfig& c) {
  // Numbers as JSON numbers, words (durability) as strings.
  nlohmann::json j = nlohmann::json::object();
  for (const auto& k : TopicConfigDef().keys()) {
    const config::Value v = k.access.get(c, k.spec);
    if (k.spec.type == Type::kInt || k.spec.type == Type::kBytes || k.spec.type == Type::kDuration) {
      j[k.spec.name] = v.number;
    } else {
      j[k.spec.name] = config::FormatValue(k.spec, v);
    }
  }
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
