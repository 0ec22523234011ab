#include "group_coordinator.h"

#include <random>

#include "group_convert.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using protocol::WireError;
using Clock = std::chrono::steady_clock;

// The group module's errors onto the wire's codes, keeping the message.
Status ToWire(const Status& s) {
  if (s.ok()) return s;
  std::string msg(s.context());
  if (msg.empty()) msg = s.code().message();
  using group::GroupErrc;
  if (s.is(GroupErrc::kUnknownMemberId)) return Status(WireError::kUnknownMemberId, msg);
  if (s.is(GroupErrc::kFencedMemberEpoch)) return Status(WireError::kFencedMemberEpoch, msg);
  if (s.is(GroupErrc::kStaleMemberEpoch)) return Status(WireError::kStaleMemberEpoch, msg);
  if (s.is(GroupErrc::kInconsistentAssignor)) return Status(WireError::kInconsistentAssignor, msg);
  if (s.is(GroupErrc::kGroupMaxSizeReached)) return Status(WireError::kGroupMaxSizeReached, msg);
  using group::ClassicErrc;
  if (s.is(ClassicErrc::kInconsistentGroupProtocol))
    return Status(WireError::kInconsistentGroupProtocol, msg);
  // A classic group's checks of an rdmq commit.
  if (s.is(ClassicErrc::kUnknownMemberId) || s.is(ClassicErrc::kFencedInstanceId)) {
    return Status(WireError::kUnknownMemberId, msg);
  }
  if (s.is(ClassicErrc::kIllegalGeneration) || s.is(ClassicErrc::kRebalanceInProgress)) {
    return Status(WireError::kStaleMemberEpoch, msg);
  }
  if (s.is(ClassicErrc::kCoordinatorNotAvailable)) return Status(WireError::kUnavailable, msg);
  if (s.is(metadata::MetadataErrc::kBadGroupId)) return Status(WireError::kInvalidGroupId, msg);
  if (s.is(metadata::MetadataErrc::kNoSuchGroup)) return Status(WireError::kUnknownGroup, msg);
  if (s.is(Errc::kInvalidArgument)) return Status(WireError::kInvalidRequest, msg);
  return Status(WireError::kStorageError, "offset store: " + s.ToString());
}

std::vector<protocol::TopicPartitionRef> ToRefs(const std::vector<group::TopicPartition>& tps) {
  std::vector<protocol::TopicPartitionRef> out;
  out.reserve(tps.size());
  for (const auto& tp : tps) out.push_back({tp.topic, PartitionId(tp.partition)});
  return out;
}

protocol::OffsetEntry ToEntry(const metadata::OffsetKey& key, const metadata::CommittedOffset& c) {
  return {key.first,  PartitionId(key.second), Offset(c.offset), c.leader_epoch,
          c.metadata, TimestampMs(c.commit_ms)};
}

namespace {

std::string Salt() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

}  // namespace

GroupCoordinator::GroupCoordinator(const BrokerConfig& cfg, const metadata::MetadataStore& meta,
                                   metadata::OffsetStore& offsets)
    : cfg_(cfg), meta_(meta), offsets_(LocalOffsetBook(offsets)), salt_(Salt()) {}

void GroupCoordinator::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void GroupCoordinator::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  // Every waiting JoinGroup/SyncGroup is answered; the classic groups are gone (Kafka clients
  // rejoin after the restart as after a coordinator move).
  std::vector<Delivery> ready;
  {
    MutexLock lock(mu_);
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (auto* classic = std::get_if<group::ClassicGroup>(&it->second)) {
        classic->Unload(group::ClassicErrc::kCoordinatorNotAvailable);
        Collect(*classic, &ready);
        it = groups_.erase(it);
      } else {
        ++it;
      }
    }
  }
  Deliver(ready);
}

group::TopicCounts GroupCoordinator::Topics() const {
  group::TopicCounts out;
  for (const auto& t : topic_source_ ? topic_source_() : meta_.ListTopics())
    out[t.name] = t.config.partitions;
  return out;
}

group::Group* GroupCoordinator::NativeFor(const std::string& id, bool create, Status* error) {
  auto it = groups_.find(id);
  if (it != groups_.end()) {
    if (auto* g = std::get_if<group::Group>(&it->second)) return g;
    const auto& classic = std::get<group::ClassicGroup>(it->second);
    if (!classic.empty()) {
      *error =
          Status(WireError::kInconsistentGroupProtocol,
                 "group '" + id + "' is a Kafka consumer group (classic JoinGroup/SyncGroup protocol) with " +
                     std::to_string(classic.member_count()) + " members; use another group id");
      return nullptr;
    }
    groups_.erase(it);  // an empty classic group: nothing waits on it
  }
  if (!create) return nullptr;
  group::GroupConfig gc;
  gc.heartbeat_interval = std::chrono::milliseconds(cfg_.group_heartbeat_interval_ms);
  gc.max_size = static_cast<int32_t>(cfg_.group_max_size);
  gc.member_id_salt = salt_;
  it = groups_.emplace(id, Slot(std::in_place_type<group::Group>, id, gc)).first;
  return &std::get<group::Group>(it->second);
}

Result<protocol::GroupHeartbeatResponse> GroupCoordinator::Heartbeat(
    const protocol::GroupHeartbeatRequest& req, const std::string& client_id) {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(req.group)));
  const bool joining = req.member_epoch == protocol::kJoinEpoch;
  for (const uint32_t t : {req.session_timeout_ms}) {
    if (joining && (t < cfg_.group_min_session_timeout_ms || t > cfg_.group_max_session_timeout_ms)) {
      return Status(WireError::kInvalidRequest,
                    "session.timeout.ms=" + std::to_string(t) + ": the broker accepts " +
                        std::to_string(cfg_.group_min_session_timeout_ms) + " to " +
                        std::to_string(cfg_.group_max_session_timeout_ms) +
                        " (group.min/max.session.timeout.ms)");
    }
  }
  group::HeartbeatRequest in;
  in.member_id = req.member_id;
  in.instance_id = req.instance_id;
  in.client_id = client_id;
  in.member_epoch = req.member_epoch;
  in.topics = req.topics;
  in.topic_regex = req.topic_regex;
  in.assignor = req.assignor;
  for (const auto& tp : req.owned) in.owned.push_back({tp.topic, tp.partition.value()});
  in.session_timeout = std::chrono::milliseconds(req.session_timeout_ms);
  in.rebalance_timeout = std::chrono::milliseconds(req.rebalance_timeout_ms);
  const group::TopicCounts topics = Topics();
  MutexLock lock(mu_);
  if (stop_) return Status(WireError::kUnavailable, "the broker is shutting down");
  Status error;
  group::Group* g = NativeFor(req.group, joining, &error);
  if (g == nullptr && !error.ok()) return error;
  if (g == nullptr) {
    return Status(WireError::kUnknownMemberId, "group '" + req.group + "' has no member " + req.member_id +
                                                   " (the broker may have restarted): rejoin");
  }
  group::HeartbeatResult r = g->Heartbeat(in, Clock::now(), topics);
  cv_.NotifyAll();  // deadlines may have moved
  RDMQ_RETURN_IF_ERROR(ToWire(r.status));
  protocol::GroupHeartbeatResponse out;
  out.member_id = r.member_id;
  out.member_epoch = r.member_epoch;
  out.heartbeat_interval_ms = static_cast<uint32_t>(r.heartbeat_interval.count());
  out.assignment = ToRefs(r.assignment);
  return out;
}

Status GroupCoordinator::Commit(const protocol::OffsetCommitRequest& req) {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(req.group)));
  const group::TopicCounts topics = Topics();
  metadata::GroupOffsets offsets;
  const int64_t now_ms = WallMillis().value();
  for (const auto& e : req.offsets) {
    const auto t = topics.find(e.topic);
    if (t == topics.end()) return Status(WireError::kUnknownTopic, "unknown topic '" + e.topic + "'");
    if (e.partition.value() < 0 || e.partition.value() >= t->second) {
      return Status(WireError::kUnknownPartition, e.topic + " has " + std::to_string(t->second) +
                                                      " partitions; " + std::to_string(e.partition.value()) +
                                                      " requested");
    }
    offsets[{e.topic, e.partition.value()}] = {e.offset.value(), e.leader_epoch, e.metadata, now_ms};
  }
  // The check and the store happen under one lock, so a member fenced in between cannot commit.
  std::vector<Delivery> ready;
  Status s;
  {
    MutexLock lock(mu_);
    const auto it = groups_.find(req.group);
    if (it == groups_.end()) {
      if (!req.member_id.empty()) {
        return Status(WireError::kUnknownMemberId,
                      "group '" + req.group + "' has no member " + req.member_id);
      }
    } else if (auto* native = std::get_if<group::Group>(&it->second)) {
      RDMQ_RETURN_IF_ERROR(ToWire(native->CheckCommit(req.member_id, req.member_epoch)));
    } else {
      // A Kafka classic group: a simple commit (rdmq group reset-offsets) needs it without
      // members; an rdmq member id cannot be one of its members.
      auto& classic = std::get<group::ClassicGroup>(it->second);
      s = ToWire(classic.CheckCommit(req.member_id, "", req.member_epoch, Clock::now()));
      Collect(classic, &ready);
    }
    if (s.ok()) s = ToWire(offsets_->Commit(req.group, offsets));
  }
  Deliver(ready);
  return s;
}

Result<protocol::OffsetFetchResponse> GroupCoordinator::Fetch(const protocol::OffsetFetchRequest& req) const {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(req.group)));
  protocol::OffsetFetchResponse out;
  RDMQ_ASSIGN_OR_RETURN(const metadata::GroupOffsets all, offsets_->FetchGroup(req.group));
  if (req.partitions.empty()) {
    for (const auto& [key, c] : all) out.offsets.push_back(ToEntry(key, c));
    return out;
  }
  for (const auto& tp : req.partitions) {
    const auto it = all.find({tp.topic, tp.partition.value()});
    const auto c = it == all.end() ? std::nullopt : std::optional(it->second);
    if (c) {
      out.offsets.push_back(ToEntry({tp.topic, tp.partition.value()}, *c));
    } else {
      out.offsets.push_back({tp.topic, tp.partition, Offset(-1), -1, "", TimestampMs(0)});
    }
  }
  return out;
}

Status GroupCoordinator::Delete(const std::string& id) {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(id)));
  MutexLock lock(mu_);
  const auto it = groups_.find(id);
  if (it != groups_.end()) {
    size_t members = 0;
    if (const auto* native = std::get_if<group::Group>(&it->second)) {
      members = native->empty() ? 0 : native->Describe().members.size();
    } else {
      const auto& classic = std::get<group::ClassicGroup>(it->second);
      // A pending member (told MEMBER_ID_REQUIRED) is about to join: the group is not empty.
      members = classic.empty() ? 0 : std::max<size_t>(classic.member_count(), 1);
    }
    if (members > 0) {
      return Status(WireError::kGroupNotEmpty,
                    "group '" + id + "' has " + std::to_string(members) + " members; stop them first");
    }
  }
  const bool had_state = it != groups_.end();
  if (had_state) groups_.erase(it);
  Status s = offsets_->DeleteGroup(id);
  if (s.is(metadata::MetadataErrc::kNoSuchGroup) && had_state) return Status::Ok();
  if (s.is(metadata::MetadataErrc::kNoSuchGroup))
    return Status(WireError::kUnknownGroup, "no group '" + id + "'");
  return ToWire(s);
}

void GroupCoordinator::TopicsChanged() {
  {
    MutexLock lock(mu_);
    topics_changed_ = true;
  }
  cv_.NotifyAll();
}

Status GroupCoordinator::TopicDeleted(const std::string& topic) {
  TopicsChanged();
  return offsets_->DeleteTopic(topic);
}

void GroupCoordinator::Loop() {
  bool changed = true;
  for (;;) {
    // Topic counts are read without the lock (the metadata store has its own); a change
    // reported meanwhile sets topics_changed_ again and is seen on the next round.
    const group::TopicCounts topics = Topics();
    std::vector<Delivery> ready;
    {
      MutexLock lock(mu_);
      if (stop_) return;
      const auto now = Clock::now();
      std::optional<Clock::time_point> next;
      for (auto it = groups_.begin(); it != groups_.end();) {
        bool drop = false;
        std::optional<Clock::time_point> d;
        if (auto* native = std::get_if<group::Group>(&it->second)) {
          const auto due = native->NextDeadline();
          if (changed || (due && *due <= now)) native->Tick(now, topics);
          // A group left with no members is dropped; its committed offsets stay in the store.
          drop = native->empty();
          d = native->NextDeadline();
        } else {
          auto& classic = std::get<group::ClassicGroup>(it->second);
          const auto due = classic.NextDeadline();
          if (due && *due <= now) classic.Tick(now);
          Collect(classic, &ready);
          // An empty classic group (no members, none pending) has nothing waiting on it.
          drop = classic.empty();
          d = classic.NextDeadline();
        }
        if (drop) {
          it = groups_.erase(it);
          continue;
        }
        if (d && (!next || *d < *next)) next = *d;
        ++it;
      }
      if (ready.empty() && !topics_changed_ && !stop_) {
        if (next) {
          cv_.WaitFor(mu_, std::max(*next - Clock::now(), Clock::duration(std::chrono::milliseconds(1))));
        } else {
          cv_.Wait(mu_);
        }
      }
      changed = std::exchange(topics_changed_, false);
    }
    Deliver(ready);
  }
}

}  // namespace rdmq::broker::internal
