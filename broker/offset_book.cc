#include "offset_book.h"

#include "cluster_member.h"
#include "rdmq/cluster/group_offsets.h"

namespace rdmq::broker::internal {
namespace {

class Local final : public OffsetBook {
 public:
  explicit Local(metadata::OffsetStore& store) : store_(store) {}
  Status Commit(const std::string& group, const metadata::GroupOffsets& offsets) override {
    return store_.Commit(group, offsets);
  }
  Result<metadata::GroupOffsets> FetchGroup(const std::string& group) override {
    return store_.FetchGroup(group);
  }
  Result<std::vector<std::string>> Groups() override { return store_.Groups(); }
  Status DeleteGroup(const std::string& group) override { return store_.DeleteGroup(group); }
  Status DeleteTopic(const std::string& topic) override { return store_.DeleteTopic(topic); }

 private:
  metadata::OffsetStore& store_;
};

class InCluster final : public OffsetBook {
 public:
  explicit InCluster(const ClusterMember& member) : member_(member) {}

  Status Commit(const std::string& group, const metadata::GroupOffsets& offsets) override {
    // The same checks as the local store's, so both refuse the same commits.
    RDMQ_RETURN_IF_ERROR(metadata::ValidateGroupId(group));
    cluster::GroupOffsets out;
    for (const auto& [key, c] : offsets) {
      if (key.second < 0 || c.offset < 0) {
        return Status(Errc::kInvalidArgument, "a negative partition or offset for " + key.first);
      }
      if (c.metadata.size() > metadata::kMaxOffsetMetadata) {
        return Status(Errc::kInvalidArgument,
                      "offset metadata over " + std::to_string(metadata::kMaxOffsetMetadata) + " bytes");
      }
      out[key] = {c.offset, c.leader_epoch, c.metadata, c.commit_ms};
    }
    return WithStore([&](cluster::GroupOffsetStore& s) { return s.Commit(group, out); });
  }
  Result<metadata::GroupOffsets> FetchGroup(const std::string& group) override {
    metadata::GroupOffsets out;
    RDMQ_RETURN_IF_ERROR(WithStore([&](cluster::GroupOffsetStore& s) -> Status {
      RDMQ_ASSIGN_OR_RETURN(cluster::GroupOffsets got, s.Fetch(group));
      for (auto& [key, o] : got) out[key] = {o.offset, o.leader_epoch, std::move(o.metadata), o.commit_ms};
      return Status::Ok();
    }));
    return out;
  }
  Result<std::vector<std::string>> Groups() override {
    std::vector<std::string> out;
    RDMQ_RETURN_IF_ERROR(WithStore([&](cluster::GroupOffsetStore& s) -> Status {
      RDMQ_ASSIGN_OR_RETURN(out, s.Groups());
      return Status::Ok();
    }));
    return out;
  }
  Status DeleteGroup(const std::string& group) override {
    Status st = WithStore([&](cluster::GroupOffsetStore& s) { return s.DeleteGroup(group); });
    if (st.is(coord::CoordErrc::kNoNode))
      return Status(metadata::MetadataErrc::kNoSuchGroup, "group '" + group + "' has no committed offsets");
    return st;
  }
  Status DeleteTopic(const std::string& topic) override {
    return WithStore([&](cluster::GroupOffsetStore& s) { return s.DeleteTopic(topic); });
  }

 private:
  template <class F>
  Status WithStore(F&& f) const {
    return member_.WithZooKeeper([&](coord::ZkSession& zk, const std::string& root) {
      cluster::GroupOffsetStore store(zk, root);
      return f(store);
    });
  }

  const ClusterMember& member_;
};

}  // namespace

std::unique_ptr<OffsetBook> LocalOffsetBook(metadata::OffsetStore& store) {
  return std::make_unique<Local>(store);
}
std::unique_ptr<OffsetBook> ClusterOffsetBook(const ClusterMember& member) {
  return std::make_unique<InCluster>(member);
}

}  // namespace rdmq::broker::internal
