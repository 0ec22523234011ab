// One partition as the producer sees it: its lease on the segment it writes, the ack block the
// broker writes back into, its batches (the open one, the AckTracker's queue and flight) and
// its place in the record arena.
//
// Threading: everything is guarded by `mu` (the annotations say so), except AckWatch, which
// pollers read without the lock to decide whether taking it is worth it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

#include "producer/ack_tracker.h"
#include "producer/arena.h"
#include "producer/batch.h"
#include "rdmq/common/biased_mutex.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

struct TopicState;

// The lease on the partition's active segment (docs/protocol.md section 4).
struct Lease {
  bool open = false;
  LeaseId id{0};
  uint32_t index = 0;  // lease_index: the immediate of our writes
  uint32_t ms = 0;     // its length
  protocol::SegmentLocation seg;
  std::unique_ptr<fabric::RemoteRegion> remote;  // the segment (exclusive: our window of it)
  Position write_pos{0};                         // exclusive: where the next batch goes
  Offset next_offset{0};                         // exclusive: offset of the next posted batch
  uint64_t last_confirmed_ns = 0;                // an ack, a commit or a renewal confirmed it
  uint32_t idle_ms = 0;                          // the broker releases it after this long unused
  uint64_t last_active_ns = 0;                   // opened, written, or renewed as active
  uint64_t retry_at_ns = 0;                      // lost: when to try opening one again
  Status last_error;                             // why it was lost, or why opening failed
  uint64_t opened = 0;                           // leases opened so far (picks the ack block)
  std::unique_ptr<fabric::Grant> ack_grant;      // the broker's right to write our ack block
  bool need_roll = false;                        // exclusive: the segment is full
  // shm, exclusive: the window is prefaulted (for write) up to this data-area position by the
  // I/O thread, ahead of write_pos, so the sending thread does not take page faults.
  Position prefault_to{0};
};

// The partition's ack block: 64 bytes of registered memory the broker WRITEs after each commit
// (a new generation each time). Written under the partition's lock; Pending() may be called
// without it.
class AckWatch {
 public:
  // The block for a new lease (each lease gets the next of the partition's blocks, so that a late
  // ack of an earlier lease is never taken for one of this lease). The block is cleared and
  // generation 0 taken as seen: the broker numbers a lease's acks from 1, and the generation an
  // earlier lease left in the block (four leases ago, or before a broker restart) must not hide
  // the ack of this lease that happens to reach the same number. The earlier lease's grant on
  // the block is revoked by then.
  void Attach(std::byte* block) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(block)).store(0, std::memory_order_relaxed);
    std::memset(block + 8, 0, 56);
    seen_.store(0, std::memory_order_relaxed);
    block_.store(block, std::memory_order_release);
  }
  bool attached() const { return block_.load(std::memory_order_relaxed) != nullptr; }
  // A hint, without the lock (one load of the generation): the broker wrote an ack not seen yet.
  bool Pending() const {
    std::byte* b = block_.load(std::memory_order_relaxed);
    return b != nullptr &&
           std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(b)).load(std::memory_order_acquire) !=
               seen_.load(std::memory_order_relaxed);
  }
  // Under the lock: the newest ack block if it is new (and whole: its CRC matches).
  bool Next(protocol::AckBlock* a) {
    if (!protocol::DecodeAckBlock(block_.load(std::memory_order_relaxed), a) ||
        a->generation == seen_.load(std::memory_order_relaxed)) {
      return false;
    }
    seen_.store(a->generation, std::memory_order_relaxed);
    return true;
  }

 private:
  std::atomic<std::byte*> block_{nullptr};
  std::atomic<uint64_t> seen_{0};
};

// shm, exclusive: how far ahead of the writes the I/O thread prefaults each partition's window.
// The prefaulted pages are page cache the producer holds mapped, so the reach is shared out: 16
// MiB each while the producer writes to at most four partitions, a share of 64 MiB in all beyond
// that, and never under 128 KiB (a producer over 1,000 partitions keeps at most 128 MiB ready,
// where a fixed 16 MiB each could reach 16 GB).
inline constexpr uint64_t kPrefaultAheadMax = uint64_t{16} << 20;
inline constexpr uint64_t kPrefaultAheadMin = uint64_t{128} << 10;
inline constexpr uint64_t kPrefaultBudget = uint64_t{64} << 20;
constexpr uint64_t PrefaultAhead(size_t partitions) {
  return std::clamp<uint64_t>(kPrefaultBudget / std::max<size_t>(partitions, 1), kPrefaultAheadMin,
                              kPrefaultAheadMax);
}

struct PState {
  PState(uint32_t id_, TopicState* topic_, PartitionId partition_, PartitionMode mode,
         std::chrono::nanoseconds delivery_timeout)
      : id(id_), topic(topic_), partition(partition_), mode(mode), tracker(mode, delivery_timeout) {}

  BiasedMutex mu;     // the sending thread takes it per record: biased toward it (biased_mutex.h)
  const uint32_t id;  // index in the producer's partition table; also its ack blocks' and scratch word's
  TopicState* const topic;
  const PartitionId partition;

  Status fatal GUARDED_BY(mu);  // a non-retriable error: every Send to this partition fails with it
  // partition.mode, until partition.busy=shared made this partition shared (it stays so).
  PartitionMode mode GUARDED_BY(mu);
  Lease lease GUARDED_BY(mu);
  AckWatch ack;
  AckTracker tracker GUARDED_BY(mu);
  int32_t next_sequence GUARDED_BY(mu) = 0;  // idempotence
  int16_t epoch_bumps GUARDED_BY(mu) = 0;    // epochs this partition moved on after a failed batch
  ChunkCursor chunks GUARDED_BY(mu);
  Batch* open_batch GUARDED_BY(mu) = nullptr;  // taking records
  // Its batches moved to another broker's Core (Core::Release): Sends answer NOT_LEADER.
  bool moved GUARDED_BY(mu) = false;
  // A thread is finishing this partition's completed batches (callbacks run in completion order:
  // Kafka's per-partition callback order); other threads leave theirs in the tracker for it.
  bool finishing GUARDED_BY(mu) = false;
  // Shared mode: read-only attachments of segments holding batches whose offsets are read back.
  std::map<Offset, std::unique_ptr<fabric::RemoteRegion>> read_segs GUARDED_BY(mu);
};

}  // namespace rdmq::producer
