#include "group_coordinator.h"

#include <random>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using protocol::WireError;
using Clock = std::chrono::steady_clock;

namespace {

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

std::string Salt() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

}  // namespace

GroupCoordinator::GroupCoordinator(const BrokerConfig& cfg, const metadata::MetadataStore& meta,
                                   metadata::OffsetStore& offsets)
    : cfg_(cfg), meta_(meta), offsets_(offsets), salt_(Salt()) {}

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
}

group::TopicCounts GroupCoordinator::Topics() const {
  group::TopicCounts out;
  for (const auto& t : meta_.ListTopics()) out[t.name] = t.config.partitions;
  return out;
}

group::Group& GroupCoordinator::GroupFor(const std::string& id) {
  auto it = groups_.find(id);
  if (it == groups_.end()) {
    group::GroupConfig gc;
    gc.heartbeat_interval = std::chrono::milliseconds(cfg_.group_heartbeat_interval_ms);
    gc.max_size = static_cast<int32_t>(cfg_.group_max_size);
    gc.member_id_salt = salt_;
    it = groups_.emplace(id, group::Group(id, gc)).first;
  }
  return it->second;
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
  if (!joining && groups_.count(req.group) == 0) {
    return Status(WireError::kUnknownMemberId, "group '" + req.group + "' has no member " + req.member_id +
                                                   " (the broker may have restarted): rejoin");
  }
  group::Group& g = GroupFor(req.group);
  group::HeartbeatResult r = g.Heartbeat(in, Clock::now(), topics);
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
  MutexLock lock(mu_);
  const auto it = groups_.find(req.group);
  if (it != groups_.end()) {
    RDMQ_RETURN_IF_ERROR(ToWire(it->second.CheckCommit(req.member_id, req.member_epoch)));
  } else if (!req.member_id.empty()) {
    return Status(WireError::kUnknownMemberId, "group '" + req.group + "' has no member " + req.member_id);
  }
  return ToWire(offsets_.Commit(req.group, offsets));
}

Result<protocol::OffsetFetchResponse> GroupCoordinator::Fetch(const protocol::OffsetFetchRequest& req) const {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(req.group)));
  protocol::OffsetFetchResponse out;
  if (req.partitions.empty()) {
    for (const auto& [key, c] : offsets_.FetchGroup(req.group)) out.offsets.push_back(ToEntry(key, c));
    return out;
  }
  for (const auto& tp : req.partitions) {
    const auto c = offsets_.Fetch(req.group, tp.topic, tp.partition.value());
    if (c) {
      out.offsets.push_back(ToEntry({tp.topic, tp.partition.value()}, *c));
    } else {
      out.offsets.push_back({tp.topic, tp.partition, Offset(-1), -1, "", TimestampMs(0)});
    }
  }
  return out;
}

protocol::ListGroupsResponse GroupCoordinator::List() const {
  protocol::ListGroupsResponse out;
  std::map<std::string, protocol::GroupListing> all;
  for (const auto& g : offsets_.Groups()) all[g] = {g, "Empty", 0};
  MutexLock lock(mu_);
  for (const auto& [id, g] : groups_) {
    const group::GroupDescription d = g.Describe();
    if (d.members.empty() && all.count(id) == 0) continue;
    all[id] = {id, std::string(group::GroupStateName(d.state)), static_cast<uint32_t>(d.members.size())};
  }
  for (auto& [id, l] : all) out.groups.push_back(std::move(l));
  return out;
}

Result<protocol::DescribeGroupResponse> GroupCoordinator::Describe(const std::string& id) const {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(id)));
  protocol::DescribeGroupResponse out;
  out.group = id;
  out.state = "Empty";
  for (const auto& [key, c] : offsets_.FetchGroup(id)) out.offsets.push_back(ToEntry(key, c));
  MutexLock lock(mu_);
  const auto it = groups_.find(id);
  if (it == groups_.end() && out.offsets.empty()) {
    return Status(WireError::kUnknownGroup, "no group '" + id + "' (no members, no committed offsets)");
  }
  if (it != groups_.end()) {
    const group::GroupDescription d = it->second.Describe();
    out.state = std::string(group::GroupStateName(d.state));
    out.group_epoch = d.group_epoch;
    out.assignor = d.assignor;
    for (const auto& m : d.members) {
      out.members.push_back({m.member_id, m.instance_id, m.client_id, m.member_epoch, m.topics, m.topic_regex,
                             ToRefs(m.assignment), ToRefs(m.target)});
    }
  }
  return out;
}

Status GroupCoordinator::Delete(const std::string& id) {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(id)));
  MutexLock lock(mu_);
  const auto it = groups_.find(id);
  if (it != groups_.end() && !it->second.empty()) {
    return Status(WireError::kGroupNotEmpty, "group '" + id + "' has " +
                                                 std::to_string(it->second.Describe().members.size()) +
                                                 " members; stop them first");
  }
  const bool had_state = it != groups_.end();
  if (had_state) groups_.erase(it);
  Status s = offsets_.DeleteGroup(id);
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
  return offsets_.DeleteTopic(topic);
}

void GroupCoordinator::Loop() {
  bool changed = true;
  for (;;) {
    // Topic counts are read without the lock (the metadata store has its own); a change
    // reported meanwhile sets topics_changed_ again and is seen on the next round.
    const group::TopicCounts topics = Topics();
    MutexLock lock(mu_);
    if (stop_) return;
    const auto now = Clock::now();
    std::optional<Clock::time_point> next;
    for (auto it = groups_.begin(); it != groups_.end();) {
      const auto due = it->second.NextDeadline();
      if (changed || (due && *due <= now)) it->second.Tick(now, topics);
      // A group left with no members is dropped; its committed offsets stay in the store.
      if (it->second.empty()) {
        it = groups_.erase(it);
        continue;
      }
      const auto d = it->second.NextDeadline();
      if (d && (!next || *d < *next)) next = *d;
      ++it;
    }
    if (!topics_changed_ && !stop_) {
      if (next) {
        cv_.WaitFor(mu_, std::max(*next - Clock::now(), Clock::duration(std::chrono::milliseconds(1))));
      } else {
        cv_.Wait(mu_);
      }
    }
    changed = std::exchange(topics_changed_, false);
  }
}

}  // namespace rdmq::broker::internal
