#include "consumer/membership.h"

#include <algorithm>
#include <utility>

#include "rdmq/client/coordinator.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/group_messages.h"

namespace rdmq::consumer::internal {

using protocol::Api;
using protocol::WireError;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<protocol::TopicPartitionRef> ToRefs(const std::vector<TopicPartition>& tps) {
  std::vector<protocol::TopicPartitionRef> out;
  out.reserve(tps.size());
  for (const auto& tp : tps) out.push_back({tp.topic, PartitionId(tp.partition)});
  return out;
}

}  // namespace

void Membership::Subscribe(std::vector<std::string> topics, std::string regex) {
  MutexLock lock(mu_);
  topics_ = std::move(topics);
  regex_ = std::move(regex);
  urgent_ = true;
  if (!running_) {
    running_ = true;
    stop_ = false;
    thread_ = std::thread([this] { Loop(); });
  }
  cv_.NotifyAll();
}

std::optional<std::vector<TopicPartition>> Membership::Target() const {
  MutexLock lock(mu_);
  return target_;
}

void Membership::SetOwned(std::vector<TopicPartition> owned) {
  std::sort(owned.begin(), owned.end());
  MutexLock lock(mu_);
  if (owned == owned_) return;
  owned_ = std::move(owned);
  urgent_ = true;
  cv_.NotifyAll();
}

bool Membership::TakeLost() {
  MutexLock lock(mu_);
  return std::exchange(lost_, false);
}

Status Membership::TakeError() {
  MutexLock lock(mu_);
  return std::exchange(error_, Status::Ok());
}

std::pair<std::string, int32_t> Membership::Identity() const {
  MutexLock lock(mu_);
  return {member_id_, epoch_};
}

void Membership::AwaitHeartbeat(std::chrono::milliseconds timeout) {
  UniqueLock lock(mu_);
  const uint64_t seen = answers_;
  urgent_ = true;
  cv_.NotifyAll();
  const auto deadline = Clock::now() + timeout;
  while (answers_ == seen && running_ && Clock::now() < deadline) cv_.WaitUntil(lock, deadline);
}

protocol::GroupHeartbeatRequest Membership::Request() const {
  protocol::GroupHeartbeatRequest r;
  r.group = cfg_.group_id;
  r.member_id = member_id_;
  r.instance_id = cfg_.group_instance_id;
  r.member_epoch = epoch_;
  r.topics = topics_;
  r.topic_regex = regex_;
  r.assignor = cfg_.assignor;
  // A join claims nothing (the broker refuses one that does): what a fenced member held is lost.
  if (epoch_ != protocol::kJoinEpoch) r.owned = ToRefs(owned_);
  r.session_timeout_ms = static_cast<uint32_t>(cfg_.session_timeout.count());
  r.rebalance_timeout_ms = static_cast<uint32_t>(cfg_.max_poll_interval.count());
  return r;
}

void Membership::OnAnswer(const Result<protocol::GroupHeartbeatResponse>& r) {
  ++answers_;
  if (r.ok()) {
    backoff_ = std::chrono::milliseconds(0);
    member_id_ = r->member_id;
    epoch_ = r->member_epoch;
    std::vector<TopicPartition> target;
    for (const auto& tp : r->assignment) target.push_back({tp.topic, tp.partition.value()});
    std::sort(target.begin(), target.end());
    target_ = std::move(target);
    interval_ = std::min(std::chrono::milliseconds(std::max<uint32_t>(r->heartbeat_interval_ms, 10)),
                         std::max(cfg_.session_timeout / 3, std::chrono::milliseconds(10)));
    return;
  }
  const Status& s = r.status();
  if (s.is(WireError::kUnknownMemberId) || s.is(WireError::kFencedMemberEpoch)) {
    // Rejoin with epoch 0. A static member keeps its instance id, so the broker can hand its
    // partitions back; what it owned counts as lost either way.
    RDMQ_LOG(kInfo, "consumer", "group membership lost; rejoining")
        .kv("group", cfg_.group_id)
        .kv("member", member_id_)
        .kv("why", s);
    member_id_.clear();
    epoch_ = 0;
    lost_ = !owned_.empty();
    owned_.clear();
    target_ = std::vector<TopicPartition>{};
    urgent_ = true;
    return;
  }
  if (s.is(WireError::kNotCoordinator)) {
    // The coordinator moved (a broker joined or left the cluster). The new one does not know
    // this member: its next answer is UNKNOWN_MEMBER_ID, and the member rejoins there.
    RDMQ_LOG(kInfo, "consumer", "group coordinator moved").kv("group", cfg_.group_id).kv("why", s);
    relocate_ = true;
  }
  if (s.is(Errc::kUnavailable) || s.is(Errc::kTimeout) || s.is(WireError::kStaleMemberEpoch) ||
      s.is(WireError::kNotCoordinator)) {
    const auto lo = cfg_.client.reconnect_backoff;
    backoff_ = std::clamp(backoff_ * 2, lo, std::max(lo, cfg_.client.reconnect_backoff_max));
    return;
  }
  error_ = s;  // a bad request: Poll reports it; keep trying at the normal interval
  backoff_ = std::max(cfg_.client.reconnect_backoff, cfg_.client.reconnect_backoff_max);
}

void Membership::Loop() {
  UniqueLock lock(mu_);
  auto next = Clock::now();
  while (!stop_) {
    if (!urgent_ && Clock::now() < next) {
      cv_.WaitUntil(lock, next);
      continue;
    }
    urgent_ = false;
    const protocol::GroupHeartbeatRequest req = Request();
    const bool relocate = std::exchange(relocate_, false);
    lock.Unlock();
    // The broker went away, or it no longer coordinates the group: find the coordinator again
    // (connecting to every bootstrap server in turn when needed) before the heartbeat; a failure
    // is retried with backoff like an unanswered heartbeat. Only this thread reconnects the
    // group's control connection.
    Result<protocol::GroupHeartbeatResponse> r = Status(Errc::kUnavailable, "not connected");
    Status located = Status::Ok();
    if (relocate || !conn_.connected()) located = client::FollowCoordinator(conn_, cfg_.group_id);
    if (located.ok()) {
      r = conn_.Call<protocol::GroupHeartbeatResponse>(Api::kGroupHeartbeat, req);
    } else {
      r = located;
    }
    lock.Lock();
    // An answer to a request built before the owned set or identity changed is still valid:
    // the broker's assignment holds until the next heartbeat says otherwise.
    OnAnswer(r);
    cv_.NotifyAll();
    next = Clock::now() + (backoff_.count() > 0 ? backoff_ : interval_);
  }
}

void Membership::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    cv_.NotifyAll();
  }
  if (thread_.joinable()) thread_.join();
  MutexLock lock(mu_);
  running_ = false;
}

void Membership::Leave(std::chrono::milliseconds timeout) {
  Stop();
  protocol::GroupHeartbeatRequest req;
  {
    MutexLock lock(mu_);
    if (member_id_.empty()) return;
    req = Request();
    req.member_epoch = cfg_.group_instance_id.empty() ? protocol::kLeaveEpoch : protocol::kStaticPauseEpoch;
    req.owned.clear();
    member_id_.clear();
    epoch_ = 0;
  }
  (void)timeout;  // the RPC's own request timeout bounds it; Close passes what is left
  auto r = conn_.Call<protocol::GroupHeartbeatResponse>(Api::kGroupHeartbeat, req);
  if (!r.ok())
    RDMQ_LOG(kInfo, "consumer", "leaving the group failed")
        .kv("group", cfg_.group_id)
        .kv("error", r.status());
}

}  // namespace rdmq::consumer::internal
