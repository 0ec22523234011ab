// The target assignment and each member's way to it (KIP-848's reconciliation).
//
// A member behind the target epoch first revokes what it must (cooperative: what its target
// lacks; eager: everything), and reaches the target epoch once it reported those partitions gone.
// A partition it is still revoking that a newer target gives back to it is kept (cooperative).
// At the target epoch it is given each partition of its target that nobody holds; a partition
// still held by another member comes on a later heartbeat, once that member released it. Eager
// assignors hand out nothing until every member is at the target epoch with nothing to revoke.
#include <algorithm>

#include "group_impl.h"

namespace rdmq::group {

using internal::Member;

void Group::Impl::MaybeComputeTarget() {
  TopicCounts now_subscribed = SubscribedCounts();
  if (!dirty && now_subscribed == subscribed) return;
  ++group_epoch;
  std::vector<MemberSpec> specs;
  specs.reserve(members.size());
  for (const auto& [id, m] : members) {
    MemberSpec spec{id, m.instance_id, m.resolved, {}};
    // Stickiness follows the previous target: it is what the member holds or is on its way to.
    auto t = target.find(id);
    if (t != target.end()) spec.owned.assign(t->second.begin(), t->second.end());
    specs.push_back(std::move(spec));
  }
  target.clear();
  if (!specs.empty()) {
    for (auto& [id, parts] : Assign(Kind(), specs, topics))
      target[id] = PartitionSet(parts.begin(), parts.end());
  }
  target_epoch = group_epoch;
  subscribed = std::move(now_subscribed);
  dirty = false;
}

void Group::Impl::AckRevocations(Member& m, const PartitionSet& owned) {
  for (auto it = m.pending.begin(); it != m.pending.end();) {
    if (owned.count(*it) != 0) {
      ++it;
      continue;
    }
    auto h = holder.find(*it);
    if (h != holder.end() && h->second == m.id) holder.erase(h);
    it = m.pending.erase(it);
  }
  if (m.pending.empty()) m.revoke_deadline.reset();
}

bool Group::Impl::EagerBarrier() const {
  return std::all_of(members.begin(), members.end(), [&](const auto& entry) {
    return entry.second.epoch == target_epoch && entry.second.pending.empty();
  });
}

void Group::Impl::Reconcile(Member& m, const std::vector<TopicPartition>& owned_list, TimePoint now) {
  const PartitionSet owned(owned_list.begin(), owned_list.end());
  AckRevocations(m, owned);
  static const PartitionSet kNone;
  auto t = target.find(m.id);
  const PartitionSet& want = t != target.end() ? t->second : kNone;
  const bool eager = !IsCooperative(Kind());
  if (!eager) {
    // A newer target may give back what the member was asked to revoke: it still holds it, so it
    // keeps it instead of revoking it for nothing.
    for (auto it = m.pending.begin(); it != m.pending.end();) {
      if (want.count(*it) == 0) {
        ++it;
        continue;
      }
      m.assigned.insert(*it);
      it = m.pending.erase(it);
    }
    if (m.pending.empty()) m.revoke_deadline.reset();
  }
  while (m.pending.empty()) {
    if (m.epoch == target_epoch) {
      if (eager && !EagerBarrier()) break;
      for (const TopicPartition& tp : want) {
        if (m.assigned.count(tp) != 0 || holder.count(tp) != 0) continue;
        m.assigned.insert(tp);
        holder[tp] = m.id;
      }
      break;
    }
    PartitionSet revoke;
    for (const TopicPartition& tp : m.assigned) {
      if (eager || want.count(tp) == 0) revoke.insert(tp);
    }
    if (revoke.empty()) {
      m.previous_epoch = m.epoch;
      m.epoch = target_epoch;
      continue;
    }
    for (const TopicPartition& tp : revoke) {
      m.assigned.erase(tp);
      m.pending.insert(tp);
    }
    m.revoke_deadline = now + m.rebalance_timeout;
    // What the member already reported gone needs no further round trip.
    AckRevocations(m, owned);
  }
}

void Group::Impl::ReleaseAll(Member& m) {
  for (const PartitionSet* set : {&m.assigned, &m.pending}) {
    for (const TopicPartition& tp : *set) {
      auto h = holder.find(tp);
      if (h != holder.end() && h->second == m.id) holder.erase(h);
    }
  }
  m.assigned.clear();
  m.pending.clear();
  m.revoke_deadline.reset();
}

HeartbeatResult Group::Impl::Response(const Member& m) const {
  HeartbeatResult r;
  r.member_id = m.id;
  r.member_epoch = m.epoch;
  r.assignment.assign(m.assigned.begin(), m.assigned.end());
  return r;
}

}  // namespace rdmq::group
