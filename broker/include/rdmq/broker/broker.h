// Broker: rdmq's daemon on one node. It is the metadata service (topics, producer ids, leases,
// partition locations, served over the RPC layer on the control listener) and the storage-node
// agent (the partition logs under <data.dir>/topics/<topic>-<partition>/, registered as fabric
// regions on the data listener, with the data-plane commit path, acks, offset assignment for
// shared producers, reservation expiry, rolls, retention, checkpoints and consumer wake-ups).
// docs/protocol.md specifies what clients see; docs/architecture.md its threads.
//
//   BrokerConfig cfg;                      // broker/config.h
//   cfg.data_dir = "./rdmq-data";
//   auto b = Broker::Start(cfg);           // recovers every partition, then serves
//   ...
//   (*b)->Shutdown();                      // graceful: stop accepting, finish commits, checkpoint
//
// Ownership and lifetime: Start returns the running broker; destroying it shuts it down.
// Threading: Shutdown, addresses and stats may be called from any thread. The broker runs its
// own threads (RPC server, data acceptor, commit poller, housekeeping).
// Errors from Start: the config's (kInvalidArgument naming the key), the metadata store's
// (kCorruptLog/kCorruptCheckpoint: nothing is changed), the storage engine's for a partition
// directory that is not a valid log (naming the file), fabric errors for a listener that cannot
// be opened (address in use, no RDMA device).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rdmq/broker/config.h"
#include "rdmq/common/status.h"

namespace rdmq::broker {

class Broker {
 public:
  struct Stats {
    uint64_t commits = 0;        // ranges committed (data plane and Commit RPC)
    uint64_t commit_errors = 0;  // commits refused (the lease then ended)
    uint64_t acks = 0;           // ack blocks written
    uint64_t leases_granted = 0;
    uint64_t leases_expired = 0;
    uint64_t leases_idle = 0;    // released after lease.idle.ms without a commit
    uint64_t notifications = 0;  // Watch notifications sent
    uint64_t duplicates = 0;     // idempotent batches dropped as duplicates
    // The commit poller: sleeps that ended (a completion or the 10 ms slice), and spin phases
    // begun (only after completions: an idle broker has none).
    uint64_t poller_wakeups = 0;
    uint64_t poller_spins = 0;
    // Group commit: several ranges of one lease taken in one poll and committed as one, and
    // such groups that were refused and then committed range by range (up to the refused one).
    uint64_t commit_groups = 0;
    uint64_t commit_groups_split = 0;
    // Next segments made ahead of their roll (log.segment.preallocate), and attempts that failed.
    uint64_t spare_segments = 0;
    uint64_t spare_segments_failed = 0;
    uint64_t sessions = 0;    // clients connected now
    uint64_t partitions = 0;  // partitions open now
  };

  // Validates the config, recovers the metadata and every partition log, opens the listeners
  // and starts serving.
  static Result<std::unique_ptr<Broker>> Start(const BrokerConfig& config);
  virtual ~Broker() = default;

  // Graceful shutdown: stops accepting connections and RPCs, finishes the commits already
  // delivered, ends every lease, checkpoints and closes every log and the metadata store.
  // Idempotent; the destructor calls it.
  virtual Status Shutdown() = 0;
  // The listeners' fabric addresses ("unix:/path", "tcp:host:port", "verbs:host:port").
  virtual std::string control_address() const = 0;
  virtual std::string data_address() const = 0;
  // The Kafka listener's host:port ("" when listen.kafka=off).
  virtual std::string kafka_address() const = 0;
  // The HTTP endpoint's host:port ("" when listen.http=off).
  virtual std::string http_address() const = 0;
  virtual Stats stats() const = 0;
};

}  // namespace rdmq::broker
