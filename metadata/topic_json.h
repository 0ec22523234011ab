// Internal: the JSON forms of a topic and its config, as the metadata log's records and its
// checkpoint hold them (docs/metadata-format.md). Numbers are JSON numbers, words (durability)
// strings, keys the topic config keys.
//
// Errors: kBadConfig (not an object, a field missing or mistyped, a bad value), kUnknownConfig,
// kBadTopicName; the context names the key or the entry.
#pragma once

#include <nlohmann/json.hpp>

#include "rdmq/common/status.h"
#include "rdmq/metadata/topic.h"

namespace rdmq::metadata {

nlohmann::json ToJson(const TopicConfig& config);
nlohmann::json ToJson(const TopicInfo& topic);
// Missing keys take the values of `defaults`; unknown keys and bad values are errors.
Result<TopicConfig> TopicConfigFromJson(const nlohmann::json& j, const TopicConfig& defaults);
Result<TopicInfo> TopicInfoFromJson(const nlohmann::json& j);

}  // namespace rdmq::metadata
