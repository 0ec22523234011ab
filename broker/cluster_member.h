// ClusterMember: the broker's side of a cluster (cluster.zookeeper.connect; docs/replication.md).
// It runs the broker's ClusterAgent and keeps the broker's partitions to what the agent reports:
// the replicas this broker holds are opened (and their topics mirrored in the local metadata
// store, id and config as ZooKeeper has them), those it no longer holds are closed and their
// files removed, and each is served to clients only while this broker leads it and its ZooKeeper
// session holds (Partition::serving; a lost leadership ends the partition's leases). It also
// serves the cluster's side of topic administration, the cluster's views (DescribeCluster,
// DescribeTopic's leadership, the Kafka listener's Metadata and coordinators) and producer ids,
// handed to the broker in blocks.
//
// A partition's leader stamps its leader epoch on what it takes and, where the partition has
// followers, forwards its log to them (PartitionReplication); a follower's replica takes its
// leader's writes (ReplicaHandlers), and a newer epoch ends the old leader's replica lease.
// acks=all waits for the in-sync replicas on the Kafka listener (kafka/produce.cc); rdmq's own
// producers are still acknowledged at the leader's commit.
//
// Threading: thread-safe. OnReplicas and OnSessionLost run on the agent's thread, one at a time
// (sync_mu_); the administration and views may run on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "group_coordinator.h"
#include "publisher.h"
#include "rdmq/broker/config.h"
#include "rdmq/cluster/agent.h"
#include "rdmq/common/mutex.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/messages.h"
#include "replication.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

// A topic as the cluster has it: its info and each partition's leadership.
struct ClusterTopic {
  metadata::TopicInfo info;
  std::vector<std::vector<int32_t>> replicas;   // [partition]
  std::vector<cluster::PartitionState> states;  // [partition]; leader -1 until elected
};

class ClusterMember final : public cluster::AgentListener {
 public:
  ClusterMember(const BrokerConfig& cfg, metadata::MetadataStore& meta, TopicTable& topics,
                GroupCoordinator& groups, Publisher& publisher)
      : cfg_(cfg), meta_(meta), topics_(topics), groups_(groups), publisher_(publisher) {}

  // Joins the cluster as `self` and waits (up to the session timeout) until the replicas this
  // broker holds are open. kUnavailable when ZooKeeper cannot be reached, kAlreadyExists when a
  // live broker has this broker.id.
  Status Start(const cluster::BrokerInfo& self);
  // Leaves the cluster (its partitions get other leaders at once, where they have any).
  void Stop();

  // Topic administration, in ZooKeeper.
  Result<metadata::TopicInfo> CreateTopic(const std::string& name, const metadata::TopicConfig& config);
  Status DeleteTopic(const std::string& name);
  Result<metadata::TopicInfo> AlterTopic(const std::string& name, const metadata::TopicConfig& config);
  // A follower's replica whose log ends below its leader's log start (retention deleted what it
  // lacks): the log is discarded and the replica opened again, empty, starting at `start`, the
  // leader's log start (docs/replication.md, "A follower behind the leader's log start").
  // kNotLeader when this broker holds no replica of it, kInvalidArgument when it leads it or its
  // log reaches `start`.
  Status RestartReplica(const std::string& topic, PartitionId index, Offset start) EXCLUDES(sync_mu_);
  // Starts moving a partition's replicas to `replicas` (cluster::ClusterAgent::ReassignPartition);
  // the controller completes the move once the new replicas are in sync.
  Status ReassignPartition(const std::string& name, int32_t partition, const std::vector<int32_t>& replicas);
  std::vector<metadata::TopicInfo> ListTopics() const;                  // read fresh from ZooKeeper
  std::vector<metadata::TopicInfo> CachedTopics() const;                // as the agent last read them
  std::optional<ClusterTopic> GetTopic(const std::string& name) const;  // read fresh
  static std::optional<ClusterTopic> TopicIn(const cluster::ClusterSnapshot& view, const std::string& name);
  protocol::DescribeClusterResponse Describe() const;
  Result<ProducerId> NextProducerId() EXCLUDES(ids_mu_);
  // The broker that coordinates `group`, for Kafka clients and rdmq's own alike: one of the live
  // brokers, chosen by the group's name (a stable hash over their ids), among those with a Kafka
  // listener when any has one. -1 when no broker is live. Each broker computes it from its own
  // view of the live brokers, so while a broker joins or leaves two may briefly disagree.
  int32_t CoordinatorOf(const std::string& group) const;
  cluster::ClusterSnapshot View() const {
    auto a = Agent();
    return a ? a->Cached() : cluster::ClusterSnapshot{};
  }
  int32_t id() const { return static_cast<int32_t>(cfg_.broker_id); }

  // Users and ACLs (cluster_security.cc): written to ZooKeeper (cluster/security_records.h), then
  // mirrored into this broker's metadata store at once; every broker mirrors them when its agent
  // sees them change (OnSecurity), the cluster's copy winning over anything local. Errors as the
  // metadata store's (kBadUser, kUserExists, kNoSuchUser, kBadAcl), or the cluster's.
  Status CreateUser(const metadata::UserInfo& user) EXCLUDES(security_mu_);
  Status UpdateUser(const metadata::UserInfo& user) EXCLUDES(security_mu_);
  Status DeleteUser(const std::string& name) EXCLUDES(security_mu_);
  // Adds (or removes) the bindings in one change of the cluster's list; how many changed.
  Result<uint32_t> ChangeAcls(const std::vector<metadata::AclBinding>& bindings, bool add)
      EXCLUDES(security_mu_);
  // Called after a mirror changed this broker's users or ACLs: the users deleted, and whether
  // the ACLs changed. Set before Start.
  void SetSecurityListener(std::function<void(const std::vector<std::string>&, bool)> listener) {
    security_listener_ = std::move(listener);
  }
  // The agent, once Start made it (null before, and after Stop).
  std::shared_ptr<cluster::ClusterAgent> Agent() const EXCLUDES(agent_mu_) {
    MutexLock lock(agent_mu_);
    return agent_;
  }
  // `f(session, root)` over the cluster's ZooKeeper session (the records kept beside the
  // cluster's own: offsets, users, ACLs); kUnavailable while there is none.
  template <class F>
  Status WithZooKeeper(F&& f) const {
    const auto agent = Agent();
    const auto zk = agent ? agent->Session() : nullptr;
    if (!zk) return Status(Errc::kUnavailable, "not connected to the cluster's ZooKeeper");
    return f(*zk, agent->root());
  }

 private:
  void OnReplicas(const cluster::ReplicaMap& replicas) override EXCLUDES(sync_mu_);
  void OnSessionLost() override EXCLUDES(sync_mu_);
  void OnSecurity(const cluster::SecurityRecords& records) override EXCLUDES(security_mu_);
  // Closes (and removes the files of) the replicas this broker no longer holds.
  void DropUnheld(const cluster::ReplicaMap& replicas) REQUIRES(sync_mu_);
  // Opens the replicas it holds and sets their leadership.
  void OpenHeld(const cluster::ReplicaMap& replicas) REQUIRES(sync_mu_);
  void SetServing(Partition& p, bool serving, int32_t leader, int32_t epoch);
  // Stops replicating the partitions this broker no longer leads at the epoch it replicates.
  void StopReplicating(const cluster::ReplicaMap& replicas) REQUIRES(sync_mu_);
  // Starts (or updates) replicating `p` when this broker leads it and it has followers.
  void Replicate(const cluster::TopicPartition& tp, const cluster::Replica& r,
                 const std::shared_ptr<Partition>& p) REQUIRES(sync_mu_);

  const BrokerConfig& cfg_;
  metadata::MetadataStore& meta_;
  TopicTable& topics_;
  GroupCoordinator& groups_;
  Publisher& publisher_;
  ReplicationContext replication_ctx_;  // set by Start
  mutable Mutex security_mu_;           // the mirror and this broker's own writes, one at a time
  std::function<void(const std::vector<std::string>&, bool)> security_listener_;
  mutable Mutex agent_mu_;  // a leaf
  std::shared_ptr<cluster::ClusterAgent> agent_ GUARDED_BY(agent_mu_);

  Mutex sync_mu_;
  CondVar synced_cv_;
  bool synced_ GUARDED_BY(sync_mu_) = false;  // the first OnReplicas was applied
  // The replicated partitions this broker leads, each forwarded to its followers.
  std::map<cluster::TopicPartition, std::unique_ptr<PartitionReplication>> replicating_ GUARDED_BY(sync_mu_);

  Mutex ids_mu_;  // a leaf
  int64_t next_id_ GUARDED_BY(ids_mu_) = 0;
  int64_t id_limit_ GUARDED_BY(ids_mu_) = 0;
};

// A topic's config as ZooKeeper holds it (every key, as text) and back.
std::vector<std::pair<std::string, std::string>> ConfigToEntries(const metadata::TopicConfig& c);
Result<metadata::TopicConfig> ConfigFromEntries(
    const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace rdmq::broker::internal
