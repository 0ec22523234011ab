#include "rdmq/cluster/controller.h"

#include <algorithm>

namespace rdmq::cluster {

Result<std::vector<std::vector<BrokerId>>> AssignReplicas(const std::vector<BrokerId>& brokers,
                                                          int32_t partitions, int32_t replication_factor,
                                                          uint32_t start) {
  if (partitions < 1 || replication_factor < 1) {
    return Status(Errc::kInvalidArgument, "partitions and replication factor must be at least 1");
  }
  std::vector<BrokerId> sorted = brokers;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const auto n = static_cast<int32_t>(sorted.size());
  if (n < replication_factor) {
    return Status(ClusterErrc::kNotEnoughBrokers, "replication factor " + std::to_string(replication_factor) +
                                                      " needs as many live brokers; " + std::to_string(n) +
                                                      " are registered");
  }
  std::vector<std::vector<BrokerId>> out(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    for (int32_t r = 0; r < replication_factor; ++r) {
      out[static_cast<size_t>(p)].push_back(
          sorted[(start + static_cast<uint32_t>(p + r)) % static_cast<uint32_t>(n)]);
    }
  }
  return out;
}

namespace {

std::vector<BrokerId> LiveOf(const std::vector<BrokerId>& v, const std::set<BrokerId>& live) {
  std::vector<BrokerId> out;
  for (BrokerId b : v) {
    if (live.count(b) != 0) out.push_back(b);
  }
  return out;
}

// `isr` in replica order with `leader` first.
std::vector<BrokerId> LeaderFirst(BrokerId leader, const std::vector<BrokerId>& replicas,
                                  const std::vector<BrokerId>& isr) {
  std::vector<BrokerId> out{leader};
  for (BrokerId b : replicas) {
    if (b != leader && std::find(isr.begin(), isr.end(), b) != isr.end()) out.push_back(b);
  }
  return out;
}

}  // namespace

std::vector<StateChange> Reconcile(const ClusterView& view, const std::set<BrokerId>& live,
                                   const ReconcileOptions& options) {
  std::vector<StateChange> out;
  for (const auto& [name, topic] : view.topics) {
    for (int32_t p = 0; p < static_cast<int32_t>(topic.replicas.size()); ++p) {
      const std::vector<BrokerId>& replicas = topic.replicas[static_cast<size_t>(p)];
      const TopicPartition tp{name, p};
      auto found = view.states.find(tp);
      StateChange c;
      c.tp = tp;
      if (found == view.states.end()) {
        c.create = true;
        const std::vector<BrokerId> up = LiveOf(replicas, live);
        c.next.leader = up.empty() ? kNoLeader : up.front();
        c.next.isr = up.empty() ? replicas : up;  // nobody wrote anything: every replica is in sync
        c.next.controller_epoch = options.controller_epoch;
        c.why = up.empty() ? "new partition, no replica alive" : "new partition";
        out.push_back(std::move(c));
        continue;
      }
      const PartitionState& s = found->second;
      c.expected_version = s.version;
      c.next = s;
      const bool leader_live = s.leader != kNoLeader && live.count(s.leader) != 0;
      if (leader_live) {
        const std::vector<BrokerId> isr = LiveOf(s.isr, live);
        if (isr.size() == s.isr.size()) continue;  // right as it is
        c.next.isr = LeaderFirst(s.leader, replicas, isr);
        c.why = "in-sync replicas gone";
        out.push_back(std::move(c));
        continue;
      }
      // No live leader: elect the first live ISR member in replica order.
      BrokerId elected = kNoLeader;
      for (BrokerId b : replicas) {
        if (live.count(b) != 0 && s.InIsr(b)) {
          elected = b;
          break;
        }
      }
      bool unclean = false;
      if (elected == kNoLeader && options.unclean_leader_election) {
        const std::vector<BrokerId> up = LiveOf(replicas, live);
        if (!up.empty()) {
          elected = up.front();
          unclean = true;
        }
      }
      if (elected == kNoLeader) {
        if (s.leader == kNoLeader) continue;  // offline already
        c.next.leader = kNoLeader;
        c.next.leader_epoch = s.leader_epoch + 1;
        c.next.controller_epoch = options.controller_epoch;
        c.why = "leader " + std::to_string(s.leader) + " is gone and no in-sync replica is alive";
        out.push_back(std::move(c));
        continue;
      }
      c.next.leader = elected;
      c.next.leader_epoch = s.leader_epoch + 1;
      c.next.controller_epoch = options.controller_epoch;
      c.next.isr =
          unclean ? std::vector<BrokerId>{elected} : LeaderFirst(elected, replicas, LiveOf(s.isr, live));
      c.why = s.leader == kNoLeader ? "an in-sync replica is back"
                                    : "leader " + std::to_string(s.leader) + " is gone";
      if (unclean) c.why += " (unclean election: records may be lost)";
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<BrokerId> ReplicasWhileMoving(const std::vector<BrokerId>& now,
                                          const std::vector<BrokerId>& target) {
  std::vector<BrokerId> out = target;
  for (BrokerId b : now) {
    if (std::find(target.begin(), target.end(), b) == target.end()) out.push_back(b);
  }
  return out;
}

std::optional<PartitionState> FinishReassignment(const std::vector<BrokerId>& target, const PartitionState& s,
                                                 const std::set<BrokerId>& live, int32_t controller_epoch) {
  if (target.empty() || s.leader == kNoLeader || live.count(s.leader) == 0) return std::nullopt;
  for (BrokerId b : target) {
    if (live.count(b) == 0 || !s.InIsr(b)) return std::nullopt;
  }
  const bool keep = std::find(target.begin(), target.end(), s.leader) != target.end();
  PartitionState next = s;
  next.leader = keep ? s.leader : target.front();
  next.leader_epoch = s.leader_epoch + 1;
  next.controller_epoch = controller_epoch;
  next.isr = LeaderFirst(next.leader, target, target);
  return next;
}

}  // namespace rdmq::cluster
