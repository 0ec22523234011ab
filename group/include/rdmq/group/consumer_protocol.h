// Kafka's consumer protocol: the bytes Kafka consumers put in a classic group with protocol type
// "consumer" — the JoinGroup metadata (ConsumerProtocolSubscription) and the SyncGroup assignment
// (ConsumerProtocolAssignment). docs/groups.md, "Consumer protocol bytes", gives the layout.
//
// Both start with a big-endian int16 version. Versions 0 to 3 are known; a newer version is read
// as version 3 and whatever follows the known fields is ignored (Kafka's own rule: new versions
// only append fields). Decoding is bounds-checked: malformed bytes give
// GroupErrc::kMalformedConsumerProtocol naming the field, never a read outside the input, and no
// allocation larger than the input warrants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/group/assignor.h"

namespace rdmq::group {

inline constexpr int16_t kConsumerProtocolMaxVersion = 3;

struct ConsumerSubscription {
  int16_t version = 0;
  std::vector<std::string> topics;
  std::optional<std::string> user_data;  // nullopt = null
  std::vector<TopicPartition> owned;     // v1+
  int32_t generation_id = -1;            // v2+
  std::optional<std::string> rack_id;    // v3+; nullopt = null
};

struct ConsumerAssignment {
  int16_t version = 0;
  std::vector<TopicPartition> partitions;
  std::optional<std::string> user_data;  // nullopt = null
};

Result<ConsumerSubscription> ParseConsumerSubscription(std::string_view bytes);
Result<ConsumerAssignment> ParseConsumerAssignment(std::string_view bytes);

// Encodes at `version` (0..3): the fields that version lacks are left out. Partitions of a topic
// are written as one entry in the order given (sorted input gives Kafka's layout).
std::string EncodeConsumerSubscription(const ConsumerSubscription& s, int16_t version);
std::string EncodeConsumerAssignment(const ConsumerAssignment& a, int16_t version);

}  // namespace rdmq::group
