// The controller's decisions as pure functions (docs/replication.md, "The controller"): where a
// new topic's replicas go, and which partition states must change given the live brokers. The
// agent (agent.h) reads the view from ZooKeeper, asks these, and writes the answers back with
// compare-and-set; tests feed them views directly.
//
// Threading: pure functions over values.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rdmq/cluster/model.h"

namespace rdmq::cluster {

// Replicas for `partitions` partitions on `brokers` (live, any order), `replication_factor` each:
// partition p's replicas are the sorted brokers from position start+p on, so leaders (the first
// replica) and followers spread evenly. kNotEnoughBrokers when there are fewer brokers than the
// factor; kInvalidArgument for a factor or count below 1.
Result<std::vector<std::vector<BrokerId>>> AssignReplicas(const std::vector<BrokerId>& brokers,
                                                          int32_t partitions, int32_t replication_factor,
                                                          uint32_t start);

// Everything the controller looks at.
struct ClusterView {
  std::map<std::string, TopicAssignment> topics;
  std::map<TopicPartition, PartitionState> states;  // a partition without one is new
};

// One partition state to write: created (no znode yet) or replaced if its version is still
// `expected_version`.
struct StateChange {
  TopicPartition tp;
  PartitionState next;
  bool create = false;
  int32_t expected_version = -1;
  std::string why;  // for the log: "new partition", "leader 2 is gone", ...
};

struct ReconcileOptions {
  int32_t controller_epoch = 0;
  // Elect a live replica that is not in sync when no in-sync one is alive (may lose
  // acknowledged records; off by default, as in Kafka).
  bool unclean_leader_election = false;
};

// What must change so that every partition with a live in-sync replica has a live leader, and
// no ISR names a broker that is gone:
//   - a new partition: the first live replica leads, every live replica is in sync, epoch 0;
//   - a leader that is gone: the first live ISR member (in replica order) leads, the epoch goes
//     up, the ISR keeps its live members; no live ISR member: no leader (leader -1, epoch up, the
//     ISR kept as it was, so that its members can lead when they return), unless unclean;
//   - a partition without a leader whose ISR member returned: it leads, the epoch goes up;
//   - a live leader whose ISR names brokers that are gone: they leave the ISR (same epoch).
// Partitions whose state is right are left alone; the result is sorted by partition.
std::vector<StateChange> Reconcile(const ClusterView& view, const std::set<BrokerId>& live,
                                   const ReconcileOptions& options);

// The replicas a partition moving from `now` to `target` has meanwhile: the target's, then the
// old ones not in it (the preferred leader is the target's first).
std::vector<BrokerId> ReplicasWhileMoving(const std::vector<BrokerId>& now,
                                          const std::vector<BrokerId>& target);

// A partition being reassigned to `target`: once its leader is live and every target replica is
// live and in the ISR, the state that completes the move (its replicas become `target`): the
// leader kept if it is in the target, else the first target replica leads; the ISR cut to the
// target; the leader epoch up (the old replicas' leases fenced, the leader's followers anew).
// Nothing while the move must wait.
std::optional<PartitionState> FinishReassignment(const std::vector<BrokerId>& target, const PartitionState& s,
                                                 const std::set<BrokerId>& live, int32_t controller_epoch);

}  // namespace rdmq::cluster
