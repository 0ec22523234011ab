#include "rdmq/metadata/topic.h"

#include <limits>

namespace rdmq::metadata {
namespace {

using config::Field;
using config::Type;

constexpr int64_t kNoLimit = -1;

// The table's errors as the metadata module's codes (the context stays the table's).
Status AsMetadataError(const Status& s) {
  if (s.ok()) return s;
  if (s.is(config::ConfigErrc::kUnknownKey))
    return Status(MetadataErrc::kUnknownConfig, std::string(s.context()));
  return Status(MetadataErrc::kBadConfig, std::string(s.context()));
}

}  // namespace

std::string_view DurabilityName(Durability d) noexcept {
  return d == Durability::kDurable ? "durable" : "visibility";
}

const config::ConfigDef<TopicConfig>& TopicConfigDef() {
  static const auto* def = [] {
    auto* d = new config::ConfigDef<TopicConfig>("topic");
    const std::string topic = "topic";
    d->Define({.name = "partitions",
               .type = Type::kInt,
               .doc = "Number of partitions of the topic. Set at creation.",
               .component = topic,
               .min = 1,
               .max = 4096},
              Field(&TopicConfig::partitions));
    d->Define({.name = "segment.bytes",
               .type = Type::kBytes,
               .doc = "Size of each segment file of a partition log, its 4 KiB header included; a full "
                      "segment rolls over to a new one.",
               .component = topic,
               .min = 64LL << 10,
               .max = 64LL << 30},
              Field(&TopicConfig::segment_bytes));
    d->Define({.name = "retention.bytes",
               .type = Type::kBytes,
               .doc = "Per partition: the oldest segments are deleted while the log is larger than this.",
               .component = topic,
               .min = 1,
               .max = std::numeric_limits<int64_t>::max(),
               .specials = {{kNoLimit, "no limit"}}},
              Field(&TopicConfig::retention_bytes));
    d->Define({.name = "retention.ms",
               .type = Type::kDuration,
               .doc = "Segments whose newest record is older than this are deleted.",
               .component = topic,
               .min = 1,
               .max = std::numeric_limits<int64_t>::max(),
               .specials = {{kNoLimit, "no limit"}},
               .unit = config::Unit::kMillis},
              Field(&TopicConfig::retention_ms));
    d->Define({.name = "index.interval.bytes",
               .type = Type::kBytes,
               .doc = "Log bytes between two entries of a segment's offset index.",
               .component = topic,
               .min = 64,
               .max = 64LL << 20},
              Field(&TopicConfig::index_interval_bytes));
    d->Define({.name = "max.message.bytes",
               .type = Type::kBytes,
               .doc = "Largest record batch a producer may append; must fit in a segment with its header.",
               .component = topic,
               .min = 128,
               .max = 64LL << 20},
              Field(&TopicConfig::max_message_bytes));
    d->Define({.name = "durability",
               .type = Type::kEnum,
               .doc = "durable: a commit is persisted (pmem flush or msync) before it is acknowledged; "
                      "visibility: published in memory, so it survives a process crash but not power loss.",
               .component = topic,
               .choices = {{"durable", static_cast<int64_t>(Durability::kDurable)},
                           {"visibility", static_cast<int64_t>(Durability::kVisibility)}}},
              Field(&TopicConfig::durability));
    d->Define({.name = "replication.factor",
               .type = Type::kInt,
               .doc = "Replicas of each partition, on distinct brokers of a cluster (docs/replication.md). "
                      "Set at creation; a broker on its own serves 1.",
               .component = topic,
               .min = 1,
               .max = 16},
              Field(&TopicConfig::replication_factor));
    d->Define(
        {.name = "min.insync.replicas",
         .type = Type::kInt,
         .doc = "In a cluster: the in-sync replicas an acks=all write needs; with fewer, such writes are "
                "refused (NOT_ENOUGH_REPLICAS).",
         .component = topic,
         .min = 1,
         .max = 16},
        Field(&TopicConfig::min_insync_replicas));
    return d;
  }();
  return *def;
}

Status SetConfig(TopicConfig* c, std::string_view key, std::string_view value) {
  return AsMetadataError(TopicConfigDef().Set(c, key, value));
}

std::vector<std::pair<std::string, std::string>> ConfigEntries(const TopicConfig& c) {
  return TopicConfigDef().Entries(c);
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

}  // namespace rdmq::metadata
