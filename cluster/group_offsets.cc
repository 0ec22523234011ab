#include "rdmq/cluster/group_offsets.h"

#include <algorithm>
#include <cctype>

#include "layout.h"
#include "rdmq/cluster/model.h"

namespace rdmq::cluster {

using coord::CoordErrc;
using coord::MultiOp;

namespace {
std::string Child(const std::string& dir, const std::string& name) {
  std::string path = dir;
  path += '/';
  path += name;
  return path;
}
}  // namespace

GroupOffsetStore::GroupOffsetStore(coord::ZkSession& zk, std::string root)
    : zk_(zk), root_(std::move(root)) {}

std::string GroupOffsetStore::groups() const { return internal::Layout{root_}.groups(); }
std::string GroupOffsetStore::group(const std::string& g) const {
  return internal::Layout{root_}.group(EscapeName(g));
}

Status GroupOffsetStore::Commit(const std::string& group, const GroupOffsets& offsets) {
  std::map<std::string, std::map<int32_t, GroupOffset>> by_topic;
  for (const auto& [key, o] : offsets) by_topic[key.first][key.second] = o;
  const std::string dir = this->group(group);
  RDMQ_RETURN_IF_ERROR(zk_.CreateParents(dir));
  // Read every topic's znode, merge, and write them all with their versions checked; a lost race
  // (another commit in between) reads again.
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::vector<MultiOp> ops;
    for (const auto& [topic, partitions] : by_topic) {
      const std::string path = Child(dir, topic);
      auto node = zk_.Get(path);
      if (!node.ok() && !node.status().is(CoordErrc::kNoNode)) return node.status();
      std::map<int32_t, GroupOffset> merged;
      if (node.ok()) {
        RDMQ_ASSIGN_OR_RETURN(merged, DecodeTopicOffsets(node->data, path));
      }
      for (const auto& [p, o] : partitions) merged[p] = o;
      std::string data = EncodeTopicOffsets(merged);
      ops.push_back(node.ok() ? MultiOp::Set(path, std::move(data), node->stat.version)
                              : MultiOp::Create(path, std::move(data)));
    }
    Status s = zk_.Multi(ops);
    if (s.ok()) return s;
    if (!s.is(CoordErrc::kBadVersion) && !s.is(CoordErrc::kNodeExists) && !s.is(CoordErrc::kNoNode)) return s;
  }
  return Status(ClusterErrc::kStaleState, "group '" + group + "': too many concurrent commits");
}

Result<GroupOffsets> GroupOffsetStore::Fetch(const std::string& group) {
  const std::string dir = this->group(group);
  auto topics = zk_.Children(dir);
  if (!topics.ok() && topics.status().is(CoordErrc::kNoNode)) return GroupOffsets{};
  if (!topics.ok()) return topics.status();
  GroupOffsets out;
  for (const std::string& topic : *topics) {
    auto node = zk_.Get(Child(dir, topic));
    if (!node.ok() && node.status().is(CoordErrc::kNoNode)) continue;  // deleted meanwhile
    if (!node.ok()) return node.status();
    RDMQ_ASSIGN_OR_RETURN(auto partitions, DecodeTopicOffsets(node->data, Child(dir, topic)));
    for (auto& [p, o] : partitions) out[{topic, p}] = std::move(o);
  }
  return out;
}

Result<std::vector<std::string>> GroupOffsetStore::Groups() {
  auto names = zk_.Children(groups());
  if (!names.ok() && names.status().is(CoordErrc::kNoNode)) return std::vector<std::string>{};
  if (!names.ok()) return names.status();
  std::vector<std::string> out;
  for (const std::string& name : *names) {
    RDMQ_ASSIGN_OR_RETURN(std::string g, UnescapeName(name));
    auto topics = zk_.Children(Child(groups(), name));
    if (topics.ok() && !topics->empty()) out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status GroupOffsetStore::DeleteGroup(const std::string& group) {
  const std::string dir = this->group(group);
  RDMQ_ASSIGN_OR_RETURN(std::vector<std::string> topics, zk_.Children(dir));
  if (topics.empty()) return Status(CoordErrc::kNoNode, "group '" + group + "' has no committed offsets");
  std::vector<MultiOp> ops;
  ops.reserve(topics.size() + 1);
  for (const std::string& topic : topics) ops.push_back(MultiOp::Delete(Child(dir, topic), -1));
  ops.push_back(MultiOp::Delete(dir, -1));
  return zk_.Multi(ops);
}

Status GroupOffsetStore::DeleteTopic(const std::string& topic) {
  auto names = zk_.Children(groups());
  if (!names.ok() && names.status().is(CoordErrc::kNoNode)) return Status::Ok();
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    Status s = zk_.Delete(Child(Child(groups(), name), topic));
    if (!s.ok() && !s.is(CoordErrc::kNoNode)) return s;
  }
  return Status::Ok();
}

}  // namespace rdmq::cluster
