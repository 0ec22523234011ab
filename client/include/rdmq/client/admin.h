// AdminClient: topic administration and partition inspection against a broker (the control
// plane only). What `rdmq topic create|list|describe|delete|alter` uses.
//
// Thread safety: every method is thread-safe. Errors: protocol::WireError codes carried in the
// Status (UNKNOWN_TOPIC, TOPIC_EXISTS, INVALID_CONFIG, ...) with the broker's message, or
// kUnavailable when the broker cannot be reached.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rdmq/client/options.h"
#include "rdmq/common/status.h"

namespace rdmq::client {

struct PartitionDescription {
  int32_t partition = 0;
  int64_t log_start_offset = 0;
  int64_t high_watermark = 0;  // next offset to be written
  uint32_t segments = 0;
  uint64_t bytes = 0;
  int64_t active_segment_base = 0;
  bool exclusive_lease = false;  // an exclusive producer holds the partition now
};

struct TopicDescription {
  std::string name;
  uint64_t id = 0;
  int64_t created_ms = 0;
  std::vector<std::pair<std::string, std::string>> configs;  // every key with its value
  std::vector<PartitionDescription> partitions;              // filled by DescribeTopic only
  int32_t partition_count() const;
};

class AdminClient {
 public:
  static Result<std::unique_ptr<AdminClient>> Connect(const ClientOptions& options);
  virtual ~AdminClient() = default;

  // configs: Kafka topic keys ("partitions", "retention.ms", ...); missing keys take the
  // broker's defaults.
  virtual Result<TopicDescription> CreateTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) = 0;
  virtual Status DeleteTopic(const std::string& name) = 0;
  virtual Result<TopicDescription> DescribeTopic(const std::string& name) = 0;
  virtual Result<std::vector<TopicDescription>> ListTopics() = 0;
  virtual Result<TopicDescription> AlterTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) = 0;
};

}  // namespace rdmq::client
