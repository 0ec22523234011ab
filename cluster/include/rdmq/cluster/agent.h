// ClusterAgent: one broker's part in a cluster (docs/replication.md). It registers the broker in
// ZooKeeper (an ephemeral znode with its addresses), campaigns to be the controller, and, while
// it is, elects leaders and trims dead brokers from ISRs (controller.h's Reconcile, written with
// compare-and-set and fenced by the controller epoch). Every broker's agent watches the topics and
// partition states and tells its broker, through AgentListener, which replicas it holds and who
// leads them. Topic administration (create, delete, add partitions) is done by whichever broker
// a client asks, straight in ZooKeeper; the controller then gives the new partitions leaders.
//
//   auto agent = ClusterAgent::Start({.zookeeper = "10.0.0.9:2181", .self = me}, &listener);
//   (*agent)->CreateTopic("orders", config, 6, 3);
//   (*agent)->WaitForLeaders("orders", 10s);
//
// A ZooKeeper session that expires takes the broker out of the cluster: the listener hears
// OnSessionLost (the broker must stop acknowledging anything it led), the agent opens a new
// session, registers again and reports the replicas anew. A connection to ZooKeeper that is lost
// fences the broker the same way at once, before the server can expire the session and another
// broker be elected (a leader cut off from the cluster stops serving on its own); when the
// session answers again, OnReplicas reports the replicas anew.
//
// Threading: thread-safe. The agent runs one thread of its own; the listener is called on it,
// never concurrently, and must not call the agent back synchronously except for Snapshot.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rdmq/cluster/controller.h"
#include "rdmq/cluster/model.h"
#include "rdmq/common/status.h"
#include "rdmq/coord/zk.h"

namespace rdmq::cluster {

struct AgentOptions {
  std::string zookeeper;  // ZooKeeper's connect string: "host:port[,host:port...]"
  std::string root = "/rdmq";
  std::chrono::milliseconds session_timeout{6000};
  // How often the agent reads the cluster's state even without a watch firing (a backstop).
  std::chrono::milliseconds refresh_interval{1000};
  BrokerInfo self;
  bool unclean_leader_election = false;
};

// A partition this broker holds a replica of, as the cluster has it now.
struct Replica {
  uint64_t topic_id = 0;
  int64_t created_ms = 0;
  int32_t partition_count = 0;  // the topic's
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<BrokerId> replicas;
  PartitionState state;  // leader, epoch, ISR; version is the znode's
  bool operator==(const Replica&) const = default;
};
using ReplicaMap = std::map<TopicPartition, Replica>;

// The cluster's users and ACLs as their znodes hold them: JSON text, decoded by the broker
// (metadata::DecodeUser, metadata::DecodeAcls).
struct SecurityRecords {
  std::map<std::string, std::string> users;  // user name -> its znode's data
  std::string acls;                          // "" when no ACL was ever written
  bool operator==(const SecurityRecords&) const = default;
};

class AgentListener {
 public:
  virtual ~AgentListener() = default;
  // The replicas this broker holds, all of them, whenever any changed (made, deleted, a leader
  // elected, the ISR changed).
  virtual void OnReplicas(const ReplicaMap& replicas) = 0;
  // The ZooKeeper session expired or ZooKeeper cannot be reached: whatever this broker led, it
  // may no longer acknowledge (until OnReplicas says again that it leads).
  virtual void OnSessionLost() = 0;
  // The cluster's users and ACLs (security_records.h), as their znodes hold them, whenever any
  // changed (and once at the start).
  virtual void OnSecurity(const SecurityRecords& records) { (void)records; }
};

// The whole cluster as ZooKeeper has it, read fresh.
struct ClusterSnapshot {
  std::map<BrokerId, BrokerInfo> brokers;  // the live ones
  BrokerId controller = kNoLeader;
  int32_t controller_epoch = 0;
  std::map<std::string, TopicAssignment> topics;
  std::map<TopicPartition, PartitionState> states;
  SecurityRecords security;
};

class ClusterAgent {
 public:
  // Connects to ZooKeeper, registers this broker and starts the agent's thread. Fails when
  // ZooKeeper cannot be reached (kUnavailable naming it) or another live broker has this id
  // (kAlreadyExists).
  static Result<std::unique_ptr<ClusterAgent>> Start(const AgentOptions& options, AgentListener* listener);
  virtual ~ClusterAgent() = default;  // leaves the cluster (the session closes)

  // A topic with its replicas spread over the live brokers (kNotEnoughBrokers, kAlreadyExists).
  virtual Result<TopicAssignment> CreateTopic(const std::string& name,
                                              std::vector<std::pair<std::string, std::string>> config,
                                              int32_t partitions, int32_t replication_factor) = 0;
  // Waits until every partition of `name` has a leader (kTimeout naming those without).
  virtual Status WaitForLeaders(const std::string& name, std::chrono::milliseconds timeout) = 0;
  virtual Status DeleteTopic(const std::string& name) = 0;  // kNotFound
  // Replaces the topic's config (kNotFound).
  virtual Result<TopicAssignment> AlterTopic(const std::string& name,
                                             std::vector<std::pair<std::string, std::string>> config) = 0;
  // Grows the topic to `partitions` (kInvalidArgument when not more than now).
  virtual Result<TopicAssignment> AddPartitions(const std::string& name, int32_t partitions) = 0;
  // Moves a partition's replicas to `target` (docs/replication.md, "Reassignment"): the new
  // replicas are fed until they are in sync, then the controller completes the move. Only a
  // reordering (the same brokers): done at once, the first becomes the preferred leader.
  // kNotFound (no such topic), kInvalidArgument (no such partition, another replica count, a
  // broker twice or not registered), kFailedPrecondition (a move of the partition under way).
  virtual Result<TopicAssignment> ReassignPartition(const std::string& name, int32_t partition,
                                                    std::vector<BrokerId> target) = 0;
  virtual Result<ClusterSnapshot> Snapshot() = 0;
  // The cluster as the agent's last round read it (no ZooKeeper round trip; at most a refresh
  // interval old, or as old as the last change a watch reported).
  virtual ClusterSnapshot Cached() const = 0;
  // The leader's ISR change: `from` must still be the state (kStaleState otherwise) and this
  // broker its leader (kNotLeader).
  virtual Result<PartitionState> ChangeIsr(const TopicPartition& tp, const PartitionState& from,
                                           std::vector<BrokerId> isr) = 0;
  // A fresh topic id, unique in the cluster.
  virtual Result<uint64_t> NextTopicId() = 0;
  // `count` producer ids for this broker to hand out: [first, first + count).
  virtual Result<int64_t> ProducerIdBlock(int64_t count) = 0;

  // The current ZooKeeper session (nullptr while there is none) and the cluster's root znode,
  // for what is kept in ZooKeeper beside the cluster's own records (group_offsets.h).
  virtual std::shared_ptr<coord::ZkSession> Session() const = 0;
  virtual const std::string& root() const = 0;

  virtual BrokerId id() const = 0;
  virtual bool is_controller() const = 0;
  // Wakes the agent's thread to read the cluster now.
  virtual void Refresh() = 0;
};

}  // namespace rdmq::cluster
