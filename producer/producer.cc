// Producer (producer.h): batches built in place in registered memory, written into the
// partition's segment with one WRITE_WITH_IMM per batch (exclusive mode) or reserved with
// FETCH_ADD, written and committed with the Commit RPC (shared mode); docs/protocol.md §4-5.
//
// Threads and progress. Application threads build records into the open batch of a partition
// under that partition's mutex. Whoever needs progress (a Send that sees a new ack generation,
// a waiting future, Flush) polls the data endpoint's queues itself, through a try-lock, so an
// ack is seen without a thread hand-off. The I/O thread covers what nobody waits for: linger
// deadlines, lease renewals of idle partitions, re-opening lost leases, and acks when no
// application thread is waiting (it then sleeps in the receive queue, woken by the ack's
// immediate).
#include "rdmq/producer/producer.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rdmq/client/connection.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/producer/partitioner.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace rdmq::producer {
namespace {

using protocol::Api;
using protocol::WireError;
using Clock = std::chrono::steady_clock;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

Status Bad(std::string_view key, std::string_view value, std::string_view why) {
  return Status(Errc::kInvalidArgument,
                std::string(key) + "=" + std::string(value) + ": " + std::string(why));
}

// Errors after which a lease is simply opened again (and the batches resent).
bool Retriable(const Status& s) {
  if (s.code().category() == module_error_category<WireError>()) {
    switch (static_cast<WireError>(s.code().value())) {
      case WireError::kLeaseExpired:
      case WireError::kStaleLocation:
      case WireError::kOutOfCredit:
      case WireError::kPartitionBusy:
      case WireError::kDuplicateSequence:
      case WireError::kOutOfOrderSequence:
      case WireError::kUnavailable:
      case WireError::kStorageError:
        return true;
      default:
        return false;
    }
  }
  return s.is(Errc::kTimeout) || s.is(Errc::kUnavailable) || s.is(Errc::kPermissionDenied) ||
         s.is(Errc::kResourceExhausted);
}

constexpr uint64_t kTagKindShift = 56;
constexpr uint32_t kMaxPartitions = 1024;
constexpr uint32_t kAckBlocksPerPartition = 4;
constexpr uint64_t kScratchOffset = uint64_t{kMaxPartitions} * kAckBlocksPerPartition * 64;
constexpr uint64_t kTagWrite = 1;  // low bits: partition number (errors only)
constexpr uint64_t kTagWait = 2;   // low bits: wait-op id

}  // namespace

// ---------------------------------------------------------------------------------------------
// Futures

struct RecordInfo {
  int64_t timestamp = 0;
  uint32_t key_size = 0;
  uint32_t value_size = 0;
};

class Core;

struct SendFuture::State {
  std::shared_ptr<Core> core;  // drives progress while a caller waits
  std::atomic<int> done{0};
  Status status;
  std::string_view topic;  // points into the producer's topic table (lives as long as core)
  int32_t partition = 0;
  int64_t base_offset = -1;
  std::vector<RecordInfo> records;
};

namespace {

// A chunk of the registered arena: batches of one partition are carved from it one after the
// other; it returns to the free list when all of them are acknowledged.
struct Chunk {
  uint32_t index = 0;
  uint32_t span = 1;  // chunks it covers (large records)
  uint32_t refs = 0;  // batches alive in it, plus 1 while it is a partition's current chunk
};

struct Batch {
  std::shared_ptr<SendFuture::State> state;
  std::vector<std::pair<uint32_t, SendCallback>> callbacks;
  Chunk* chunk = nullptr;
  std::byte* buf = nullptr;
  size_t capacity = 0;
  std::optional<storage::BatchBuilder> builder;
  size_t size = 0;  // after Seal
  int32_t count = 0;
  int32_t base_sequence = -1;
  uint64_t created_ns = 0;
  // Where it was written.
  int64_t segment_base = 0;
  uint64_t position = 0;
  int64_t base_offset = -1;   // exclusive: assigned when posted; shared: read after the commit
  bool committed = false;     // shared: the Commit RPC accepted it
  bool offset_known = false;  // shared: the Commit response carried base_offset
  bool complete = false;
  uint64_t post_id = 0;  // shared: which Commit RPC a response belongs to
};

struct TopicState;

struct PState {
  std::mutex mu;
  uint32_t id = 0;  // index in Core::parts_
  TopicState* topic = nullptr;
  int32_t partition = 0;
  Status fatal;  // a non-retriable error: every Send to this partition fails with it
  // Lease.
  bool open = false;
  uint64_t lease_id = 0;
  uint32_t lease_index = 0;
  uint32_t lease_ms = 0;
  protocol::SegmentLocation seg;
  std::unique_ptr<fabric::RemoteRegion> remote;
  uint64_t write_pos = 0;   // exclusive: where the next batch goes
  int64_t next_offset = 0;  // exclusive: offset of the next posted batch
  uint64_t last_commit_ns = 0;
  uint64_t retry_at_ns = 0;
  uint64_t lost_since_ns = 0;
  Status last_error;
  // Acks.
  uint32_t ack_slot = 0;  // this partition's scratch word (atomics' results, small READs)
  uint64_t leases_opened = 0;
  std::unique_ptr<fabric::Grant> ack_grant;
  std::byte* ack_block = nullptr;
  uint64_t ack_gen_seen = 0;
  protocol::AckBlock last_ack;  // the newest ack block of the current lease
  // Shared mode: read-only attachments of segments holding batches whose offsets are read back.
  std::map<int64_t, std::unique_ptr<fabric::RemoteRegion>> read_segs;
  bool have_ack = false;
  // Sequences (idempotence).
  int32_t next_sequence = 0;
  // Batches.
  Chunk* cur_chunk = nullptr;
  size_t cur_off = 0;
  Batch* open_batch = nullptr;
  std::deque<Batch*> sealed;      // not yet posted (waiting for room, a lease or a roll)
  std::deque<Batch*> inflight;    // posted, not acknowledged, in position order
  std::vector<Batch*> completed;  // to finish (callbacks, memory) once the lock is released
  // A thread is finishing this partition's completed batches (callbacks run in completion order:
  // Kafka's per-partition callback order); other threads leave theirs in `completed` for it.
  bool finishing = false;
  bool need_roll = false;
  // shm, exclusive: the window is prefaulted (for write) up to this data-area position by the
  // I/O thread, ahead of write_pos, so the sending thread does not take page faults.
  uint64_t prefault_to = 0;
};

struct TopicState {
  std::string name;
  int32_t partitions = 0;
  uint32_t max_message_bytes = 0;  // the topic's max.message.bytes: the largest batch
  std::vector<PState*> parts;
  std::atomic<int32_t> sticky{-1};
};

}  // namespace

class Core : public std::enable_shared_from_this<Core> {
 public:
  explicit Core(ProducerConfig cfg) : cfg_(std::move(cfg)) {}
  ~Core();

  Status Init();
  Status Send(const ProducerRecord& r, SendCallback cb, SendFuture* fut);
  Status Flush(std::chrono::milliseconds timeout);
  Status Close(std::chrono::milliseconds timeout);
  Result<int32_t> PartitionCount(std::string_view topic);

  // Progress: drains the queues (if no one else is) and processes new acks. True if it did
  // anything.
  bool Progress();
  // When the broker is gone: fails every unacknowledged record with kUnavailable, once.
  void CheckConnection();
  // Waits until pred() holds or the deadline passes, driving progress meanwhile.
  template <class Pred>
  bool WaitFor(Pred pred, Clock::time_point deadline);

 private:
  friend class ProducerImpl;
  Result<TopicState*> Topic(std::string_view name);
  Status OpenLease(PState& ps);                   // ps.mu held
  Status Reopen(PState& ps);                      // ps.mu held
  void LeaseLost(PState& ps, const Status& why);  // ps.mu held
  Status NewBatch(PState& ps, size_t need, std::unique_lock<std::mutex>& lock);
  void Seal(PState& ps);                                                      // ps.mu held
  void PostSealed(PState& ps);                                                // ps.mu held
  Status PostExclusive(PState& ps, Batch& b);                                 // ps.mu held
  Status PostShared(PState& ps, Batch& b);                                    // ps.mu held
  Status Roll(PState& ps);                                                    // ps.mu held
  void CheckAcks(PState& ps);                                                 // ps.mu held
  void CompleteCovered(PState& ps);                                           // ps.mu held
  Result<const fabric::RemoteRegion*> ReadSegment(PState& ps, int64_t base);  // ps.mu held
  void CompleteBatch(PState& ps, Batch* b, const Status& s);                  // ps.mu held
  void FailAll(PState& ps, const Status& s);                                  // ps.mu held
  void Finish(std::vector<Batch*>& done);                                     // no lock: callbacks, memory
  // Locks a partition; on destruction finishes the batches completed meanwhile, unlocked.
  class PLock {
   public:
    PLock(Core* c, PState& ps) : c_(c), ps_(ps), lk_(ps.mu) {}
    PLock(Core* c, PState& ps, std::try_to_lock_t t) : c_(c), ps_(ps), lk_(ps.mu, t) {}
    ~PLock() {
      if (!lk_.owns_lock()) return;  // a failed try-lock
      // One finisher per partition at a time, looping until nothing is left, so that callbacks
      // of one partition never run concurrently or out of order. A callback that sends to the
      // same partition only adds to `completed`; this loop picks that up.
      if (ps_.finishing || ps_.completed.empty()) return;
      ps_.finishing = true;
      std::vector<Batch*> v;
      while (!ps_.completed.empty()) {
        v.swap(ps_.completed);
        lk_.unlock();
        c_->Finish(v);
        lk_.lock();
      }
      ps_.finishing = false;
    }
    bool owns_lock() const { return lk_.owns_lock(); }
    std::unique_lock<std::mutex>& lock() { return lk_; }

   private:
    Core* c_;
    PState& ps_;
    std::unique_lock<std::mutex> lk_;
  };
  void ReleaseChunk(Chunk* c);
  Result<Chunk*> AllocChunks(uint32_t n, std::unique_lock<std::mutex>& ps_lock);
  bool DrainQueues();
  Status PostAndWait(fabric::WorkRequest wr);
  Status PostData(std::span<const fabric::WorkRequest> wrs);
  void IoLoop();
  void Prefault();  // I/O thread: prefaults exclusive windows ahead of the writes (shm)
  void Tick(uint64_t now);
  void HandleCommitResults();
  struct CommitResult {
    PState* ps;
    Batch* b;
    uint64_t post_id;
    Result<std::string> r;
  };

  ProducerConfig cfg_;
  std::unique_ptr<client::Connection> conn_;
  std::unique_ptr<fabric::Region> arena_;
  std::unique_ptr<fabric::Region> acks_;
  size_t chunk_size_ = 0;
  std::vector<Chunk> chunks_;
  std::mutex mem_mu_;
  std::vector<uint32_t> free_chunks_;  // sorted descending is not needed; any order
  std::vector<bool> chunk_used_;
  int64_t producer_id_ = -1;
  int16_t producer_epoch_ = 0;
  uint32_t max_batch_ = 0;

  std::mutex topics_mu_;  // creation only; lookups go through the snapshot
  std::list<TopicState> topic_store_;
  std::list<PState> part_store_;
  std::vector<PState*> parts_;  // guarded by topics_mu_ (append-only)
  std::atomic<const std::unordered_map<std::string_view, TopicState*>*> topic_map_{nullptr};
  std::vector<std::unique_ptr<std::unordered_map<std::string_view, TopicState*>>> old_maps_;

  std::atomic_flag polling_ = ATOMIC_FLAG_INIT;
  std::atomic_flag cq_sleeper_ = ATOMIC_FLAG_INIT;  // who may sleep in the receive queue
  std::mutex post_mu_;                              // one posting thread at a time on the data endpoint
  uint32_t recv_owed_ = 0;
  std::mutex ops_mu_;
  uint64_t next_op_ = 1;
  std::unordered_map<uint64_t, std::error_code> ops_done_;
  std::vector<uint32_t> failed_parts_;        // write errors seen while draining (ops_mu_)
  std::vector<CommitResult> commit_results_;  // shared mode: Commit responses (ops_mu_)
  uint64_t next_post_id_ = 1;

  std::atomic<uint64_t> unacked_{0};  // batches sealed and not complete
  std::atomic<uint32_t> waiters_{0};  // application threads driving progress
  std::atomic<uint32_t> sleepers_{0};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::atomic<uint64_t> last_app_progress_ns_{0};
  std::atomic<bool> app_active_{false};  // set by Send, cleared by the I/O thread each tick

  std::atomic<bool> closing_{false};
  std::atomic<bool> broken_logged_{false};
  std::atomic<bool> lost_{false};  // the connection to the broker is gone
  std::mutex failed_mu_;
  uint64_t failed_records_ = 0;  // since the last Flush
  Status first_failure_;
  std::atomic<bool> closed_{false};
  std::thread io_;
  std::mutex io_mu_;
  std::condition_variable io_cv_;
};

namespace {
uint32_t Random() {
  thread_local std::mt19937 rng{std::random_device{}()};
  return rng();
}
}  // namespace

namespace {

void NotifySleepers(std::atomic<uint32_t>& sleepers, std::mutex& mu, std::condition_variable& cv) {
  if (sleepers.load(std::memory_order_acquire) != 0) {
    std::lock_guard lock(mu);
    cv.notify_all();
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Setup

Status Core::Init() {
  if (cfg_.batch_size < 128)
    return Bad("batch.size", std::to_string(cfg_.batch_size), "must be at least 128");
  client::ConnectionOptions co;
  co.max_recv_wr = 1024;
  co.max_send_wr = 1024;
  RDMQ_ASSIGN_OR_RETURN(conn_, client::Connection::Open(cfg_.client, co));
  max_batch_ = conn_->hello().max_message_bytes;
  chunk_size_ = (std::max<size_t>(cfg_.batch_size, 64 * 1024) + 4095) & ~size_t{4095};
  const size_t n = std::max<size_t>(4, cfg_.buffer_memory / chunk_size_);
  RDMQ_ASSIGN_OR_RETURN(arena_, conn_->fabric().Allocate(n * chunk_size_, fabric::kLocalWrite));
  chunks_.resize(n);
  chunk_used_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    chunks_[i].index = static_cast<uint32_t>(i);
    free_chunks_.push_back(static_cast<uint32_t>(n - 1 - i));
  }
  // Four ack blocks per partition written to (one per lease, in turn), then a 64-byte scratch
  // word per partition for atomics' results and small READs.
  RDMQ_ASSIGN_OR_RETURN(acks_, conn_->fabric().Allocate(kScratchOffset + uint64_t{kMaxPartitions} * 64,
                                                        fabric::kLocalWrite | fabric::kRemoteWrite));
  {
    std::vector<fabric::RecvRequest> rr(1024);
    std::lock_guard lock(post_mu_);
    RDMQ_RETURN_IF_ERROR(conn_->data()->PostRecv(rr));
  }
  if (cfg_.enable_idempotence) {
    RDMQ_ASSIGN_OR_RETURN(
        auto id, (conn_->Call<protocol::InitProducerIdResponse>(Api::kInitProducerId, protocol::Empty{})));
    producer_id_ = id.producer_id;
    producer_epoch_ = id.producer_epoch;
  }
  topic_map_.store(new std::unordered_map<std::string_view, TopicState*>(), std::memory_order_release);
  io_ = std::thread([this] { IoLoop(); });
  return Status::Ok();
}

Core::~Core() {
  closing_.store(true);
  io_cv_.notify_all();
  if (io_.joinable()) io_.join();
  for (auto& ps : part_store_) {
    ps.remote.reset();
    ps.read_segs.clear();
    ps.ack_grant.reset();
    for (Batch* b : ps.sealed) delete b;
    for (Batch* b : ps.inflight) delete b;
    delete ps.open_batch;
  }
  delete topic_map_.load();
}

Result<TopicState*> Core::Topic(std::string_view name) {
  if (const auto* m = topic_map_.load(std::memory_order_acquire)) {
    auto it = m->find(name);
    if (it != m->end()) return it->second;
  }
  std::lock_guard lock(topics_mu_);
  const auto* cur = topic_map_.load(std::memory_order_acquire);
  if (auto it = cur->find(name); it != cur->end()) return it->second;
  protocol::TopicNameRequest req{std::string(name)};
  RDMQ_ASSIGN_OR_RETURN(auto d, (conn_->Call<protocol::DescribeTopicResponse>(Api::kDescribeTopic, req)));
  int32_t partitions = 0;
  uint32_t max_message = max_batch_;
  for (const auto& e : d.topic.configs) {
    if (e.key == "partitions") std::from_chars(e.value.data(), e.value.data() + e.value.size(), partitions);
    if (e.key == "max.message.bytes")
      std::from_chars(e.value.data(), e.value.data() + e.value.size(), max_message);
  }
  if (partitions <= 0) partitions = static_cast<int32_t>(d.partitions.size());
  TopicState& t = topic_store_.emplace_back();
  t.name = std::string(name);
  t.partitions = partitions;
  t.max_message_bytes = max_message;
  for (int32_t i = 0; i < partitions; ++i) {
    PState& ps = part_store_.emplace_back();
    ps.id = static_cast<uint32_t>(parts_.size());
    ps.topic = &t;
    ps.partition = i;
    parts_.push_back(&ps);
    t.parts.push_back(&ps);
  }
  auto next = std::make_unique<std::unordered_map<std::string_view, TopicState*>>(*cur);
  (*next)[t.name] = &t;
  old_maps_.emplace_back(const_cast<std::unordered_map<std::string_view, TopicState*>*>(cur));
  topic_map_.store(next.release(), std::memory_order_release);
  return &t;
}

Result<int32_t> Core::PartitionCount(std::string_view topic) {
  RDMQ_ASSIGN_OR_RETURN(TopicState * t, Topic(topic));
  return t->partitions;
}

// ---------------------------------------------------------------------------------------------
// Leases

Status Core::OpenLease(PState& ps) {
  {
    // Each lease gets the next of the partition's ack blocks, so that a late ack of an earlier
    // lease (its last words) can never be taken for one of this lease.
    std::lock_guard lock(post_mu_);
    if (ps.id >= kMaxPartitions) {
      return Status(Errc::kResourceExhausted,
                    "a producer writes to at most " + std::to_string(kMaxPartitions) + " partitions");
    }
    ps.ack_slot = ps.id;
    const uint64_t block =
        uint64_t{ps.id} * kAckBlocksPerPartition + (ps.leases_opened++ % kAckBlocksPerPartition);
    ps.ack_grant.reset();
    RDMQ_ASSIGN_OR_RETURN(ps.ack_grant,
                          conn_->data()->GrantAccess(*acks_, block * 64, 64, fabric::kRemoteWrite));
    ps.ack_block = acks_->data() + block * 64;
  }
  protocol::OpenProduceRequest req;
  req.topic = ps.topic->name;
  req.partition = ps.partition;
  req.mode = cfg_.mode == PartitionMode::kExclusive ? protocol::ProduceMode::kExclusive
                                                    : protocol::ProduceMode::kShared;
  req.producer_id = producer_id_;
  req.producer_epoch = producer_epoch_;
  req.ack_region.bytes = ps.ack_grant->descriptor().Encode();
  RDMQ_ASSIGN_OR_RETURN(auto resp, (conn_->Call<protocol::LeaseResponse>(Api::kOpenProduce, req)));
  auto desc = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(resp.segment.region.bytes)));
  if (!desc.ok()) return desc.status().WithContext("segment descriptor from the broker");
  {
    std::lock_guard lock(post_mu_);
    ps.remote.reset();
    RDMQ_ASSIGN_OR_RETURN(ps.remote, conn_->data()->Attach(*desc));
  }
  ps.open = true;
  ps.lease_id = resp.lease_id;
  ps.lease_index = resp.lease_index;
  ps.lease_ms = resp.lease_ms;
  ps.seg = std::move(resp.segment);
  ps.write_pos = resp.write_position;
  ps.next_offset = resp.next_offset;
  ps.prefault_to = resp.write_position;
  ps.last_commit_ns = MonoNanos();
  ps.lost_since_ns = 0;
  ps.need_roll = false;
  // Sync with the ack block's generation so that old acks are not taken for new ones.
  protocol::AckBlock a;
  if (protocol::DecodeAckBlock(ps.ack_block, &a)) ps.ack_gen_seen = a.generation;
  ps.have_ack = false;
  // Batches the broker already has (a lease lost after the commit, before its ack): complete
  // them instead of writing them twice.
  if (producer_id_ >= 0) {
    while (!ps.sealed.empty()) {
      Batch* b = ps.sealed.front();
      if (b->base_sequence < 0 || b->base_sequence + b->count - 1 > resp.last_sequence) break;
      ps.sealed.pop_front();
      CompleteBatch(ps, b, Status::Ok());
    }
  }
  return Status::Ok();
}

Status Core::Reopen(PState& ps) {
  if (ps.open || !ps.fatal.ok()) return ps.fatal;
  const uint64_t now = MonoNanos();
  if (now < ps.retry_at_ns) return Status(Errc::kUnavailable, "retrying later");
  Status s = OpenLease(ps);
  if (s.ok()) {
    PostSealed(ps);
    return s;
  }
  ps.last_error = s;
  if (!Retriable(s)) {
    ps.fatal = s;
    FailAll(ps, s);
    return s;
  }
  if (ps.lost_since_ns == 0) ps.lost_since_ns = now;
  ps.retry_at_ns = now + 2'000'000;  // 2 ms
  RDMQ_LOG(kDebug, "producer", "lease not available; retrying")
      .kv("topic", ps.topic->name)
      .kv("partition", ps.partition)
      .kv("error", s);
  return s;
}

void Core::LeaseLost(PState& ps, const Status& why) {
  if (!ps.open) return;
  RDMQ_LOG(kDebug, "producer", "lease lost; resending what was not acknowledged")
      .kv("topic", ps.topic->name)
      .kv("partition", ps.partition)
      .kv("error", why);
  ps.open = false;
  ps.last_error = why;
  ps.lost_since_ns = MonoNanos();
  ps.retry_at_ns = 0;
  {
    std::lock_guard lock(post_mu_);
    ps.remote.reset();
  }
  // Shared batches whose Commit already returned their offsets are in the log: complete them.
  // Everything else not acknowledged goes back to the front of the queue, in order.
  std::vector<Batch*> resend;
  for (Batch* b : ps.inflight) {
    if (b->complete) continue;
    if (b->offset_known) {
      CompleteBatch(ps, b, Status::Ok());
      continue;
    }
    b->committed = false;
    resend.push_back(b);
  }
  ps.inflight.clear();
  ps.sealed.insert(ps.sealed.begin(), resend.begin(), resend.end());
  io_cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Memory

Result<Chunk*> Core::AllocChunks(uint32_t n, std::unique_lock<std::mutex>& ps_lock) {
  const auto deadline = Clock::now() + cfg_.max_block;
  while (true) {
    {
      std::lock_guard lock(mem_mu_);
      if (n == 1 && !free_chunks_.empty()) {
        const uint32_t i = free_chunks_.back();
        free_chunks_.pop_back();
        chunk_used_[i] = true;
        chunks_[i].span = 1;
        chunks_[i].refs = 0;
        return &chunks_[i];
      }
      if (n > 1) {
        for (size_t start = 0; start + n <= chunks_.size(); ++start) {
          bool ok = true;
          for (size_t k = start; k < start + n && ok; ++k) ok = !chunk_used_[k];
          if (!ok) continue;
          for (size_t k = start; k < start + n; ++k) {
            chunk_used_[k] = true;
            free_chunks_.erase(std::find(free_chunks_.begin(), free_chunks_.end(), static_cast<uint32_t>(k)));
          }
          chunks_[start].span = n;
          chunks_[start].refs = 0;
          return &chunks_[start];
        }
        if (n > chunks_.size()) {
          return Status(Errc::kInvalidArgument, "a record needs " + std::to_string(n * chunk_size_) +
                                                    " bytes, more than buffer.memory");
        }
      }
    }
    if (Clock::now() >= deadline) {
      return Status(Errc::kTimeout, "buffer.memory (" + std::to_string(cfg_.buffer_memory) +
                                        " bytes) stayed full for max.block.ms");
    }
    // Wait for acks with the partition unlocked (acks need it).
    ps_lock.unlock();
    WaitFor(
        [&] {
          std::lock_guard lock(mem_mu_);
          return !free_chunks_.empty() && (n == 1 || free_chunks_.size() >= n);
        },
        std::min(deadline, Clock::now() + std::chrono::milliseconds(10)));
    ps_lock.lock();
  }
}

void Core::ReleaseChunk(Chunk* c) {
  {
    std::lock_guard lock(mem_mu_);
    for (uint32_t k = c->index; k < c->index + c->span; ++k) {
      chunk_used_[k] = false;
      free_chunks_.push_back(k);
    }
  }
  NotifySleepers(sleepers_, wait_mu_, wait_cv_);
}

Status Core::NewBatch(PState& ps, size_t need, std::unique_lock<std::mutex>& lock) {
  const size_t max_batch = ps.topic->max_message_bytes;
  size_t cap = std::min<size_t>(cfg_.batch_size, max_batch);
  cap = std::max(cap, need);
  if (need > max_batch) {
    return Status(WireError::kRecordTooLarge,
                  "a record of " + std::to_string(need) +
                      " bytes (batch overhead included) exceeds max.message.bytes " +
                      std::to_string(max_batch) + " of topic '" + ps.topic->name + "'");
  }
  if (ps.cur_chunk == nullptr || ps.cur_chunk->span * chunk_size_ - ps.cur_off < cap) {
    if (ps.cur_chunk != nullptr) {
      Chunk* old = ps.cur_chunk;
      ps.cur_chunk = nullptr;
      if (--old->refs == 0) ReleaseChunk(old);
    }
    const uint32_t n = static_cast<uint32_t>((cap + chunk_size_ - 1) / chunk_size_);
    RDMQ_ASSIGN_OR_RETURN(Chunk * c, AllocChunks(n, lock));
    if (ps.open_batch != nullptr) {  // another thread opened one while we waited
      if (c->refs == 0) ReleaseChunk(c);
      return Status::Ok();
    }
    c->refs = 1;  // held as the current chunk
    ps.cur_chunk = c;
    ps.cur_off = 0;
  }
  auto* b = new Batch();
  b->state = std::make_shared<SendFuture::State>();
  b->state->core = shared_from_this();
  b->state->topic = ps.topic->name;
  b->state->partition = ps.partition;
  b->chunk = ps.cur_chunk;
  ++b->chunk->refs;
  b->buf = arena_->data() + uint64_t{ps.cur_chunk->index} * chunk_size_ + ps.cur_off;
  b->capacity = cap;
  storage::BatchOptions o;
  o.base_offset =
      cfg_.mode == PartitionMode::kExclusive ? Offset(0) : kNoOffset;  // exclusive: patched when posted
  o.producer_id = ProducerId(producer_id_);
  o.producer_epoch = producer_id_ >= 0 ? producer_epoch_ : int16_t{-1};
  b->base_sequence = producer_id_ >= 0 ? ps.next_sequence : -1;
  o.base_sequence = b->base_sequence;
  b->builder.emplace(b->buf, cap, o);
  b->created_ns = MonoNanos();
  ps.open_batch = b;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Sending

void Core::Seal(PState& ps) {
  Batch* b = ps.open_batch;
  if (b == nullptr) return;
  ps.open_batch = nullptr;
  b->size = b->builder->Finish();
  b->count = b->builder->count();
  b->builder.reset();
  if (b->base_sequence >= 0) ps.next_sequence += b->count;
  ps.cur_off += (b->size + 63) & ~size_t{63};
  unacked_.fetch_add(1, std::memory_order_relaxed);
  ps.sealed.push_back(b);
  // Sticky partitioning: the next keyless records go elsewhere.
  TopicState* t = ps.topic;
  if (t->partitions > 1 && t->sticky.load(std::memory_order_relaxed) == ps.partition) {
    t->sticky.store(
        static_cast<int32_t>((ps.partition + 1 + Random() % static_cast<uint32_t>(t->partitions - 1)) %
                             static_cast<uint32_t>(t->partitions)),
        std::memory_order_relaxed);
  }
  PostSealed(ps);
}

void Core::PostSealed(PState& ps) {
  while (!ps.sealed.empty() && ps.fatal.ok()) {
    if (!ps.open) {
      if (!Reopen(ps).ok()) break;
      if (!ps.open) break;
      continue;  // Reopen posted what it could
    }
    if (ps.inflight.size() >= cfg_.max_in_flight) break;
    if (cfg_.mode == PartitionMode::kExclusive && ps.lease_ms > 0 &&
        MonoNanos() - ps.last_commit_ns > uint64_t{ps.lease_ms} * 500'000) {
      // Nothing confirmed the lease for half its length (this process was stopped or starved):
      // take it as lost and open a new one before writing. A write under a revoked window is
      // refused harmlessly on shm and tcp, but on verbs it breaks the whole data connection.
      LeaseLost(ps, Status(WireError::kLeaseExpired, "the lease was not confirmed for half its length"));
      continue;
    }
    Batch* b = ps.sealed.front();
    const Status s = cfg_.mode == PartitionMode::kExclusive ? PostExclusive(ps, *b) : PostShared(ps, *b);
    if (s.is(Errc::kResourceExhausted)) break;  // waiting for the in-flight batches (a roll)
    if (!s.ok()) {
      if (s.code().category() == module_error_category<fabric::FabricErrc>() && s.is(Errc::kUnavailable)) {
        // The data connection itself failed (peer gone, flushed): nothing can be sent any more.
        // (A revoked or unknown key is only a lost lease: the retriable path below.)
        ps.fatal = Status(Errc::kUnavailable, "the data connection to the broker at " + conn_->address() +
                                                  " failed: " + s.ToString());
        FailAll(ps, ps.fatal);
        break;
      }
      if (Retriable(s)) {
        LeaseLost(ps, s);
        if (!ps.open) ps.retry_at_ns = MonoNanos() + 2'000'000;
        continue;
      }
      ps.sealed.pop_front();
      CompleteBatch(ps, b, s);
      continue;
    }
    ps.sealed.pop_front();
    ps.inflight.push_back(b);
    if (cfg_.acks == 0 && b->state->done.load(std::memory_order_relaxed) == 0) {
      // acks=0: the future is ready once the batch is posted; callbacks run at the broker's ack.
      b->state->base_offset = -1;
      b->state->done.store(1, std::memory_order_release);
      NotifySleepers(sleepers_, wait_mu_, wait_cv_);
    }
  }
}

Status Core::PostData(std::span<const fabric::WorkRequest> wrs) {
  std::lock_guard lock(post_mu_);
  Status s = conn_->data()->Post(wrs);
  for (int i = 0; s.is(fabric::FabricErrc::kQueueFull) && i < 100000; ++i) {
    post_mu_.unlock();
    DrainQueues();
    std::this_thread::yield();
    post_mu_.lock();
    s = conn_->data()->Post(wrs);
  }
  return s;
}

Status Core::Roll(PState& ps) {
  protocol::LeaseRequest req{ps.lease_id, protocol::kRenewRoll};
  auto resp = conn_->Call<protocol::LeaseResponse>(Api::kRenewLease, req);
  if (!resp.ok()) return resp.status();
  auto desc = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(resp->segment.region.bytes)));
  if (!desc.ok()) return desc.status();
  {
    std::lock_guard lock(post_mu_);
    ps.remote.reset();
    auto r = conn_->data()->Attach(*desc);
    if (!r.ok()) return r.status();
    ps.remote = std::move(*r);
  }
  ps.seg = std::move(resp->segment);
  ps.write_pos = resp->write_position;
  ps.next_offset = resp->next_offset;
  ps.prefault_to = resp->write_position;
  ps.need_roll = false;
  return Status::Ok();
}

Status Core::PostExclusive(PState& ps, Batch& b) {
  if (b.size > ps.seg.capacity - std::min(ps.write_pos, ps.seg.capacity)) {
    // The segment is full: roll once everything written to it is acknowledged.
    if (b.size > ps.seg.capacity) {
      return Status(WireError::kRecordTooLarge, "a batch of " + std::to_string(b.size) +
                                                    " bytes does not fit a segment of " +
                                                    std::to_string(ps.seg.capacity));
    }
    ps.need_roll = true;
    if (!ps.inflight.empty()) return Status(Errc::kResourceExhausted, "waiting to roll");
    RDMQ_RETURN_IF_ERROR(Roll(ps));
  }
  storage::PatchBaseOffset(b.buf, Offset(ps.next_offset));
  b.base_offset = ps.next_offset;
  b.segment_base = ps.seg.base_offset;
  b.position = ps.write_pos;
  fabric::WorkRequest wr;
  wr.opcode = fabric::Opcode::kWriteImm;
  wr.tag = (kTagWrite << kTagKindShift) | ps.id;
  wr.signaled = false;
  wr.local = {b.buf, b.size, arena_.get()};
  wr.remote = ps.remote.get();
  wr.remote_offset = ps.seg.RemoteOffset(ps.write_pos);
  wr.imm = ps.lease_index;
  RDMQ_RETURN_IF_ERROR(PostData({&wr, 1}));
  ps.write_pos += b.size;
  ps.next_offset += b.count;
  return Status::Ok();
}

Status Core::PostAndWait(fabric::WorkRequest wr) {
  uint64_t op;
  {
    std::lock_guard lock(ops_mu_);
    op = next_op_++;
  }
  wr.tag = (kTagWait << kTagKindShift) | op;
  wr.signaled = true;
  RDMQ_RETURN_IF_ERROR(PostData({&wr, 1}));
  const auto deadline = Clock::now() + cfg_.client.request_timeout;
  while (true) {
    {
      std::lock_guard lock(ops_mu_);
      auto it = ops_done_.find(op);
      if (it != ops_done_.end()) {
        const std::error_code ec = it->second;
        ops_done_.erase(it);
        return ec ? Status(ec, "data-plane operation") : Status::Ok();
      }
    }
    if (Clock::now() > deadline) return Status(Errc::kTimeout, "data-plane operation timed out");
    if (!DrainQueues()) CpuRelax();
  }
}

Status Core::PostShared(PState& ps, Batch& b) {
  for (int attempt = 0;; ++attempt) {
    // Reserve.
    uint64_t* result =
        reinterpret_cast<uint64_t*>(acks_->data() + kScratchOffset + uint64_t{ps.ack_slot} * 64);
    fabric::WorkRequest fa;
    fa.opcode = fabric::Opcode::kFetchAdd;
    fa.local = {result, 8, acks_.get()};
    fa.remote = ps.remote.get();
    fa.remote_offset = ps.seg.reservation_offset;
    fa.operand = b.size;
    RDMQ_RETURN_IF_ERROR(PostAndWait(fa));
    const uint64_t r = std::atomic_ref<uint64_t>(*result).load(std::memory_order_acquire);
    if (r <= ps.seg.capacity && b.size <= ps.seg.capacity - r) {
      fabric::WorkRequest w;
      w.opcode = fabric::Opcode::kWrite;
      w.local = {b.buf, b.size, arena_.get()};
      w.remote = ps.remote.get();
      w.remote_offset = ps.seg.RemoteOffset(r);
      // The Commit RPC travels on another connection: the bytes must be in place first.
      RDMQ_RETURN_IF_ERROR(PostAndWait(w));
      b.segment_base = ps.seg.base_offset;
      b.position = r;
      protocol::CommitRequest req{ps.lease_id, ps.seg.base_offset, r, static_cast<uint32_t>(b.size), -1};
      const std::string bytes = protocol::Encode(req);
      uint64_t post_id;
      {
        std::lock_guard lock(ops_mu_);
        post_id = next_post_id_++;
      }
      b.post_id = post_id;
      PState* pp = &ps;
      Batch* bp = &b;
      // The response is handled by whoever drives progress next (never inside this call, which
      // holds the partition's lock).
      return conn_->CallAsync(Api::kCommit, bytes, [this, pp, bp, post_id](Result<std::string> res) {
        {
          std::lock_guard lock(ops_mu_);
          commit_results_.push_back(CommitResult{pp, bp, post_id, std::move(res)});
        }
        io_cv_.notify_all();
        NotifySleepers(sleepers_, wait_mu_, wait_cv_);
      });
    }
    // The reservation crossed the segment end: report it, then move to the next segment.
    if (b.size > ps.seg.capacity) {
      return Status(WireError::kRecordTooLarge, "a batch of " + std::to_string(b.size) +
                                                    " bytes does not fit a segment of " +
                                                    std::to_string(ps.seg.capacity));
    }
    protocol::CommitRequest req{ps.lease_id, ps.seg.base_offset, r, static_cast<uint32_t>(b.size), -1};
    auto cr = conn_->Call<protocol::CommitResponse>(Api::kCommit, req);
    if (!cr.ok() && !Retriable(cr.status())) return cr.status();
    const int64_t old_base = ps.seg.base_offset;
    const auto deadline = MonoNanos() + 4 * uint64_t{ps.lease_ms} * 1'000'000;
    while (ps.seg.base_offset == old_base) {
      protocol::LeaseRequest lr{ps.lease_id, 0};
      auto resp = conn_->Call<protocol::LeaseResponse>(Api::kRenewLease, lr);
      if (!resp.ok()) return resp.status();
      if (resp->segment.base_offset != old_base) {
        auto desc = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(resp->segment.region.bytes)));
        if (!desc.ok()) return desc.status();
        std::lock_guard lock(post_mu_);
        ps.remote.reset();
        auto rr = conn_->data()->Attach(*desc);
        if (!rr.ok()) return rr.status();
        ps.remote = std::move(*rr);
        ps.seg = std::move(resp->segment);
        break;
      }
      if (MonoNanos() > deadline) return Status(WireError::kStaleLocation, "the full segment was not rolled");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

void Core::HandleCommitResults() {
  std::vector<CommitResult> results;
  {
    std::lock_guard lock(ops_mu_);
    if (commit_results_.empty()) return;
    results.swap(commit_results_);
  }
  for (auto& cr : results) {
    PState* ps = cr.ps;
    PLock lock(this, *ps);
    // Only the response to a batch's latest post counts (a lost lease requeues and reposts).
    auto it = std::find(ps->inflight.begin(), ps->inflight.end(), cr.b);
    if (it == ps->inflight.end()) continue;
    Batch* b = *it;
    if (b->post_id != cr.post_id || b->complete) continue;
    Status s = cr.r.status();
    protocol::CommitResponse r;
    if (s.ok()) {
      auto d = protocol::DecodeResponse<protocol::CommitResponse>(
          std::as_bytes(std::span(cr.r->data(), cr.r->size())));
      if (d.ok()) {
        r = *d;
      } else {
        s = d.status();
      }
    }
    if (s.ok() && (r.flags & protocol::kCommitFlagSegmentFull) != 0)
      s = Status(WireError::kStaleLocation, "segment full");
    if (!s.ok()) {
      if (Retriable(s)) {
        LeaseLost(*ps, s);
      } else {
        ps->inflight.erase(it);
        CompleteBatch(*ps, b, s);
      }
      continue;
    }
    b->committed = true;
    ps->last_commit_ns = MonoNanos();
    if (r.base_offset >= 0) {  // completes in order, by CompleteCovered (from CheckAcks)
      b->base_offset = r.base_offset;
      b->offset_known = true;
    }
    CheckAcks(*ps);
  }
}

// ---------------------------------------------------------------------------------------------
// Acks and completion

void Core::CheckAcks(PState& ps) {
  if (ps.ack_block == nullptr) return;
  protocol::AckBlock a;
  if (protocol::DecodeAckBlock(ps.ack_block, &a) && a.generation != ps.ack_gen_seen) {
    ps.ack_gen_seen = a.generation;
    ps.last_ack = a;
    ps.have_ack = true;
    if (a.error != 0 || (a.flags & protocol::kAckLeaseRevoked) != 0) {
      // What the ack covers is committed; the rest is resent on a new lease.
      const Status why = a.error != 0 ? Status(static_cast<WireError>(a.error), "the broker refused a commit")
                                      : Status(WireError::kLeaseExpired, "lease revoked");
      CompleteCovered(ps);
      if (cfg_.mode == PartitionMode::kExclusive && a.error != 0 && !Retriable(why) && !ps.inflight.empty()) {
        // Not retriable (a bad batch): fail the first unacknowledged batch, resend the others.
        CompleteBatch(ps, ps.inflight.front(), why);
        ps.inflight.pop_front();
      }
      ps.have_ack = false;
      LeaseLost(ps, why);
      return;
    }
    ps.last_commit_ns = MonoNanos();
  }
  // The ack block is cumulative; a shared batch whose Commit response came after its ack is
  // covered by the ack seen before.
  if (ps.have_ack || cfg_.mode == PartitionMode::kShared) CompleteCovered(ps);
  PostSealed(ps);
  // linger 0: what accumulated behind the acknowledged batches goes now.
  if (cfg_.linger.count() == 0 && ps.open_batch != nullptr && ps.inflight.empty() && ps.sealed.empty())
    Seal(ps);
}

void Core::CompleteCovered(PState& ps) {
  const protocol::AckBlock& a = ps.last_ack;
  auto covered = [&](const Batch* b) {
    return b->segment_base == a.segment_base && b->position + b->size <= a.acked_position;
  };
  if (cfg_.mode == PartitionMode::kExclusive) {
    while (!ps.inflight.empty() && covered(ps.inflight.front())) {
      CompleteBatch(ps, ps.inflight.front(), Status::Ok());
      ps.inflight.pop_front();
    }
    return;
  }
  // Shared: a batch completes once its Commit succeeded and the cumulative ack covers it (its
  // offsets are assigned then). A batch in a segment older than the ack's is covered: the node
  // seals a segment only when everything in it is committed. In position order, stopping at the
  // first that cannot complete yet, so callbacks run in offset order even when Commit responses
  // arrive out of order.
  auto completable = [&](const Batch* b) {
    return b->committed &&
           (b->offset_known || (ps.have_ack && (b->segment_base < a.segment_base || covered(b))));
  };
  for (auto it = ps.inflight.begin(); it != ps.inflight.end();) {
    Batch* b = *it;
    if (b->complete) {
      it = ps.inflight.erase(it);
      continue;
    }
    if (!completable(b)) break;
    // Complete: the node wrote its offsets into its header (8 bytes at its position), which
    // is read through a read-only attachment of that segment (the write grant has no read right
    // and moves on with the lease).
    int64_t base = b->offset_known ? b->base_offset : -1;
    if (!b->offset_known) {
      auto rs = ReadSegment(ps, b->segment_base);
      if (rs.ok()) {
        const uint64_t off = storage::format::kSegmentHeaderSize + b->position;
        if (const std::byte* m = (*rs)->mapped(); m != nullptr) {
          base = coding::LoadBE<int64_t>(m + off);
        } else {
          std::byte* tmp = acks_->data() + kScratchOffset + uint64_t{ps.ack_slot} * 64 + 8;
          fabric::WorkRequest rd;
          rd.opcode = fabric::Opcode::kRead;
          rd.local = {tmp, 8, acks_.get()};
          rd.remote = *rs;
          rd.remote_offset = off;
          if (PostAndWait(rd).ok()) base = coding::LoadBE<int64_t>(tmp);
        }
      }
    }
    b->base_offset = base;
    CompleteBatch(ps, b, Status::Ok());
    it = ps.inflight.erase(it);
  }
  // Forget read attachments of segments no batch waits for any more.
  int64_t oldest = ps.seg.base_offset;
  for (const Batch* b : ps.inflight) oldest = std::min(oldest, b->segment_base);
  while (!ps.read_segs.empty() && ps.read_segs.begin()->first < oldest) {
    std::lock_guard lock(post_mu_);
    ps.read_segs.erase(ps.read_segs.begin());
  }
}

Result<const fabric::RemoteRegion*> Core::ReadSegment(PState& ps, int64_t base) {
  auto it = ps.read_segs.find(base);
  if (it != ps.read_segs.end()) return it->second.get();
  protocol::GetSegmentRequest req{ps.topic->name, ps.partition, base};
  RDMQ_ASSIGN_OR_RETURN(auto r, (conn_->Call<protocol::GetSegmentResponse>(Api::kGetSegment, req)));
  RDMQ_ASSIGN_OR_RETURN(auto d,
                        fabric::RegionDescriptor::Decode(std::as_bytes(std::span(r.segment.region.bytes))));
  std::lock_guard lock(post_mu_);
  RDMQ_ASSIGN_OR_RETURN(auto remote, conn_->data()->Attach(d));
  const fabric::RemoteRegion* out = remote.get();
  ps.read_segs[base] = std::move(remote);
  return out;
}

void Core::CompleteBatch(PState& ps, Batch* b, const Status& s) {
  if (b->complete) return;
  b->complete = true;
  if (b->state->done.load(std::memory_order_relaxed) == 0) {  // acks=0 reported it at post already
    b->state->status = s;
    if (s.ok()) b->state->base_offset = cfg_.acks == 0 ? -1 : b->base_offset;
  }
  if (!s.ok() && b->state->done.load(std::memory_order_relaxed) != 0) b->callbacks.clear();
  ps.completed.push_back(b);
}

void Core::FailAll(PState& ps, const Status& s) {
  for (Batch* b : ps.inflight) CompleteBatch(ps, b, s);
  for (Batch* b : ps.sealed) CompleteBatch(ps, b, s);
  ps.inflight.clear();
  ps.sealed.clear();
  if (ps.open_batch != nullptr) {
    Batch* b = ps.open_batch;
    ps.open_batch = nullptr;
    b->size = b->builder->Finish();
    b->count = b->builder->count();
    b->builder.reset();
    unacked_.fetch_add(1, std::memory_order_relaxed);
    CompleteBatch(ps, b, s);
  }
}

void Core::Finish(std::vector<Batch*>& done) {
  for (Batch* b : done) {
    SendFuture::State& st = *b->state;
    if (!st.status.ok()) {
      std::lock_guard lock(failed_mu_);
      if (failed_records_ == 0) first_failure_ = st.status;
      failed_records_ += static_cast<uint64_t>(st.records.size());
    }
    for (auto& [i, cb] : b->callbacks) {
      if (!st.status.ok()) {
        cb(st.status);
        continue;
      }
      RecordMetadata md;
      md.topic = std::string(st.topic);
      md.partition = st.partition;
      md.offset = st.base_offset < 0 ? -1 : st.base_offset + i;
      md.timestamp_ms = st.records[i].timestamp;
      md.serialized_key_size = st.records[i].key_size;
      md.serialized_value_size = st.records[i].value_size;
      cb(md);
    }
    st.done.store(1, std::memory_order_release);
    Chunk* c = b->chunk;
    delete b;
    bool release = false;
    {
      std::lock_guard lock(mem_mu_);
      release = --c->refs == 0;
    }
    if (release) ReleaseChunk(c);
    unacked_.fetch_sub(1, std::memory_order_acq_rel);
  }
  done.clear();
  NotifySleepers(sleepers_, wait_mu_, wait_cv_);
}

// ---------------------------------------------------------------------------------------------
// Progress

bool Core::DrainQueues() {
  if (polling_.test_and_set(std::memory_order_acquire)) return false;
  fabric::Completion wc[64];
  size_t total = 0;
  const size_t n = conn_->recv_cq()->Poll(wc);
  total += n;
  bool broken = false;
  for (size_t i = 0; i < n; ++i) {
    if (wc[i].status) broken = true;
  }
  if (n > 0 && !broken) {
    std::lock_guard lock(post_mu_);
    recv_owed_ += static_cast<uint32_t>(n);
    if (recv_owed_ >= 64) {
      std::vector<fabric::RecvRequest> rr(recv_owed_);
      if (conn_->data()->PostRecv(rr).ok()) recv_owed_ = 0;
    }
  }
  const size_t m = conn_->send_cq()->Poll(wc);
  total += m;
  if (m > 0) {
    std::lock_guard lock(ops_mu_);
    for (size_t i = 0; i < m; ++i) {
      const uint64_t kind = wc[i].tag >> kTagKindShift;
      const uint64_t low = wc[i].tag & ((uint64_t{1} << kTagKindShift) - 1);
      if (kind == kTagWait) {
        ops_done_[low] = wc[i].status;
      } else if (wc[i].status) {
        failed_parts_.push_back(static_cast<uint32_t>(low));
        if (wc[i].status == fabric::FabricErrc::kPeerGone) broken = true;
      }
    }
  }
  polling_.clear(std::memory_order_release);
  if (broken && !closing_.load() && !broken_logged_.exchange(true)) {
    RDMQ_LOG(kWarn, "producer", "the data connection to the broker broke").kv("broker", conn_->address());
  }
  return total > 0;
}

void Core::CheckConnection() {
  if (conn_->connected() || lost_.exchange(true)) return;
  const Status why(Errc::kUnavailable, "the broker at " + conn_->address() + " went away");
  RDMQ_LOG(kWarn, "producer", "lost the broker; failing every unacknowledged record")
      .kv("broker", conn_->address());
  std::vector<PState*> parts;
  {
    std::lock_guard lock(topics_mu_);
    parts = parts_;
  }
  for (PState* ps : parts) {
    PLock lock(this, *ps);
    ps->fatal = why;
    ps->open = false;
    FailAll(*ps, why);
  }
}

bool Core::Progress() {
  if (!lost_.load(std::memory_order_relaxed) && !conn_->connected()) CheckConnection();
  bool any = DrainQueues();
  HandleCommitResults();
  std::vector<uint32_t> failed;
  {
    std::lock_guard lock(ops_mu_);
    failed.swap(failed_parts_);
  }
  size_t nparts;
  {
    std::lock_guard lock(topics_mu_);
    nparts = parts_.size();
  }
  for (size_t i = 0; i < nparts; ++i) {
    PState* ps;
    {
      std::lock_guard lock(topics_mu_);
      ps = parts_[i];
    }
    const bool write_failed = std::find(failed.begin(), failed.end(), ps->id) != failed.end();
    if (!write_failed) {
      if (ps->ack_block == nullptr) continue;
      const uint64_t gen = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(ps->ack_block))
                               .load(std::memory_order_acquire);
      if (gen == ps->ack_gen_seen) continue;
    }
    PLock lock(this, *ps, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    CheckAcks(*ps);
    if (write_failed) LeaseLost(*ps, Status(WireError::kLeaseExpired, "a write to the segment failed"));
    any = true;
  }
  return any;
}

template <class Pred>
bool Core::WaitFor(Pred pred, Clock::time_point deadline) {
  if (pred()) return true;
  waiters_.fetch_add(1, std::memory_order_acq_rel);
  const auto spin_until = Clock::now() + cfg_.spin;
  bool ok = false;
  while (true) {
    if (pred()) {
      ok = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (Progress()) continue;
    if (now < spin_until) {
      CpuRelax();
      continue;
    }
    // Sleep. One sleeper at a time waits in the receive queue itself (an ack's immediate
    // wakes it, and it then processes the ack: no hand-off); others wait to be notified.
    const auto until = std::min(deadline, Clock::now() + std::chrono::milliseconds(1));
    if (!cq_sleeper_.test_and_set(std::memory_order_acquire)) {
      if (!pred()) (void)conn_->recv_cq()->Wait(until - Clock::now());
      cq_sleeper_.clear(std::memory_order_release);
      continue;
    }
    waiters_.fetch_sub(1, std::memory_order_acq_rel);
    io_cv_.notify_all();
    {
      std::unique_lock lock(wait_mu_);
      sleepers_.fetch_add(1, std::memory_order_acq_rel);
      if (!pred()) wait_cv_.wait_until(lock, until);
      sleepers_.fetch_sub(1, std::memory_order_acq_rel);
    }
    waiters_.fetch_add(1, std::memory_order_acq_rel);
  }
  waiters_.fetch_sub(1, std::memory_order_acq_rel);
  last_app_progress_ns_.store(MonoNanos(), std::memory_order_relaxed);
  return ok;
}

Status Core::Send(const ProducerRecord& r, SendCallback cb, SendFuture* fut) {
  if (closed_.load(std::memory_order_acquire))
    return Status(Errc::kFailedPrecondition, "the producer is closed");
  if (lost_.load(std::memory_order_relaxed)) {
    return Status(Errc::kUnavailable, "the broker at " + conn_->address() + " went away");
  }
  RDMQ_ASSIGN_OR_RETURN(TopicState * t, Topic(r.topic));
  int32_t part = r.partition;
  if (part < 0) {
    if (r.key) {
      part = PartitionForKey(*r.key, t->partitions);
    } else {
      part = t->sticky.load(std::memory_order_relaxed);
      if (part < 0 || part >= t->partitions) {
        part = static_cast<int32_t>(Random() % static_cast<uint32_t>(t->partitions));
        t->sticky.store(part, std::memory_order_relaxed);
      }
    }
  } else if (part >= t->partitions) {
    return Status(WireError::kUnknownPartition,
                  "topic '" + t->name + "' has " + std::to_string(t->partitions) +
                      " partitions; there is no partition " + std::to_string(part));
  }
  PState& ps = *t->parts[static_cast<size_t>(part)];
  storage::RecordInput in;
  in.key = r.key;
  in.value = r.value;
  std::vector<storage::HeaderInput> hdrs;
  if (!r.headers.empty()) {
    hdrs.reserve(r.headers.size());
    for (const auto& h : r.headers) hdrs.push_back({h.key, std::string_view(h.value)});
    in.headers = hdrs;
  }
  in.timestamp = r.timestamp_ms >= 0 ? TimestampMs(r.timestamp_ms) : WallMillis();

  PLock lock(this, ps);
  if (!ps.fatal.ok()) return ps.fatal;
  if (!ps.open && ps.sealed.empty() && ps.inflight.empty() && MonoNanos() >= ps.retry_at_ns) {
    // First use (or nothing queued after an error): open the lease now, so that errors such
    // as an unknown topic or a busy partition come back from this Send.
    Status s = OpenLease(ps);
    if (!s.ok()) {
      if (!Retriable(s)) ps.fatal = s;
      if (!Retriable(s) || s.is(WireError::kPartitionBusy)) return s;
      ps.retry_at_ns = MonoNanos() + 2'000'000;
    }
  }
  // Acks that arrived since the last look (cheap: one load of the ack block's generation).
  if (!ps.inflight.empty() && ps.ack_block != nullptr &&
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(ps.ack_block)).load(std::memory_order_acquire) !=
          ps.ack_gen_seen) {
    DrainQueues();
    CheckAcks(ps);
  }
  for (int attempt = 0;; ++attempt) {
    if (ps.open_batch == nullptr) {
      const size_t need = storage::kBatchHeaderSize + storage::EncodedRecordSize(in, 0, 0);
      RDMQ_RETURN_IF_ERROR(NewBatch(ps, need, lock.lock()));
      if (!ps.fatal.ok()) return ps.fatal;
      if (ps.open_batch == nullptr) continue;
    }
    Batch* b = ps.open_batch;
    const size_t before = b->builder->size();
    if (b->builder->Add(in)) {
      const uint32_t index = static_cast<uint32_t>(b->state->records.size());
      if (index == 64) {
        // A batch that gets this far is filling up: room for as many entries as records like
        // this one fill it, so that it does not regrow (and copy) a dozen times on the way.
        const size_t fit = b->capacity / std::max<size_t>(1, b->builder->size() - before);
        b->state->records.reserve(std::clamp<size_t>(fit, 128, 65536));
      }
      b->state->records.push_back({in.timestamp.value(), r.key ? static_cast<uint32_t>(r.key->size()) : 0u,
                                   r.value ? static_cast<uint32_t>(r.value->size()) : 0u});
      if (cb) b->callbacks.emplace_back(index, std::move(cb));
      if (fut != nullptr) *fut = SendFuture(b->state, index);
      const size_t size = b->builder->size();
      if (size >= cfg_.batch_size || b->capacity - size < size - before) {
        Seal(ps);  // full, or the next record like this one would not fit
      } else if (cfg_.linger.count() == 0) {
        // linger 0: send at once when nothing is in flight; otherwise records batch up until
        // the ack of what is in flight arrives (seen by the next Send or by the I/O thread).
        if (ps.inflight.empty() && ps.sealed.empty()) Seal(ps);
      } else if (MonoNanos() - b->created_ns >= static_cast<uint64_t>(cfg_.linger.count()) * 1000) {
        Seal(ps);
      }
      break;
    }
    if (b->builder->count() == 0 || attempt > 1) {
      // Not even one record fits a fresh batch: it is too large for the broker.
      const size_t need = storage::kBatchHeaderSize + storage::EncodedRecordSize(in, 0, 0);
      return Status(WireError::kRecordTooLarge,
                    "a record of " + std::to_string(need) +
                        " bytes (with the batch header) exceeds max.message.bytes " +
                        std::to_string(t->max_message_bytes) + " of topic '" + t->name + "'");
    }
    Seal(ps);
  }
  app_active_.store(true, std::memory_order_relaxed);
  return Status::Ok();
}

Status Core::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<PState*> parts;
  {
    std::lock_guard lock(topics_mu_);
    parts = parts_;
  }
  for (PState* ps : parts) {
    PLock lock(this, *ps);
    Seal(*ps);
    PostSealed(*ps);
  }
  if (!WaitFor([&] { return unacked_.load(std::memory_order_acquire) == 0; }, deadline)) {
    return Status(Errc::kTimeout, std::to_string(unacked_.load()) + " batches still unacknowledged after " +
                                      std::to_string(timeout.count()) + " ms");
  }
  std::lock_guard lock(failed_mu_);
  if (failed_records_ == 0) return Status::Ok();
  Status first =
      first_failure_.WithContext(std::to_string(failed_records_) + " records failed since the last flush");
  failed_records_ = 0;
  first_failure_ = Status::Ok();
  return first;
}

Status Core::Close(std::chrono::milliseconds timeout) {
  if (closed_.exchange(true)) return Status(Errc::kFailedPrecondition, "the producer is already closed");
  Status s = Flush(timeout);
  std::vector<PState*> parts;
  {
    std::lock_guard lock(topics_mu_);
    parts = parts_;
  }
  for (PState* ps : parts) {
    PLock lock(this, *ps);
    if (ps->open) {
      (void)conn_->Call<protocol::Empty>(Api::kReleaseLease, protocol::LeaseRequest{ps->lease_id, 0});
      ps->open = false;
    }
    FailAll(*ps, Status(Errc::kCancelled, "the producer closed before the record was acknowledged"));
  }
  closing_.store(true);
  io_cv_.notify_all();
  if (io_.joinable() && io_.get_id() != std::this_thread::get_id()) io_.join();
  // Nothing is outstanding any more: let go of the broker now, even while futures live on.
  for (PState* ps : parts) {
    std::lock_guard lock(ps->mu);
    std::lock_guard plock(post_mu_);
    ps->remote.reset();
    ps->read_segs.clear();
    ps->ack_grant.reset();
  }
  conn_.reset();
  return s;
}

// ---------------------------------------------------------------------------------------------
// The I/O thread

void Core::Tick(uint64_t now) {
  std::vector<PState*> parts;
  {
    std::lock_guard lock(topics_mu_);
    parts = parts_;
  }
  const uint64_t linger_ns = static_cast<uint64_t>(cfg_.linger.count()) * 1000;
  for (PState* ps : parts) {
    PLock lock(this, *ps, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    if (ps->open_batch != nullptr && now - ps->open_batch->created_ns >= linger_ns) Seal(*ps);
    if (!ps->open && !ps->sealed.empty() && ps->fatal.ok()) {
      if (ps->lost_since_ns != 0 &&
          now - ps->lost_since_ns > static_cast<uint64_t>(cfg_.delivery_timeout.count()) * 1'000'000) {
        FailAll(*ps, Status(Errc::kTimeout, "delivery.timeout.ms passed without a lease for " +
                                                ps->topic->name + "-" + std::to_string(ps->partition) + ": " +
                                                ps->last_error.ToString()));
        continue;
      }
      (void)Reopen(*ps);
    } else if (!ps->sealed.empty()) {
      PostSealed(*ps);
    }
    // Keep an idle lease alive.
    if (ps->open && ps->lease_ms > 0 && now - ps->last_commit_ns > uint64_t{ps->lease_ms} * 1'000'000 / 3) {
      auto r =
          conn_->Call<protocol::LeaseResponse>(Api::kRenewLease, protocol::LeaseRequest{ps->lease_id, 0});
      ps->last_commit_ns = now;
      if (!r.ok()) LeaseLost(*ps, r.status());
    }
  }
}

void Core::Prefault() {
  if (cfg_.mode != PartitionMode::kExclusive) return;
  constexpr uint64_t kAhead = 16 << 20;  // keep this much of the window ready ahead of writes
  constexpr uint64_t kStep = 4 << 20;
  std::vector<PState*> parts;
  {
    std::lock_guard lock(topics_mu_);
    parts = parts_;
  }
  for (PState* ps : parts) {
    for (int steps = 0; steps < 8; ++steps) {
      const std::byte* base = nullptr;
      uint64_t from = 0, to = 0;
      {
        std::unique_lock lock(ps->mu, std::try_to_lock);
        if (!lock.owns_lock() || !ps->open || !ps->remote) break;
        const std::byte* m = ps->remote->mapped();
        if (m == nullptr) break;
        const uint64_t cap = ps->seg.capacity;
        if (ps->prefault_to >= cap || ps->prefault_to >= ps->write_pos + kAhead) break;
        from = std::max(ps->prefault_to, ps->write_pos);
        to = std::min(cap, from + kStep);
        base = m;
        // Claimed now; a roll meanwhile resets it (and the range may then be unmapped: madvise
        // on it fails harmlessly or populates the new mapping).
        ps->prefault_to = to;
        from = ps->seg.RemoteOffset(from);
        to = ps->seg.RemoteOffset(to);
      }
      const uintptr_t page = 4096;
      const uintptr_t a = (reinterpret_cast<uintptr_t>(base) + from) & ~(page - 1);
      const uintptr_t b = (reinterpret_cast<uintptr_t>(base) + to) & ~(page - 1);
      if (b > a) (void)::madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE);
    }
  }
}

void Core::IoLoop() {
  const uint64_t linger_ns = static_cast<uint64_t>(cfg_.linger.count()) * 1000;
  const auto tick =
      std::chrono::nanoseconds(linger_ns > 0 ? std::min<uint64_t>(linger_ns, 1'000'000) : 1'000'000);
  uint64_t last_tick = 0;
  while (!closing_.load(std::memory_order_acquire)) {
    const uint64_t now = MonoNanos();
    if (now - last_tick >= static_cast<uint64_t>(tick.count())) {
      if (!lost_.load(std::memory_order_relaxed) && !conn_->connected()) CheckConnection();
      Tick(now);
      last_tick = now;
    }
    Prefault();
    if (app_active_.exchange(false, std::memory_order_relaxed))
      last_app_progress_ns_.store(now, std::memory_order_relaxed);
    const bool app_active = waiters_.load(std::memory_order_acquire) > 0 ||
                            now - last_app_progress_ns_.load(std::memory_order_relaxed) < 100'000;
    if (unacked_.load(std::memory_order_acquire) > 0 && !app_active) {
      if (Progress()) continue;
      if (!cq_sleeper_.test_and_set(std::memory_order_acquire)) {
        (void)conn_->recv_cq()->Wait(tick);
        cq_sleeper_.clear(std::memory_order_release);
      } else {
        std::unique_lock lock(io_mu_);
        io_cv_.wait_for(lock, tick);
      }
      Progress();
    } else {
      std::unique_lock lock(io_mu_);
      io_cv_.wait_for(lock, tick);
      HandleCommitResults();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Public surface

class ProducerImpl final : public Producer {
 public:
  explicit ProducerImpl(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  ~ProducerImpl() override {
    if (!core_->closed_.load()) (void)core_->Close(core_->cfg_.delivery_timeout);
  }
  SendFuture Send(const ProducerRecord& record) override {
    SendFuture f;
    Status s = core_->Send(record, nullptr, &f);
    if (!s.ok()) {
      auto st = std::make_shared<SendFuture::State>();
      st->status = s;
      st->done.store(1);
      return SendFuture(std::move(st), 0);
    }
    return f;
  }
  Status Send(const ProducerRecord& record, SendCallback callback) override {
    return core_->Send(record, std::move(callback), nullptr);
  }
  Status Flush(std::chrono::milliseconds timeout) override { return core_->Flush(timeout); }
  Status Close(std::chrono::milliseconds timeout) override { return core_->Close(timeout); }
  Result<int32_t> PartitionCount(std::string_view topic) override { return core_->PartitionCount(topic); }

 private:
  std::shared_ptr<Core> core_;
};

Result<std::unique_ptr<Producer>> Producer::Create(const ProducerConfig& config) {
  auto core = std::make_shared<Core>(config);
  RDMQ_RETURN_IF_ERROR(core->Init());
  return std::unique_ptr<Producer>(new ProducerImpl(std::move(core)));
}

// ---------------------------------------------------------------------------------------------
// SendFuture

Result<RecordMetadata> SendFuture::get() const {
  if (!state_) return Status(Errc::kFailedPrecondition, "get() on an empty SendFuture");
  if (state_->done.load(std::memory_order_acquire) == 0 && state_->core) {
    state_->core->WaitFor([&] { return state_->done.load(std::memory_order_acquire) != 0; },
                          Clock::time_point::max());
  }
  if (!state_->status.ok()) return state_->status;
  RecordMetadata md;
  md.topic = std::string(state_->topic);
  md.partition = state_->partition;
  md.offset = state_->base_offset < 0 ? -1 : state_->base_offset + index_;
  if (index_ < state_->records.size()) {
    md.timestamp_ms = state_->records[index_].timestamp;
    md.serialized_key_size = state_->records[index_].key_size;
    md.serialized_value_size = state_->records[index_].value_size;
  }
  return md;
}

bool SendFuture::ready() const { return state_ && state_->done.load(std::memory_order_acquire) != 0; }

bool SendFuture::wait_for(std::chrono::nanoseconds timeout) const {
  if (!state_) return false;
  if (ready()) return true;
  if (!state_->core) return false;
  return state_->core->WaitFor([&] { return state_->done.load(std::memory_order_acquire) != 0; },
                               Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
}

}  // namespace rdmq::producer
