// Topics and their configuration.
//
// Config keys are Kafka's where the meaning is the same (segment.bytes, retention.ms, ...), so
// `rdmq topic create --config retention.ms=3600000` reads like kafka-topics. Values arrive as
// strings (CLI, JSON) and are checked by the topic key table (TopicConfigDef, a config::ConfigDef):
// out-of-range values (kBadConfig) and unknown keys (kUnknownConfig) are errors that name the key
// and what is accepted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/config/config_def.h"

#define RDMQ_METADATA_ERRORS(X)                                        \
  X(kBadTopicName, kInvalidArgument, "invalid topic name")             \
  X(kBadConfig, kInvalidArgument, "invalid configuration value")       \
  X(kUnknownConfig, kInvalidArgument, "unknown configuration key")     \
  X(kTopicExists, kAlreadyExists, "topic already exists")              \
  X(kNoSuchTopic, kNotFound, "no such topic")                          \
  X(kCorruptLog, kCorruption, "metadata log is corrupt")               \
  X(kCorruptCheckpoint, kCorruption, "metadata checkpoint is corrupt") \
  X(kBadGroupId, kInvalidArgument, "invalid group id")                 \
  X(kNoSuchGroup, kNotFound, "no such group")                          \
  X(kBadUser, kInvalidArgument, "invalid user")                        \
  X(kUserExists, kAlreadyExists, "user already exists")                \
  X(kNoSuchUser, kNotFound, "no such user")                            \
  X(kBadAcl, kInvalidArgument, "invalid ACL")
RDMQ_DEFINE_ERRORS(rdmq::metadata, MetadataErrc, "metadata", RDMQ_METADATA_ERRORS)

namespace rdmq::metadata {

// How a commit is made durable before it is acknowledged.
enum class Durability : uint8_t {
  kVisibility = 0,  // published in memory (MAP_SHARED): survives a process crash, not power loss
  kDurable = 1,     // persisted (pmem_persist on DAX, msync otherwise) before the ack
};
std::string_view DurabilityName(Durability d) noexcept;

struct TopicConfig {
  int32_t partitions = 1;                         // "partitions"        1..4096
  uint64_t segment_bytes = 64ull << 20;           // "segment.bytes"     64 KiB..64 GiB
  int64_t retention_bytes = -1;                   // "retention.bytes"   per partition, -1 = no limit
  int64_t retention_ms = 7LL * 24 * 3600 * 1000;  // "retention.ms"      -1 = no limit
  uint32_t index_interval_bytes = 4096;           // "index.interval.bytes"
  uint32_t max_message_bytes = 1u << 20;          // "max.message.bytes" largest record batch
  Durability durability = Durability::kDurable;   // "durability"        visibility|durable
  int32_t replication_factor = 1;                 // "replication.factor"  1..16, set at creation
  int32_t min_insync_replicas = 1;                // "min.insync.replicas" 1..16

  bool operator==(const TopicConfig&) const = default;
};

// The topic config keys (`rdmq config list topic`): type, range, default and documentation.
const config::ConfigDef<TopicConfig>& TopicConfigDef();
// Sets one key from its string form ("retention.ms", "3600000"). Errors name key and range.
Status SetConfig(TopicConfig* config, std::string_view key, std::string_view value);
// The config keys and their current values as strings, in a stable order.
std::vector<std::pair<std::string, std::string>> ConfigEntries(const TopicConfig& config);
// Validates every field (used after parsing and before persisting).
Status ValidateConfig(const TopicConfig& config);

// Kafka's rules: 1..249 characters from [a-zA-Z0-9._-], not "." or "..".
Status ValidateTopicName(std::string_view name);

struct TopicInfo {
  std::string name;
  TopicId id{0};
  TopicConfig config;
  int64_t created_ms = 0;

  bool operator==(const TopicInfo&) const = default;
};

}  // namespace rdmq::metadata
