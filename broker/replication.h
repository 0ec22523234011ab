// PartitionReplication: the leader's side of one replicated partition at one leader epoch
// (docs/replication.md, "Replication over the fabric"). It puts a cluster::ReplicaSet into the
// partition (which then exposes to readers only what every in-sync replica holds:
// Partition::RaiseHighWatermark), runs a ReplicaFeed per follower (replica_feed.h: the follower's
// window, WRITE, ReplicaCommit) and writes the ISR changes the replica set proposes (a follower
// that lags leaves, one that caught up rejoins) with compare-and-set.
//
// ClusterMember starts one when this broker starts leading a partition whose replication.factor
// is above 1, passes it the cluster's later states of the partition (Update: the ISR as written)
// and destroys it when the leadership ends; destroying it stops the feeds and takes the replica
// set out of the partition.
//
// Threading: Update and CheckIsr are thread-safe (the feeds call CheckIsr); the lock order is
// Partition::mu before none of this class's locks (neither is held while taking the other).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "partition.h"
#include "publisher.h"
#include "rdmq/client/options.h"
#include "rdmq/cluster/agent.h"
#include "rdmq/common/mutex.h"

namespace rdmq::broker::internal {

class ReplicaFeed;

// What a partition's replication needs of the broker.
struct ReplicationContext {
  int32_t self = 0;
  // The login (and TLS settings) toward the followers' brokers; the bootstrap is filled per feed.
  client::ClientOptions client;
  uint64_t fetch_max_bytes = 1 << 20;         // replica.fetch.max.bytes
  uint64_t lag_time_max_ns = 30'000'000'000;  // replica.lag.time.max.ms
  Publisher* publisher = nullptr;
  // The control address of live broker `id` ("" when it is not live).
  std::function<std::string(int32_t id)> address_of;
  // Writes `isr` over `from` with compare-and-set (ClusterAgent::ChangeIsr).
  std::function<Result<cluster::PartitionState>(const cluster::TopicPartition&,
                                                const cluster::PartitionState& from,
                                                std::vector<cluster::BrokerId> isr)>
      change_isr;
};

class PartitionReplication {
 public:
  // Starts replicating `p`, which this broker leads as `replica.state` says; the replica set it
  // puts into the partition replaces any before it (keeping the partition's acks=all waiters).
  PartitionReplication(std::shared_ptr<Partition> p, cluster::TopicPartition tp,
                       const cluster::Replica& replica, const ReplicationContext& ctx);
  ~PartitionReplication();
  PartitionReplication(const PartitionReplication&) = delete;
  PartitionReplication& operator=(const PartitionReplication&) = delete;

  int32_t epoch() const { return epoch_; }
  const Partition& partition() const { return *p_; }
  const std::vector<cluster::BrokerId>& replicas() const { return replicas_; }
  // The cluster's state of the partition now (the same leader epoch): its ISR as written.
  void Update(const cluster::PartitionState& state) EXCLUDES(mu_);
  // Writes the ISR change the replica set proposes, if any; at most every few hundred
  // milliseconds, whoever calls.
  void CheckIsr() EXCLUDES(mu_);

 private:
  const std::shared_ptr<Partition> p_;
  const cluster::TopicPartition tp_;
  const int32_t epoch_;
  const std::vector<cluster::BrokerId> replicas_;
  const ReplicationContext ctx_;
  // The replica set this put into the partition: taken away at the end only if no newer
  // PartitionReplication of the partition replaced it (the acks=all waiters then stay).
  const cluster::ReplicaSet* set_ = nullptr;
  Mutex mu_;  // a leaf
  cluster::PartitionState state_ GUARDED_BY(mu_);
  uint64_t next_check_ns_ GUARDED_BY(mu_) = 0;
  bool checking_ GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<ReplicaFeed>> feeds_;
};

}  // namespace rdmq::broker::internal
