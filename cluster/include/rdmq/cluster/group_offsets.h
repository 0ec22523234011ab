// Consumer groups' committed offsets in ZooKeeper, for a cluster (docs/replication.md, "ZooKeeper
// layout"): one znode per group and topic, <root>/groups/<group>/<topic>, holding that topic's
// committed partitions as JSON. Kept in the cluster rather than on the coordinating broker's disk,
// so a group's offsets stay whole when its coordinator changes (a broker joined or left).
//
// The group's name is escaped for the znode (EscapeName, model.h), so any valid group id
// (printable ASCII, '/' and '.' included) is one znode. A commit of several
// topics is one multi-op with each znode's version checked: all or none, retried when another
// commit changed a znode in between.
//
// Threading: functions over the session given (ZkSession is thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/cluster/model.h"
#include "rdmq/common/status.h"
#include "rdmq/coord/zk.h"

namespace rdmq::cluster {

struct GroupOffset {
  int64_t offset = 0;  // the next record the group will read
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_ms = 0;
  bool operator==(const GroupOffset&) const = default;
};
using GroupOffsetKey = std::pair<std::string, int32_t>;  // topic, partition
using GroupOffsets = std::map<GroupOffsetKey, GroupOffset>;

// One topic's znode: {"version": 1, "partitions": [{"partition", "offset", "leader_epoch",
// "metadata", "commit_ms"}, ...]}. Decode checks every field (kBadZnode naming `what`).
std::string EncodeTopicOffsets(const std::map<int32_t, GroupOffset>& partitions);
Result<std::map<int32_t, GroupOffset>> DecodeTopicOffsets(std::string_view json, std::string_view what);

class GroupOffsetStore {
 public:
  GroupOffsetStore(coord::ZkSession& zk, std::string root);

  // Stores `offsets` over what the group has (each partition replaced), all or none.
  Status Commit(const std::string& group, const GroupOffsets& offsets);
  // The group's committed offsets (empty when it has none).
  Result<GroupOffsets> Fetch(const std::string& group);
  // The groups that have committed offsets, sorted.
  Result<std::vector<std::string>> Groups();
  // Forgets the group's offsets; kNotFound (CoordErrc::kNoNode) when it has none.
  Status DeleteGroup(const std::string& group);
  // Forgets every group's offsets of the topic (it was deleted).
  Status DeleteTopic(const std::string& topic);

 private:
  std::string groups() const;
  std::string group(const std::string& g) const;

  coord::ZkSession& zk_;
  const std::string root_;
};

}  // namespace rdmq::cluster
