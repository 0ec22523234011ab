// Internals of the broker (broker.h): the service state shared by the RPC handlers
// (service.cc), the storage-node agent (agent.cc) and the daemon's lifecycle (broker.cc).
//
// Lock order (outer to inner): topics_mu_ → Partition::mu → leases_mu_ / sessions_mu_ →
// Session::mu → the PartitionLog's own mutex. Nothing slow (file creation, fsync) runs under
// topics_mu_, leases_mu_ or sessions_mu_.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rdmq/broker/broker.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/server.h"
#include "rdmq/storage/log.h"

namespace rdmq::broker::internal {

struct Partition;

// A client: its RPC connection handle (client_id) and its data endpoint.
struct Session {
  uint64_t client_id = 0;
  std::string name;
  std::mutex mu;                         // guards ep (posting), leases, recv accounting
  std::unique_ptr<fabric::Endpoint> ep;  // bound by the data-endpoint handshake
  uint64_t ep_id = 0;
  uint32_t recv_owed = 0;     // receives consumed and not yet reposted
  std::set<uint64_t> leases;  // lease ids
  bool closed = false;
};

// A producer's right to append to a partition.
struct Lease {
  uint64_t id = 0;
  uint32_t index = 0;  // lease slot | reuse << 24 (protocol::LeaseSlot)
  protocol::ProduceMode mode = protocol::ProduceMode::kExclusive;
  std::shared_ptr<Session> session;
  std::shared_ptr<Partition> partition;
  int64_t producer_id = -1;
  int16_t producer_epoch = 0;
  // Everything below is guarded by partition->mu.
  std::unique_ptr<fabric::RemoteRegion> ack;  // the producer's ack block
  std::unique_ptr<fabric::Grant> grant;       // write access to the segment (window)
  int64_t segment_base = 0;                   // segment the grant covers
  uint64_t grant_position = 0;                // data-area position the window starts at
  uint64_t deadline_ns = 0;
  uint64_t ack_generation = 0;
  int64_t acked_segment = 0;      // segment of acked_position
  uint64_t acked_position = 0;    // end of the lease's last committed range
  int64_t acked_next_offset = 0;  // the offset after that range
  std::byte* ack_buf = nullptr;   // 64 bytes in the broker's staging region
  bool ended = false;
};

// A read-write MAP_SHARED mapping of a file the log maps read-only (a sealed segment after a
// restart), made only to register it on verbs: Linux before 6.2 pins every MR's pages for
// writing (FOLL_FORCE), which a read-only shared mapping refuses. Nothing writes through it.
class WritableAlias {
 public:
  static Result<std::unique_ptr<WritableAlias>> Map(const std::string& path, size_t size);
  ~WritableAlias();
  std::byte* data() const { return data_; }

 private:
  WritableAlias(std::byte* d, size_t n) : data_(d), size_(n) {}
  std::byte* data_;
  size_t size_;
};

struct SegmentReg {
  storage::SegmentInfo info;               // its pin keeps the mapping alive
  std::unique_ptr<WritableAlias> alias;    // verbs: what is registered for a read-only mapping
  std::unique_ptr<fabric::Region> region;  // the whole file: read, write, atomics
  std::string read_descriptor;             // encoded read-only descriptor for consumers
};

// Where consumers (and shared producers reading back offsets) find a segment: its read-only
// descriptor, the data area after the 4 KiB header, the reservation word.
protocol::SegmentLocation ReadLocation(int64_t base, const SegmentReg& reg);

// kUnknownTopic for a partition whose topic was deleted while a request was on its way.
Status TopicDeleted(const std::string& topic);

// Idempotent producer state per partition (Kafka's: epoch and last sequence).
struct ProducerState {
  int16_t epoch = 0;
  int32_t last_sequence = -1;  // of the last committed (or, shared, accepted) record
};

// A shared range accepted by Commit whose offsets are not assigned yet.
struct PendingRange {
  uint64_t lease_id = 0;
  int64_t producer_id = -1;
  int32_t first_sequence = -1;
};

struct Watch {
  std::weak_ptr<Session> session;
  uint64_t generation = 0;
};

struct Partition {
  metadata::TopicInfo topic;  // as of open (id, name, config)
  int32_t index = 0;
  std::string dir;

  std::mutex mu;
  std::unique_ptr<storage::PartitionLog> log;
  std::map<int64_t, SegmentReg> segments;  // by base offset
  // Segments retention deleted, kept registered (and mapped) for a grace period: a consumer
  // that read the slot just before the deletion may still READ them (on verbs a READ with a
  // deregistered key would break its connection). Unchanged bytes; the slot says they are gone.
  std::vector<std::pair<uint64_t, SegmentReg>> retired;  // (drop after, registration)
  storage::SlotInfo slot;
  std::unique_ptr<fabric::Region> slot_region;
  std::string slot_descriptor;  // encoded read-only
  // The active segment, cached: base, data area, capacity, committed end.
  int64_t active_base = 0;
  std::byte* active_data = nullptr;
  uint64_t capacity = 0;
  uint64_t committed = 0;
  int64_t high_watermark = 0;

  std::shared_ptr<Lease> exclusive;
  std::map<uint64_t, std::shared_ptr<Lease>> shared;  // by lease id
  uint64_t shared_until_ns = 0;  // shared leases existed recently: keep expiring reservations
  std::unordered_map<int64_t, ProducerState> producers;
  std::map<std::pair<int64_t, uint64_t>, PendingRange> pending;  // (segment, position)
  std::vector<Watch> watches;
  bool dirty = false;    // commits since the last periodic checkpoint
  bool deleted = false;  // the topic was deleted; the log is closed
};

struct Topic {
  metadata::TopicInfo info;
  std::vector<std::shared_ptr<Partition>> partitions;
};

class BrokerImpl final : public Broker {
 public:
  explicit BrokerImpl(BrokerConfig config);
  ~BrokerImpl() override;

  Status Init();
  Status Shutdown() override;
  std::string control_address() const override;
  std::string data_address() const override;
  Stats stats() const override;

  // --- service.cc: RPC handlers ---
  Status RegisterHandlers();
  void HandleHello(const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleCreateTopic(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleDeleteTopic(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleDescribeTopic(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleListTopics(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleAlterTopic(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleInitProducerId(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleOpenProduce(const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleRenewLease(const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleReleaseLease(const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleCommit(const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleOpenConsume(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleGetSegment(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleListOffsets(std::span<const std::byte>, rpc::ResponseBuffer&);
  void HandleWatch(const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&);

  // --- agent.cc: partitions, leases, the data plane ---
  Result<std::shared_ptr<Partition>> OpenPartition(const metadata::TopicInfo& topic, int32_t index);
  // Registers new segments and forgets deleted ones after the log changed (Partition::mu held).
  Status SyncSegments(Partition& p);
  void RefreshActive(Partition& p);
  void ClosePartition(Partition& p, bool remove_files);
  Result<std::shared_ptr<Partition>> FindPartition(const std::string& topic, int32_t partition);
  // FindPartition, then Partition::mu taken and a deleted topic refused: the start of every
  // request handler that reads or changes a partition named by topic and index.
  struct LockedPartition {
    std::shared_ptr<Partition> partition;
    std::unique_lock<std::mutex> lock;
  };
  Result<LockedPartition> LockPartition(const std::string& topic, int32_t partition);
  Result<std::shared_ptr<Lease>> FindLease(uint64_t lease_id, uint64_t client_id);
  // Fills `out` with the lease's location (Partition::mu held).
  Status DescribeLease(Partition& p, Lease& l, protocol::LeaseResponse* out);
  // Grants the lease write access to the active segment (Partition::mu held).
  Status GrantSegment(Partition& p, Lease& l);
  // Ends a lease: revokes its write access, tells the producer (ack with `error` and the revoked
  // flag unless error is 0 and `notify` false), forgets it. Partition::mu held.
  void EndLeaseLocked(Partition& p, const std::shared_ptr<Lease>& l, protocol::WireError error, bool notify);
  void EndLease(const std::shared_ptr<Lease>& l, protocol::WireError error, bool notify);
  void WriteAck(Lease& l, uint16_t error, uint16_t flags);
  // After the slot changed: wake futex sleepers (shm) and notify watchers (Partition::mu held).
  void AfterPublish(Partition& p);
  // Checks the idempotence fields of the batches in [data, data + len) for lease `l`; shared
  // duplicates are overwritten with fillers. Returns the new state to apply after the commit.
  Status CheckProducer(Partition& p, Lease& l, std::byte* data, uint64_t len, bool shared,
                       ProducerState* next, int32_t* first_sequence);
  void RebuildProducers(Partition& p);
  // Zeroes the first batch header of a refused range at the committed end (Partition::mu held).
  void SpoilTail(Partition& p, uint64_t pos, uint64_t len);
  // Acks the producers of completed shared ranges and ends the leases of dropped ones.
  void SettleShared(Partition& p, std::span<const storage::CompletedRange> completed,
                    std::span<const storage::CompletedRange> dropped);
  void CommitFromImm(const fabric::Completion& c);
  void CommitLoop();
  void AcceptLoop();
  void HousekeepingLoop();
  void Housekeep(uint64_t now_ns);
  void EndSession(uint64_t client_id, const char* why);
  std::shared_ptr<Session> SessionByEndpoint(uint64_t ep_id);
  void Repost(Session& s, uint32_t n);

  // --- state ---
  BrokerConfig cfg_;
  storage::Env* env_ = nullptr;
  std::unique_ptr<metadata::MetadataStore> meta_;
  std::unique_ptr<fabric::Fabric> control_fabric_;
  std::unique_ptr<fabric::Fabric> data_fabric_;
  std::unique_ptr<fabric::CompletionQueue> data_send_cq_;
  std::unique_ptr<fabric::CompletionQueue> data_recv_cq_;
  std::unique_ptr<fabric::Region> staging_;  // ack blocks (one per lease slot), notifications
  std::unique_ptr<rpc::Server> rpc_;

  mutable std::mutex topics_mu_;
  std::map<std::string, std::shared_ptr<Topic>> topics_;

  mutable std::mutex sessions_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;        // by client id
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_by_ep_;  // by endpoint id

  mutable std::mutex leases_mu_;
  std::vector<std::shared_ptr<Lease>> lease_slots_;
  std::vector<uint8_t> lease_reuse_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<uint64_t, std::shared_ptr<Lease>> leases_;  // by id
  uint64_t next_lease_id_ = 1;

  std::atomic<uint32_t> notify_cursor_{0};
  // Registrations of deleted partitions, kept for the same grace period as retired segments
  // (a client that raced the deletion must not READ a dead key: on verbs that would break its
  // connection). Guarded by graveyard_mu_.
  struct Buried {
    uint64_t drop_after_ns = 0;
    std::map<int64_t, SegmentReg> segments;
    std::vector<std::pair<uint64_t, SegmentReg>> retired;
    std::unique_ptr<fabric::Region> slot_region;
    storage::SlotInfo slot;
  };
  std::mutex graveyard_mu_;
  std::vector<Buried> graveyard_;
  uint64_t last_checkpoint_ns_ = 0;  // housekeeping thread only
  uint64_t last_retention_ns_ = 0;
  std::mutex admin_mu_;  // serialises topic creation, deletion and changes

  std::atomic<bool> stopping_{false};
  std::atomic<bool> accepting_{true};
  bool shut_down_ = false;
  int lock_fd_ = -1;  // flock on <data.dir>/rdmq.lock
  std::mutex shutdown_mu_;
  std::thread acceptor_;
  std::thread committer_;
  std::thread housekeeper_;
  std::mutex hk_mu_;
  std::condition_variable hk_cv_;

  struct Counters {
    std::atomic<uint64_t> commits{0}, commit_errors{0}, acks{0}, leases_granted{0}, leases_expired{0},
        notifications{0}, duplicates{0};
  } n_;

  static constexpr uint32_t kMaxLeases = 16384;
  static constexpr uint64_t kRetiredGraceNs = 10'000'000'000;
  static constexpr uint32_t kNotifySlots = 4096;
  static constexpr uint32_t kRecvDepth = 512;
};

}  // namespace rdmq::broker::internal
