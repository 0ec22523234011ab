// OffsetBook: where the broker keeps consumer groups' committed offsets. A broker on its own keeps
// them on its disk (metadata::OffsetStore); a broker in a cluster keeps them in ZooKeeper
// (cluster::GroupOffsetStore), so that whichever broker coordinates a group next finds them.
//
// Threading: thread-safe (both stores are).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rdmq/metadata/offsets.h"

namespace rdmq::broker::internal {

class ClusterMember;

class OffsetBook {
 public:
  virtual ~OffsetBook() = default;
  // Stores the offsets (each partition's replaced) all or none; every store's validation errors.
  virtual Status Commit(const std::string& group, const metadata::GroupOffsets& offsets) = 0;
  virtual Result<metadata::GroupOffsets> FetchGroup(const std::string& group) = 0;  // empty if none
  virtual Result<std::vector<std::string>> Groups() = 0;                            // with offsets, sorted
  // metadata::MetadataErrc::kNoSuchGroup when the group has no offsets.
  virtual Status DeleteGroup(const std::string& group) = 0;
  virtual Status DeleteTopic(const std::string& topic) = 0;
};

std::unique_ptr<OffsetBook> LocalOffsetBook(metadata::OffsetStore& store);
// Through the member's ZooKeeper session (kUnavailable while it has none).
std::unique_ptr<OffsetBook> ClusterOffsetBook(const ClusterMember& member);

}  // namespace rdmq::broker::internal
