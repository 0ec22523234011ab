#include "rdmq/cluster/replica_set.h"

#include <algorithm>
#include <string>

namespace rdmq::cluster {
namespace {

std::string Ids(const std::vector<BrokerId>& v) {
  std::string s;
  for (BrokerId b : v) s += (s.empty() ? "" : ",") + std::to_string(b);
  return s;
}

bool Has(const std::vector<BrokerId>& v, BrokerId b) { return std::find(v.begin(), v.end(), b) != v.end(); }

}  // namespace

ReplicaSet::ReplicaSet(const ReplicaSetOptions& o)
    : leader_(o.leader),
      replicas_(o.replicas),
      min_insync_(o.min_insync_replicas),
      lag_ns_(o.lag_time_max_ns),
      isr_(o.isr),
      log_end_(o.log_end),
      hw_(o.high_watermark) {
  for (BrokerId b : replicas_) {
    if (b == leader_) continue;
    Follower f;
    // Followers in sync when the leader takes over count as caught up now: they lag only if
    // they fail to keep up from here.
    f.caught_up_ns = Has(isr_, b) ? o.now_ns : 0;
    f.leader_end_seen = log_end_;
    f.last_ack_ns = o.now_ns;
    followers_[b] = f;
  }
  if (!Has(isr_, leader_)) isr_.insert(isr_.begin(), leader_);
  Recompute();
}

void ReplicaSet::OnAppend(Offset log_end, uint64_t now_ns) {
  (void)now_ns;
  if (log_end > log_end_) log_end_ = log_end;
  Recompute();
}

Status ReplicaSet::OnFollowerAck(BrokerId follower, Offset end, uint64_t now_ns) {
  auto it = followers_.find(follower);
  if (it == followers_.end()) return Status::Ok();
  if (end > log_end_) {
    return Status(Errc::kInvalidArgument, "broker " + std::to_string(follower) + " acknowledged offset " +
                                              std::to_string(end.value()) + ", past the leader's log end " +
                                              std::to_string(log_end_.value()));
  }
  Follower& f = it->second;
  if (end < f.end) return Status::Ok();  // overtaken by a newer ack
  // Caught up: it holds what the leader held when it last acked (then), or all of it (now).
  if (end >= log_end_) {
    f.caught_up_ns = now_ns;
  } else if (end >= f.leader_end_seen) {
    f.caught_up_ns = std::max(f.caught_up_ns, f.last_ack_ns);
  }
  f.end = end;
  f.leader_end_seen = log_end_;
  f.last_ack_ns = now_ns;
  Recompute();
  return Status::Ok();
}

void ReplicaSet::Recompute() {
  Offset hw = log_end_;
  for (BrokerId b : isr_) {
    if (b == leader_) continue;
    auto it = followers_.find(b);
    if (it != followers_.end()) hw = std::min(hw, it->second.end);
  }
  hw_ = std::max(hw_, hw);
}

Status ReplicaSet::CheckAcksAll() const {
  if (static_cast<int32_t>(isr_.size()) >= min_insync_) return Status::Ok();
  return Status(Errc::kFailedPrecondition, "the in-sync replicas are " + Ids(isr_) +
                                               "; min.insync.replicas is " + std::to_string(min_insync_));
}

std::optional<std::vector<BrokerId>> ReplicaSet::ProposedIsr(uint64_t now_ns) const {
  std::vector<BrokerId> next{leader_};
  for (BrokerId b : replicas_) {
    if (b == leader_) continue;
    const Follower& f = followers_.at(b);
    const bool recent = now_ns < f.caught_up_ns + lag_ns_;
    const bool keep = Has(isr_, b) && recent;
    const bool join = !Has(isr_, b) && recent && f.end >= hw_;
    if (keep || join) next.push_back(b);
  }
  std::vector<BrokerId> now = isr_;
  std::sort(now.begin(), now.end());
  std::vector<BrokerId> sorted = next;
  std::sort(sorted.begin(), sorted.end());
  if (sorted == now) return std::nullopt;
  return next;
}

void ReplicaSet::SetIsr(std::vector<BrokerId> isr) {
  isr_ = std::move(isr);
  if (!Has(isr_, leader_)) isr_.insert(isr_.begin(), leader_);
  Recompute();
}

}  // namespace rdmq::cluster
