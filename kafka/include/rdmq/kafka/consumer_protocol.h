// The blobs of the "consumer" group protocol type, carried opaquely by JoinGroup (member
// metadata: a subscription) and SyncGroup / DescribeGroups (an assignment)
// (docs/kafka-protocol.md, "Consumer protocol"). The broker decodes them only to show members'
// subscriptions and assignments; it never needs them to coordinate.
//
// Each blob starts with an int16 version, then classic (non-flexible) fields. Kafka's rule for
// these blobs: a reader parses a newer version than it knows with the fields it knows and ignores
// whatever follows them. So bytes after the known fields are not an error here, for any version.
// Decoded strings and user data are views into the blob.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

// The newest version of each blob rdmq knows (and writes by default).
inline constexpr int16_t kConsumerSubscriptionVersion = 3;
inline constexpr int16_t kConsumerAssignmentVersion = 3;

struct ConsumerTopicPartitions {
  std::string_view topic;
  std::vector<int32_t> partitions;
};

struct ConsumerProtocolSubscription {
  int16_t version = 0;
  std::vector<std::string_view> topics;
  std::optional<ByteSpan> user_data;
  std::vector<ConsumerTopicPartitions> owned_partitions;  // v1+
  int32_t generation_id = -1;                             // v2+
  std::optional<std::string_view> rack_id;                // v3+
};

struct ConsumerProtocolAssignment {
  int16_t version = 0;
  std::vector<ConsumerTopicPartitions> assigned_partitions;
  std::optional<ByteSpan> user_data;
};

// kMalformed for a negative version; the Reader's errors for truncation and bad lengths.
Status DecodeConsumerSubscription(ByteSpan blob, ConsumerProtocolSubscription* out);
Status DecodeConsumerAssignment(ByteSpan blob, ConsumerProtocolAssignment* out);
// Writes the version prefix and the fields of min(version, newest known) versions.
void EncodeConsumerSubscription(Writer& w, const ConsumerProtocolSubscription& m);
void EncodeConsumerAssignment(Writer& w, const ConsumerProtocolAssignment& m);

}  // namespace rdmq::kafka
