// GroupCoordinator: the broker's consumer groups (docs/groups.md) and their committed offsets.
// One group::Group state machine per group id, driven by GroupHeartbeat RPCs and by its own timer
// thread (session and rebalance timeouts, topic changes); committed offsets in the durable
// metadata::OffsetStore. Groups' membership is not persisted: after a restart members rejoin
// and resume from their committed offsets.
//
// Threading: every method is thread-safe (one mutex, taken outside the offset store's). The
// timer thread sleeps until the groups' next deadline, or until TopicsChanged() / Stop().
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "rdmq/broker/config.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/group/group.h"
#include "rdmq/metadata/offsets.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/group_messages.h"

namespace rdmq::broker::internal {

class GroupCoordinator {
 public:
  GroupCoordinator(const BrokerConfig& cfg, const metadata::MetadataStore& meta,
                   metadata::OffsetStore& offsets);
  ~GroupCoordinator() { Stop(); }
  GroupCoordinator(const GroupCoordinator&) = delete;
  GroupCoordinator& operator=(const GroupCoordinator&) = delete;

  void Start();
  void Stop() EXCLUDES(mu_);

  Result<protocol::GroupHeartbeatResponse> Heartbeat(const protocol::GroupHeartbeatRequest& req,
                                                     const std::string& client_id) EXCLUDES(mu_);
  // All or none; a member must be current (CheckCommit), a simple commit needs an empty group.
  Status Commit(const protocol::OffsetCommitRequest& req) EXCLUDES(mu_);
  Result<protocol::OffsetFetchResponse> Fetch(const protocol::OffsetFetchRequest& req) const;
  protocol::ListGroupsResponse List() const EXCLUDES(mu_);
  Result<protocol::DescribeGroupResponse> Describe(const std::string& group) const EXCLUDES(mu_);
  // GROUP_NOT_EMPTY while the group has members; UNKNOWN_GROUP when it has neither members nor
  // offsets.
  Status Delete(const std::string& group) EXCLUDES(mu_);
  // A topic was created, deleted or grew: wake the timer so that groups notice. A deleted
  // topic's committed offsets are forgotten.
  void TopicsChanged() EXCLUDES(mu_);
  Status TopicDeleted(const std::string& topic);

 private:
  void Loop() EXCLUDES(mu_);
  group::TopicCounts Topics() const;
  group::Group& GroupFor(const std::string& id) REQUIRES(mu_);

  const BrokerConfig& cfg_;
  const metadata::MetadataStore& meta_;
  metadata::OffsetStore& offsets_;
  const std::string salt_;  // this incarnation's, in generated member ids
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, group::Group> groups_ GUARDED_BY(mu_);
  bool topics_changed_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
