// Partition: one partition's state on this broker and the lock that guards it: its log, the
// log's segments and slot registered on the data fabric, the cached active segment, its leases
// (one exclusive or any number of shared), its idempotent producers, the shared ranges waiting
// for their offsets and the Watches.
//
// Threading: everything but the identity (topic name and id, index) is guarded by `mu`, the
// topic's config included (AlterTopic changes it while the partition is open). Lock order: the
// topic table → Partition::mu → the lease and session tables, a Session's mu → the log's own
// mutex. Nothing slow but the log's own work (a roll, a checkpoint) runs under `mu`.
// Lifetime: shared by the topic table, its leases and the requests working on it; Close ends
// its log, after which `deleted()` is true and only the identity is meaningful.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "commit_validator.h"
#include "producer_state.h"
#include "rdmq/cluster/replica_set.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/log.h"
#include "read_grant.h"

namespace rdmq::broker::internal {

struct Lease;
struct Session;
struct KafkaAppendQueue;  // kafka/produce.cc

// A read-write MAP_SHARED mapping of a file the log maps read-only (a sealed segment after a
// restart), made only to register it on verbs: Linux before 6.2 pins every MR's pages for
// writing (FOLL_FORCE), which a read-only shared mapping refuses. Nothing writes through it.
class WritableAlias {
 public:
  static Result<std::unique_ptr<WritableAlias>> Map(const std::string& path, size_t size);
  ~WritableAlias();
  WritableAlias(const WritableAlias&) = delete;
  WritableAlias& operator=(const WritableAlias&) = delete;
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
  ReadGrants read_grants;                  // per-client read access (authorizer.enabled); go first
};

// Where consumers (and shared producers reading back offsets) find a segment: its read-only
// descriptor, the data area after the 4 KiB header, the reservation word.
protocol::SegmentLocation ReadLocation(Offset base, const SegmentReg& reg);

// Registrations of a closed partition, kept for a grace period: a client that raced the
// deletion must not READ a dead key (on verbs that would break its connection).
struct Buried {
  uint64_t drop_after_ns = 0;
  std::map<Offset, SegmentReg> segments;
  std::vector<std::pair<uint64_t, SegmentReg>> retired;
  std::unique_ptr<fabric::Region> slot_region;
  storage::SlotInfo slot;
  ReadGrants slot_grants;  // destroyed before the slot's region
};

// A shared range accepted by Commit whose offsets are not assigned yet.
struct PendingRange {
  LeaseId lease_id{0};  // 0: appended by the broker itself (local_done says when it completes)
  ProducerId producer_id = kNoProducerId;
  int32_t first_sequence = -1;
  int16_t epoch = 0;           // local appends: the producer epoch and the range's last sequence,
  int32_t last_sequence = -1;  // remembered with its offset once assigned (ProducerStateTable)
  // A local append (the Kafka listener's Produce): called with the range's base offset once
  // assigned, or with the error when the range was dropped. Runs under the partition's lock: it
  // may only hand the result on (post it), never take that lock.
  std::function<void(Result<Offset>)> local_done;
};

struct Watch {
  std::weak_ptr<Session> session;
  uint64_t generation = 0;
};

// What Partition::Open needs of the broker.
struct PartitionOptions {
  fabric::Fabric* fabric = nullptr;  // the data fabric the segments and slot are registered on
  std::string data_dir;
  uint32_t lease_ms = 0;
  uint32_t checkpoint_interval_ms = 0;
};

// kUnknownTopic for a partition whose topic was deleted while a request was on its way.
Status TopicDeleted(const std::string& topic);

class Partition : public std::enable_shared_from_this<Partition> {
 public:
  // Opens (creates or recovers) the log under <data_dir>/topics/<topic>-<index>, registers its
  // slot and segments and rebuilds the producers' state from the batch headers. A log created
  // now starts at `initial_offset` (a follower starting over at its leader's log start).
  static Result<std::shared_ptr<Partition>> Open(const metadata::TopicInfo& topic, PartitionId index,
                                                 const PartitionOptions& options,
                                                 Offset initial_offset = Offset(0));
  // <data_dir>/topics/<topic>-<index>: where partition `index` of `topic` keeps its log.
  static std::string DirFor(const PartitionOptions& options, const std::string& topic, PartitionId index);
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;
  ~Partition();

  const std::string& topic_name() const { return topic_name_; }
  TopicId topic_id() const { return topic_id_; }
  PartitionId index() const { return index_; }
  const std::string& where() const { return where_; }  // "<topic>-<index>", for messages
  const std::string& dir() const { return dir_; }      // the log's directory

  mutable Mutex mu;

  // Whether clients are served: always for a broker on its own; in a cluster while this broker
  // leads the partition and its ZooKeeper session holds (cluster_member.h). `leader` is the
  // cluster's leader (-1: none; a broker on its own leaves it -1), for the NOT_LEADER message.
  bool serving() const { return serving_.load(std::memory_order_acquire); }
  int32_t leader() const { return leader_.load(std::memory_order_relaxed); }
  int32_t leader_epoch() const { return leader_epoch_.load(std::memory_order_relaxed); }
  void SetLeadership(bool serving, int32_t leader, int32_t epoch) {
    leader_.store(leader, std::memory_order_relaxed);
    leader_epoch_.store(epoch, std::memory_order_relaxed);
    serving_.store(serving, std::memory_order_release);
  }

  bool deleted() const REQUIRES(mu) { return deleted_; }
  // The topic's config now in force: as of open, then as of the last Reconfigure.
  const metadata::TopicConfig& config() const REQUIRES(mu) { return config_; }
  // A topic config change (AlterTopic) for the open partition. The commit validator's
  // max.message.bytes and retention apply at once; segment.bytes, index.interval.bytes and
  // durability apply to the segments created from the next roll on (the active segment keeps its
  // own; SpoilTail follows the active segment's mode). `partitions` is not the partition's
  // business. kInvalidOptions from the log (nothing changed), kUnknownTopic when deleted.
  Status Reconfigure(const metadata::TopicConfig& config) REQUIRES(mu);
  storage::PartitionLog& log() REQUIRES(mu) { return *log_; }
  // The log, for work that runs without the partition's lock (the log is thread-safe): the handle
  // keeps it alive should the partition be deleted meanwhile. Null once deleted.
  std::shared_ptr<storage::PartitionLog> SharedLog() REQUIRES(mu) { return deleted_ ? nullptr : log_; }
  // True the first time it is asked while the active segment's successor should be made ahead
  // (SegmentPreparer): once a quarter of it is committed, or, when the partition rolled since it opened
  // (it is written at volume), once it holds a commit. False again until the next segment.
  bool WantsSpare() REQUIRES(mu);
  const ActiveSegment& active() const REQUIRES(mu) { return active_; }
  // After a commit of the active segment: the new committed end and log end offset.
  void Advance(Position committed, Offset log_end) REQUIRES(mu);
  // Whether the partition's log is replicated (replication.factor above 1, set at creation): its
  // readers see only up to the exposed end (storage's LogOptions::replicated).
  bool replicated() const { return replicated_; }
  // A replicated log's readers may read up to `next` from now on (storage's Expose); the slot and
  // the cached high watermark follow.
  Status Expose(Offset next) REQUIRES(mu);
  // Leading a replicated partition in a cluster (replication.h): the followers' progress, which
  // sets the high watermark. Null on a follower, on a partition not replicated and off a cluster.
  // Taking the set away (the leadership ended) fails the WhenReplicated waiters with NOT_LEADER.
  void SetReplicaSet(std::unique_ptr<cluster::ReplicaSet> set) REQUIRES(mu);
  cluster::ReplicaSet* replica_set() REQUIRES(mu) { return replica_set_.get(); }
  // With a replica set: tells it the log end and exposes its high watermark where that grew
  // (Publisher::Publish calls it before it wakes readers), running the WhenReplicated waiters it
  // reached. Whether the high watermark grew.
  bool RaiseHighWatermark() REQUIRES(mu);
  // acks=all: `done` runs once every in-sync replica holds the records before `end` (the high
  // watermark reached it): at once without a replica set (nothing to wait for) or when it is
  // there already, else from RaiseHighWatermark; with NOT_LEADER when the leadership (or the
  // partition) ends first. It runs under this lock: it may only hand the result on, or write
  // what the lock guards (an ack block); it must not add or end leases or waiters.
  void WhenReplicated(Offset end, std::function<void(const Status&)> done) REQUIRES(mu);
  // acks=all may be taken: OK, or NOT_ENOUGH_REPLICAS (with why) on a replicated partition this
  // broker leads while fewer than min.insync.replicas are in sync, or before its replication
  // started. Writers check before anything is written.
  Status CheckAcksAll() REQUIRES(mu);
  // Registers new segments and forgets (retires) deleted ones after the log changed.
  Status SyncSegments() REQUIRES(mu);
  // Starts a new segment now.
  Status Roll() REQUIRES(mu);
  const SegmentReg* FindSegment(Offset base) const REQUIRES(mu);
  std::vector<protocol::SegmentLocation> ReadLocations() const REQUIRES(mu);
  // Zeroes the first batch header of a refused range at the committed end, so that recovery's
  // forward scan does not adopt it.
  void SpoilTail(Position pos, uint64_t len) REQUIRES(mu);
  // Drops retired registrations past their grace period.
  void DropRetired(uint64_t now_ns) REQUIRES(mu);
  // The commits since the last checkpoint: marked by commits, taken by the housekeeper.
  void MarkDirty() REQUIRES(mu) { dirty_ = true; }
  bool TakeDirty() REQUIRES(mu) { return std::exchange(dirty_, false); }

  // The slot: its read-only descriptor, its generation, its region (for futex wake-ups).
  const std::string& slot_descriptor() const REQUIRES(mu) { return slot_descriptor_; }
  uint64_t SlotGeneration() const REQUIRES(mu);
  fabric::Region* slot_region() const REQUIRES(mu) { return slot_region_.get(); }

  // Per-client read access (read_grant.h, with authorizer.enabled): the slot's descriptor and a
  // segment's location for `s`, through grants of its own made on first use (and noted in the
  // session, so that EndSession finds them); kStaleLocation for a segment that is gone.
  Result<std::string> SlotGrant(const std::shared_ptr<Session>& s) REQUIRES(mu);
  Result<protocol::SegmentLocation> GrantedReadLocation(Offset base, const std::shared_ptr<Session>& s)
      REQUIRES(mu);
  // Ends the read grants of client `client_id` / of the clients `drop` names (returns how many
  // ended), retired segments' included.
  void DropReadGrants(uint64_t client_id) REQUIRES(mu);
  size_t DropReadGrantsIf(const std::function<bool(uint64_t client_id)>& drop) REQUIRES(mu);

  ProducerStateTable& producers() REQUIRES(mu) { return producers_; }
  // The producers' state from the committed batch headers: all of them (at open, after a
  // truncation), or those of `batches` (whole committed batches, in log order: a follower's
  // replica taking its leader's, so that it continues idempotence if it leads next).
  void RebuildProducers() REQUIRES(mu);
  void ObserveProducers(std::span<const std::byte> batches) REQUIRES(mu);
  const ProducerStateTable& producers() const REQUIRES(mu) { return producers_; }
  // A commit validator for this partition's current producers.
  CommitValidator Validator() const REQUIRES(mu);

  // Leases.
  const std::shared_ptr<Lease>& exclusive() const REQUIRES(mu) { return exclusive_; }
  size_t shared_count() const REQUIRES(mu) { return shared_.size(); }
  // Adds a granted lease; shared leases keep reservation expiry running `linger_ns` past now.
  void AddLease(const std::shared_ptr<Lease>& l, uint64_t now_ns, uint64_t linger_ns) REQUIRES(mu);
  void RemoveLease(const Lease& l) REQUIRES(mu);
  std::vector<std::shared_ptr<Lease>> Leases() const REQUIRES(mu);
  std::vector<std::shared_ptr<Lease>> ExpiredLeases(uint64_t now_ns) const REQUIRES(mu);
  // Whether expired shared reservations may need filling: shared leases now, ranges pending,
  // or shared leases within the last `linger_ns` (which restarts while there are some).
  bool SharedActive(uint64_t now_ns, uint64_t linger_ns) REQUIRES(mu);

  // Shared ranges waiting for their offsets, by (segment, position).
  void AddPending(Offset segment, Position position, PendingRange r) REQUIRES(mu);
  std::optional<PendingRange> TakePending(Offset segment, Position position) REQUIRES(mu);

  void AddWatch(Watch w) REQUIRES(mu) { watches_.push_back(std::move(w)); }
  // In-broker readers waiting for new commits (the Kafka listener's Fetch with max wait): run
  // once, by the next Publish (under this lock: they may only post, never take it). The id
  // removes a waiter that is no longer needed.
  uint64_t AddCommitWaiter(std::function<void()> w) REQUIRES(mu);
  void RemoveCommitWaiter(uint64_t id) REQUIRES(mu);
  std::vector<std::function<void()>> TakeCommitWaiters() REQUIRES(mu);
  // The broker itself appended (local writer): while it keeps doing so an exclusive lease is
  // refused, as for a shared producer.
  void NoteLocalAppend(uint64_t now_ns) REQUIRES(mu) { local_append_ns_ = now_ns; }
  bool LocalWriterActive(uint64_t now_ns, uint64_t window_ns) const REQUIRES(mu) {
    return local_append_ns_ != 0 && now_ns - local_append_ns_ < window_ns;
  }
  // How far ahead of its appends the local writer had a segment's data area populated for write
  // (LocalAppender), so that its copies into the log do not take the first-touch page faults.
  struct PrefaultMark {
    Offset segment{kNoOffset};
    uint64_t to = 0;  // data-area position
  };
  PrefaultMark& local_prefault() REQUIRES(mu) { return local_prefault_; }
  // The Kafka front door's append queue for this partition (kafka/produce.cc): made on the first
  // Kafka write to it while its topic is durable, kept for the partition's life.
  std::shared_ptr<KafkaAppendQueue>& kafka_queue() REQUIRES(mu) { return kafka_queue_; }
  // The watches, for the publisher to notify and keep those still waiting.
  std::vector<Watch>& watches() REQUIRES(mu) { return watches_; }

  // Traffic for /metrics since the partition was opened. In: the bytes of every range a commit
  // accepted (noted under the lock the commit holds anyway) and the offsets assigned since open.
  // Out: what the Kafka listener's Fetch answers carried (one relaxed add per answer).
  void NoteIn(uint64_t bytes) REQUIRES(mu) { bytes_in_ += bytes; }
  uint64_t bytes_in() const REQUIRES(mu) { return bytes_in_; }
  Offset opened_high_watermark() const { return opened_high_watermark_; }
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> offsets_out{0};

  // Closing, in two steps around the last wake-up (which tells consumers the slot is closed):
  // CloseLog checkpoints and closes the log and drops the pending ranges; MarkDeleted marks the
  // partition deleted, drops the watches and the log, and hands over the registrations if
  // `keep_registrations` (the caller keeps them for the grace period), else drops them. The
  // leases must have been ended first.
  void CloseLog() REQUIRES(mu);
  Buried MarkDeleted(bool keep_registrations) REQUIRES(mu);
  // Removes the partition's directory (after CloseLog, for a deleted topic).
  void RemoveFiles() const;

 private:
  Partition(const metadata::TopicInfo& topic, PartitionId index, const PartitionOptions& options);
  void RefreshActive() REQUIRES(mu);

  const std::string topic_name_;
  const TopicId topic_id_;
  const PartitionOptions options_;
  const PartitionId index_;
  const bool replicated_;
  const std::string where_;
  const std::string dir_;
  fabric::Fabric* const fabric_;
  Offset opened_high_watermark_{0};  // set by Open
  uint64_t bytes_in_ GUARDED_BY(mu) = 0;

  metadata::TopicConfig config_ GUARDED_BY(mu);
  std::shared_ptr<storage::PartitionLog> log_ GUARDED_BY(mu);
  int64_t spare_asked_for_ GUARDED_BY(mu) = -1;           // the active segment whose successor was asked for
  bool rolled_ GUARDED_BY(mu) = false;                    // the active segment changed since the log opened
  std::map<Offset, SegmentReg> segments_ GUARDED_BY(mu);  // by base offset
  // Segments retention deleted, kept registered (and mapped) for a grace period: a consumer
  // that read the slot just before the deletion may still READ them (on verbs a READ with a
  // deregistered key would break its connection). Unchanged bytes; the slot says they are gone.
  std::vector<std::pair<uint64_t, SegmentReg>> retired_ GUARDED_BY(mu);  // (drop after, reg)
  storage::SlotInfo slot_ GUARDED_BY(mu);
  std::unique_ptr<fabric::Region> slot_region_ GUARDED_BY(mu);
  std::string slot_descriptor_ GUARDED_BY(mu);  // encoded read-only
  ReadGrants slot_grants_ GUARDED_BY(mu);       // per client, on slot_region_
  ActiveSegment active_ GUARDED_BY(mu);         // cached from the log

  std::shared_ptr<Lease> exclusive_ GUARDED_BY(mu);
  std::map<LeaseId, std::shared_ptr<Lease>> shared_ GUARDED_BY(mu);
  uint64_t shared_until_ns_ GUARDED_BY(mu) = 0;  // shared leases existed recently
  ProducerStateTable producers_ GUARDED_BY(mu);
  std::map<std::pair<Offset, Position>, PendingRange> pending_ GUARDED_BY(mu);
  std::vector<Watch> watches_ GUARDED_BY(mu);
  std::map<uint64_t, std::function<void()>> commit_waiters_ GUARDED_BY(mu);
  uint64_t next_waiter_id_ GUARDED_BY(mu) = 1;
  uint64_t local_append_ns_ GUARDED_BY(mu) = 0;
  PrefaultMark local_prefault_ GUARDED_BY(mu);
  std::shared_ptr<KafkaAppendQueue> kafka_queue_ GUARDED_BY(mu);
  std::unique_ptr<cluster::ReplicaSet> replica_set_ GUARDED_BY(mu);
  std::multimap<Offset, std::function<void(const Status&)>> replicated_waiters_ GUARDED_BY(mu);
  void FailReplicatedWaiters(const Status& why) REQUIRES(mu);
  std::atomic<bool> serving_{true};
  std::atomic<int32_t> leader_{-1};
  std::atomic<int32_t> leader_epoch_{0};
  bool dirty_ GUARDED_BY(mu) = false;    // commits since the last periodic checkpoint
  bool deleted_ GUARDED_BY(mu) = false;  // closed: the topic was deleted or the broker stops
};

// Calls act(p, args...) for a caller that holds p.mu, where `act` is a lambda annotated
// REQUIRES(p.mu). Clang's analysis maps a lambda's REQUIRES onto the closure object instead of
// its argument, so the call itself is not analysed; callers are (REQUIRES) and the lambda's body
// is.
template <class Act, class... Args>
Status CallLocked(Partition& p, Act& act, Args&&... args) REQUIRES(p.mu) NO_THREAD_SAFETY_ANALYSIS {
  return act(p, std::forward<Args>(args)...);
}

// How long retired and buried registrations stay.
inline constexpr uint64_t kRetiredGraceNs = 10'000'000'000;

}  // namespace rdmq::broker::internal
