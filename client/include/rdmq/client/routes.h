// Routes: which broker a client in a cluster reaches each partition through (docs/replication.md,
// "The broker in a cluster"). Sans-I/O: it is told the cluster's live brokers (DescribeCluster) and
// each topic's partitions (DescribeTopic) and answers where a partition goes and which partition a
// record without key or partition goes to.
//
// A partition goes to its leader; with no leader (its broker is down, replication.factor 1) to its
// first replica, the broker that leads it again when it returns. Keyless records stick to one
// partition for `batch.size` bytes, then move to another picked at random, as the single-broker
// producer's sticky partitioner moves on once a batch is sealed; partitions without a leader are
// passed over while any has one (a keyless record can go anywhere).
//
// Threading: thread-safe (one mutex; the cluster producer's Send takes it once per record).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"

namespace rdmq::client {

struct BrokerAddress {
  int32_t id = 0;
  std::string control;  // the RPC control address a producer bootstraps from
};

struct PartitionRoute {
  int32_t leader = -1;            // -1: none live
  std::vector<int32_t> replicas;  // in preference order

  // Where it goes: its leader, else its first replica; -1 with neither.
  int32_t destination() const { return leader >= 0 ? leader : replicas.empty() ? -1 : replicas.front(); }
  bool operator==(const PartitionRoute&) const = default;
};

class Routes {
 public:
  explicit Routes(uint32_t batch_size) : batch_size_(batch_size) {}

  void SetBrokers(std::vector<BrokerAddress> live) EXCLUDES(mu_);
  void SetTopic(const std::string& topic, std::vector<PartitionRoute> partitions) EXCLUDES(mu_);
  // The live brokers' ids, ascending.
  std::vector<int32_t> Brokers() const EXCLUDES(mu_);
  // A known topic's partitions as last set; nullopt when the topic was never described.
  std::optional<std::vector<PartitionRoute>> Partitions(std::string_view topic) const EXCLUDES(mu_);
  // Partitions of a known topic; nullopt when the topic was never described.
  std::optional<int32_t> PartitionCount(std::string_view topic) const EXCLUDES(mu_);

  // The broker that takes `partition` of `topic`: its leader, else its first replica.
  // kNotFound when the topic is not known here; kUnknownPartition for a partition it lacks.
  Result<int32_t> BrokerOf(std::string_view topic, int32_t partition) const EXCLUDES(mu_);
  // The control address of a live broker; kUnavailable naming it when it is not live.
  Result<std::string> AddressOf(int32_t broker) const EXCLUDES(mu_);

  // Where a producer's record goes, in one look (once per record): `partition` when it is >= 0;
  // else, with a key, `key_hash` (non-negative) modulo the partition count; else the sticky
  // partition, counting the record's `bytes` (`random`: a fresh random number, used when the
  // sticky partition moves on). Errors as BrokerOf's.
  struct Target {
    int32_t partition = 0;
    int32_t broker = 0;
  };
  Result<Target> Resolve(std::string_view topic, int32_t partition, std::optional<uint32_t> key_hash,
                         size_t bytes, uint32_t random) EXCLUDES(mu_);

 private:
  struct TopicRoutes {
    std::vector<PartitionRoute> partitions;
    int32_t sticky = -1;
    uint64_t sticky_bytes = 0;
  };
  Result<int32_t> BrokerOfLocked(std::string_view topic, const std::vector<PartitionRoute>& parts,
                                 int32_t partition) const REQUIRES(mu_);
  int32_t Sticky(TopicRoutes& t, size_t bytes, uint32_t random) const REQUIRES(mu_);

  const uint32_t batch_size_;
  mutable Mutex mu_;
  std::map<int32_t, std::string> brokers_ GUARDED_BY(mu_);
  std::map<std::string, TopicRoutes, std::less<>> topics_ GUARDED_BY(mu_);
};

}  // namespace rdmq::client
