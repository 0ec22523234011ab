// GroupCoordinator's Kafka classic-protocol calls: JoinGroup and SyncGroup (answered through
// callbacks, outside the lock), Heartbeat, LeaveGroup and OffsetCommit, on one registry shared
// with rdmq's own groups (group_coordinator.h describes the threading contract).
#include <algorithm>

#include "group_convert.h"
#include "group_coordinator.h"
#include "rdmq/common/clock.h"
#include "rdmq/group/errors.h"

namespace rdmq::broker::internal {

using group::ClassicErrc;
using Clock = std::chrono::steady_clock;

namespace {

Status GroupIdError(const std::string& group) {
  Status s = metadata::ValidateGroupId(group);
  if (s.ok()) return s;
  return Status(ClassicErrc::kInvalidGroupId,
                std::string(s.context().empty() ? "invalid group id" : s.context()));
}

Status ShuttingDown() { return Status(ClassicErrc::kCoordinatorNotAvailable, "the broker is shutting down"); }

group::ClassicJoinResponse JoinError(Status s, std::string member_id) {
  group::ClassicJoinResponse r;
  r.status = std::move(s);
  r.member_id = std::move(member_id);
  return r;
}

group::ClassicSyncResponse SyncError(Status s) {
  group::ClassicSyncResponse r;
  r.status = std::move(s);
  return r;
}

}  // namespace

group::ClassicConfig GroupCoordinator::ClassicCfg() const {
  group::ClassicConfig c;
  c.initial_rebalance_delay = std::chrono::milliseconds(cfg_.group_initial_rebalance_delay_ms);
  c.min_session_timeout = std::chrono::milliseconds(cfg_.group_min_session_timeout_ms);
  c.max_session_timeout = std::chrono::milliseconds(cfg_.group_max_session_timeout_ms);
  c.max_size = static_cast<int32_t>(cfg_.group_max_size);
  c.member_id_salt = salt_;
  return c;
}

group::ClassicGroup* GroupCoordinator::ClassicFor(const std::string& id, bool create, Status* error) {
  auto it = groups_.find(id);
  if (it != groups_.end()) {
    if (auto* g = std::get_if<group::ClassicGroup>(&it->second)) return g;
    const auto& native = std::get<group::Group>(it->second);
    if (!native.empty()) {
      *error =
          Status(ClassicErrc::kInconsistentGroupProtocol,
                 "group '" + id + "' is used by rdmq consumers (rdmq's own group protocol) with " +
                     std::to_string(native.Describe().members.size()) + " members; use another group id");
      return nullptr;
    }
    groups_.erase(it);
  }
  if (!create) {
    *error = Status(ClassicErrc::kUnknownMemberId, "group '" + id + "' has no members");
    return nullptr;
  }
  it = groups_.emplace(id, Slot(std::in_place_type<group::ClassicGroup>, id, ClassicCfg())).first;
  return &std::get<group::ClassicGroup>(it->second);
}

void GroupCoordinator::Collect(group::ClassicGroup& g, std::vector<Delivery>* out) {
  for (auto& c : g.TakeCompletions()) {
    auto w = waiters_.find(c.token);
    if (w == waiters_.end()) continue;  // answered by the call that brought it (never happens)
    if (auto* join = std::get_if<group::ClassicJoinResponse>(&c.response)) {
      out->push_back(
          [done = std::move(w->second.join), r = std::move(*join)]() mutable { done(std::move(r)); });
    } else {
      out->push_back([done = std::move(w->second.sync), r = std::move(std::get<group::ClassicSyncResponse>(
                                                            c.response))]() mutable { done(std::move(r)); });
    }
    waiters_.erase(w);
  }
}

void GroupCoordinator::Deliver(std::vector<Delivery>& ready) {
  for (auto& d : ready) d();
  ready.clear();
}

void GroupCoordinator::JoinGroup(const std::string& group_id, const group::ClassicJoinRequest& req,
                                 JoinDone done) {
  std::vector<Delivery> ready;
  std::optional<group::ClassicJoinResponse> now_answer;
  if (Status s = GroupIdError(group_id); !s.ok()) {
    now_answer = JoinError(std::move(s), req.member_id);
  } else {
    MutexLock lock(mu_);
    Status error;
    group::ClassicGroup* g = stop_ ? nullptr : ClassicFor(group_id, req.member_id.empty(), &error);
    if (stop_) {
      now_answer = JoinError(ShuttingDown(), req.member_id);
    } else if (g == nullptr) {
      now_answer = JoinError(std::move(error), req.member_id);
    } else {
      const group::Token token = next_token_++;
      now_answer = g->Join(token, req, Clock::now());
      // Parked: the answer comes as a completion, maybe already in this call's (Collect).
      if (!now_answer) waiters_[token].join.swap(done);
      Collect(*g, &ready);
      cv_.NotifyAll();  // deadlines may have moved
    }
  }
  if (now_answer) done(std::move(*now_answer));
  Deliver(ready);
}

void GroupCoordinator::SyncGroup(const std::string& group_id, const group::ClassicSyncRequest& req,
                                 SyncDone done) {
  std::vector<Delivery> ready;
  std::optional<group::ClassicSyncResponse> now_answer;
  if (Status s = GroupIdError(group_id); !s.ok()) {
    now_answer = SyncError(std::move(s));
  } else {
    MutexLock lock(mu_);
    Status error;
    group::ClassicGroup* g = stop_ ? nullptr : ClassicFor(group_id, false, &error);
    if (stop_) {
      now_answer = SyncError(ShuttingDown());
    } else if (g == nullptr) {
      now_answer = SyncError(std::move(error));
    } else {
      const group::Token token = next_token_++;
      now_answer = g->Sync(token, req, Clock::now());
      if (!now_answer) waiters_[token].sync.swap(done);
      Collect(*g, &ready);
      cv_.NotifyAll();
    }
  }
  if (now_answer) done(std::move(*now_answer));
  Deliver(ready);
}

Status GroupCoordinator::ClassicHeartbeat(const std::string& group_id,
                                          const group::ClassicHeartbeatRequest& req) {
  RDMQ_RETURN_IF_ERROR(GroupIdError(group_id));
  std::vector<Delivery> ready;
  Status s;
  {
    MutexLock lock(mu_);
    if (stop_) return ShuttingDown();
    group::ClassicGroup* g = ClassicFor(group_id, false, &s);
    if (g == nullptr) return s;
    s = g->Heartbeat(req, Clock::now());
    Collect(*g, &ready);
    cv_.NotifyAll();
  }
  Deliver(ready);
  return s;
}

group::ClassicLeaveResponse GroupCoordinator::LeaveGroup(
    const std::string& group_id, const std::vector<group::ClassicLeaveMember>& members) {
  group::ClassicLeaveResponse out;
  auto all = [&](const Status& s) {
    out.status = s;
    out.members.assign(members.size(), s);
    return out;
  };
  if (Status s = GroupIdError(group_id); !s.ok()) return all(s);
  std::vector<Delivery> ready;
  {
    MutexLock lock(mu_);
    if (stop_) return all(ShuttingDown());
    Status error;
    group::ClassicGroup* g = ClassicFor(group_id, false, &error);
    if (g == nullptr) return all(error);
    out = g->Leave(members, Clock::now());
    Collect(*g, &ready);
    cv_.NotifyAll();
  }
  Deliver(ready);
  return out;
}

// The group-level check of a Kafka OffsetCommit against whichever kind of group holds the id.
Status GroupCoordinator::CheckClassicCommit(const std::string& group_id, const std::string& member_id,
                                            const std::string& instance_id, int32_t generation,
                                            std::vector<Delivery>* out) {
  auto it = groups_.find(group_id);
  if (it == groups_.end()) {
    // Kafka: a group that does not exist accepts a commit at generation -1 (it becomes a
    // "simple" group); any other is ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND from OffsetCommit v9).
    if (generation < 0) return Status::Ok();
    return Status(ClassicErrc::kIllegalGeneration,
                  "group '" + group_id + "' has no members (generation " + std::to_string(generation) + ")");
  }
  if (auto* classic = std::get_if<group::ClassicGroup>(&it->second)) {
    Status s = classic->CheckCommit(member_id, instance_id, generation, Clock::now());
    Collect(*classic, out);
    return s;
  }
  // A group of rdmq's own protocol: its members commit at their epoch.
  const auto& native = std::get<group::Group>(it->second);
  const bool simple = member_id.empty() && generation < 0;
  Status s = native.CheckCommit(member_id, simple ? group::kLeaveEpoch : generation);
  if (s.ok()) return s;
  std::string msg(s.context());
  if (s.is(group::GroupErrc::kStaleMemberEpoch)) return Status(ClassicErrc::kIllegalGeneration, msg);
  return Status(ClassicErrc::kUnknownMemberId, msg);
}

ClassicCommitResponse GroupCoordinator::CommitClassic(const ClassicCommitRequest& req) {
  ClassicCommitResponse out;
  if (Status s = GroupIdError(req.group); !s.ok()) {
    out.status = s;
    return out;
  }
  const group::TopicCounts topics = Topics();
  const int64_t now_ms = WallMillis().value();
  metadata::GroupOffsets offsets;
  out.partitions.resize(req.offsets.size());
  for (size_t i = 0; i < req.offsets.size(); ++i) {
    const ClassicOffset& o = req.offsets[i];
    const auto t = topics.find(o.topic);
    if (t == topics.end() || o.partition < 0 || o.partition >= t->second) {
      out.partitions[i] =
          Status(ClassicErrc::kUnknownTopicOrPartition, o.topic + "-" + std::to_string(o.partition));
    } else if (o.metadata.size() > metadata::kMaxOffsetMetadata) {
      out.partitions[i] = Status(ClassicErrc::kOffsetMetadataTooLarge,
                                 std::to_string(o.metadata.size()) + " bytes of metadata; at most " +
                                     std::to_string(metadata::kMaxOffsetMetadata));
    } else if (o.offset < 0) {
      out.partitions[i] =
          Status(ClassicErrc::kUnknownServerError, "negative offset " + std::to_string(o.offset));
    } else {
      offsets[{o.topic, o.partition}] = {o.offset, o.leader_epoch, o.metadata, now_ms};
    }
  }
  std::vector<Delivery> ready;
  {
    // The check and the store happen under one lock, so a member fenced in between cannot commit.
    MutexLock lock(mu_);
    if (stop_) {
      out.status = ShuttingDown();
    } else {
      out.status = CheckClassicCommit(req.group, req.member_id, req.instance_id, req.generation_id, &ready);
    }
    if (out.status.ok() && !offsets.empty()) {
      if (Status s = offsets_->Commit(req.group, offsets); !s.ok()) {
        out.status = Status(ClassicErrc::kUnknownServerError, "offset store: " + s.ToString());
      }
    }
  }
  Deliver(ready);
  if (!out.status.ok()) std::fill(out.partitions.begin(), out.partitions.end(), out.status);
  return out;
}

}  // namespace rdmq::broker::internal
