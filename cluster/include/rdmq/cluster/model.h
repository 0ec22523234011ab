// What a cluster of rdmq brokers agrees on, as ZooKeeper holds it (docs/replication.md,
// "ZooKeeper layout"): the live brokers, each topic's replica assignment, and each partition's
// state (leader, leader epoch, in-sync replicas). Values and their JSON; the paths are in
// layout.h.
//
// Threading: values, and pure functions over them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"

#define RDMQ_CLUSTER_ERRORS(X)                                                                  \
  X(kBadZnode, kCorruption, "a znode's data is not what rdmq writes there")                     \
  X(kNotEnoughBrokers, kFailedPrecondition, "fewer live brokers than the replication factor")   \
  X(kNotController, kFailedPrecondition, "this broker is not the controller (or no longer is)") \
  X(kStaleState, kFailedPrecondition, "the partition state changed meanwhile (a lost race)")    \
  X(kNoLeader, kUnavailable, "the partition has no leader (no in-sync replica is alive)")       \
  X(kNotLeader, kFailedPrecondition, "this broker does not lead the partition")
RDMQ_DEFINE_ERRORS(rdmq::cluster, ClusterErrc, "cluster", RDMQ_CLUSTER_ERRORS)

namespace rdmq::cluster {

using BrokerId = int32_t;
inline constexpr BrokerId kNoLeader = -1;

// A live broker, as it registers itself: where its clients and its peers reach it.
struct BrokerInfo {
  BrokerId id = 0;
  std::string control;  // the RPC control address ("tcp:10.0.0.1:9192", "unix:/...", "verbs:...")
  std::string data;     // the data (one-sided) address
  std::string kafka;    // the Kafka listener's advertised host:port ("" when off)
  std::string fabric;   // shm | tcp | verbs
  bool operator==(const BrokerInfo&) const = default;
};

// A topic as created: its id, config (every key, as strings), and for each partition its
// replicas in preference order (the first is the preferred leader). A partition being moved to
// other brokers (`rdmq partition reassign`) has its target in `reassigning`; until the move
// completes its replicas are the target's followed by the old ones not in it, so that the new
// replicas are fed and can join the ISR (docs/replication.md, "Reassignment").
struct TopicAssignment {
  std::string name;
  uint64_t id = 0;
  int64_t created_ms = 0;
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<std::vector<BrokerId>> replicas;           // [partition] -> replica broker ids
  std::map<int32_t, std::vector<BrokerId>> reassigning;  // partition -> its target replicas
  bool operator==(const TopicAssignment&) const = default;
};

// One partition's leadership. Changed only by compare-and-set on its znode's version: the
// controller elects leaders (bumping leader_epoch), the leader shrinks and expands the ISR.
struct PartitionState {
  BrokerId leader = kNoLeader;
  int32_t leader_epoch = 0;
  std::vector<BrokerId> isr;     // in-sync replicas, the leader first when there is one
  int32_t controller_epoch = 0;  // of the controller that last elected a leader
  int32_t version = -1;          // the znode's version (not in the JSON)
  bool InIsr(BrokerId b) const;
  bool operator==(const PartitionState&) const = default;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
};

// JSON on the znodes (docs/replication.md specifies each field). Decoding refuses anything else
// with kBadZnode naming `what` (the znode's path) and the fault.
std::string EncodeBroker(const BrokerInfo& b);
Result<BrokerInfo> DecodeBroker(std::string_view json, std::string_view what);
std::string EncodeTopic(const TopicAssignment& t);
Result<TopicAssignment> DecodeTopic(std::string_view json, std::string_view name, std::string_view what);
std::string EncodeState(const PartitionState& s);
Result<PartitionState> DecodeState(std::string_view json, std::string_view what);
// A name (a group id, a user name) as one znode's name: every byte outside [A-Za-z0-9_-] as %XX
// (upper-case hex), so '/', '.' and ".." are safe; and back (kBadZnode for a name that is no
// such escape).
std::string EscapeName(std::string_view name);
Result<std::string> UnescapeName(std::string_view znode);

std::string EncodeController(BrokerId id, int32_t epoch);
Result<std::pair<BrokerId, int32_t>> DecodeController(std::string_view json, std::string_view what);

}  // namespace rdmq::cluster
