// Group::Impl: the state of one consumer group, and the steps Group's calls are made of.
//
// Invariant: `holder` maps every partition that is in some member's `assigned` or `pending` set
// to that member, and no partition is in two members' sets. A member's `assigned` is what the
// coordinator told it it may own; `pending` what it was told to revoke and has not yet reported
// gone. A partition of the target assignment goes to its new member only once it has no holder.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "rdmq/group/group.h"

namespace rdmq::group {

using PartitionSet = std::set<TopicPartition>;

namespace internal {

struct Member {
  std::string id;
  std::string instance_id;
  std::string client_id;
  int32_t epoch = 0;
  int32_t previous_epoch = 0;  // accepted in a heartbeat too, when its owned set is plausible

  std::vector<std::string> topics;  // as subscribed (sorted, distinct)
  std::string regex_text;
  std::optional<std::regex> regex;
  std::vector<std::string> resolved;  // existing topics it subscribes to (sorted)
  std::string assignor;               // as the member asked ("" = the group's)

  PartitionSet assigned;  // what it may own now
  PartitionSet pending;   // asked to revoke, not yet reported gone

  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};
  TimePoint last_heartbeat{};
  std::optional<TimePoint> revoke_deadline;  // set while `pending` is not empty
  bool left = false;                         // a static member that left with epoch -2

  TimePoint SessionDeadline() const { return last_heartbeat + session_timeout; }
};

// A validated subscription from a request.
struct Subscription {
  std::vector<std::string> topics;
  std::string regex_text;
  std::optional<std::regex> regex;
};

}  // namespace internal

struct Group::Impl {
  Impl(std::string id, GroupConfig cfg) : group_id(std::move(id)), config(std::move(cfg)) {}

  std::string group_id;
  GroupConfig config;
  int32_t group_epoch = 0;
  int32_t target_epoch = 0;
  std::optional<AssignorKind> assignor;  // set by the first member, cleared when the group empties
  std::map<std::string, internal::Member> members;
  std::map<std::string, PartitionSet> target;
  std::map<TopicPartition, std::string> holder;
  TopicCounts topics;      // as last passed in
  TopicCounts subscribed;  // the counts of the subscribed topics when the target was computed
  uint64_t next_member = 1;
  bool dirty = false;  // the target must be recomputed

  // membership.cc
  Result<internal::Subscription> ParseSubscription(const HeartbeatRequest& r) const;
  Status CheckAssignor(const HeartbeatRequest& r, const internal::Member* self) const;
  Result<internal::Member*> Join(const HeartbeatRequest& r, TimePoint now);
  Result<internal::Member*> KeepAlive(const HeartbeatRequest& r, TimePoint now);
  HeartbeatResult Leave(const HeartbeatRequest& r, TimePoint now);
  void Update(internal::Member& m, const HeartbeatRequest& r, internal::Subscription sub, TimePoint now);
  std::string NewMemberId(const std::string& client_id);
  void Remove(const std::string& member_id);
  void Expire(TimePoint now);

  // topics.cc
  void RefreshTopics(const TopicCounts& now_topics);
  void Resolve(internal::Member& m) const;
  TopicCounts SubscribedCounts() const;

  // reconcile.cc
  void MaybeComputeTarget();
  void Reconcile(internal::Member& m, const std::vector<TopicPartition>& owned, TimePoint now);
  void AckRevocations(internal::Member& m, const PartitionSet& owned);
  bool EagerBarrier() const;
  void ReleaseAll(internal::Member& m);
  HeartbeatResult Response(const internal::Member& m) const;
  AssignorKind Kind() const { return assignor.value_or(config.default_assignor); }
};

}  // namespace rdmq::group
