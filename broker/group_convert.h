// Conversions the GroupCoordinator's files share: group and offset-store errors onto wire codes,
// partitions and committed offsets into their wire structs.
#pragma once

#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/group/assignor.h"
#include "rdmq/metadata/offsets.h"
#include "rdmq/protocol/group_messages.h"

namespace rdmq::broker::internal {

// GroupErrc, ClassicErrc (as seen by rdmq's own clients) and metadata errors onto WireError,
// keeping the message.
Status ToWire(const Status& s);
std::vector<protocol::TopicPartitionRef> ToRefs(const std::vector<group::TopicPartition>& tps);
protocol::OffsetEntry ToEntry(const metadata::OffsetKey& key, const metadata::CommittedOffset& c);

}  // namespace rdmq::broker::internal
