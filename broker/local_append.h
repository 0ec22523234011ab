// LocalAppender: record batches the broker received itself (the Kafka listener's Produce)
// appended to a partition as one more shared writer (docs/kafka-protocol.md, "Produce"): the
// batches are checked, space is reserved on the active segment's reservation word like a remote
// shared producer's FETCH_ADD, the bytes are copied there and committed in shared mode, so they
// take their place among rdmq's shared producers and the log assigns their offsets.
//
// While an rdmq producer holds the partition exclusively (and is not idle) the append is refused
// with PARTITION_BUSY; while the broker keeps appending, exclusive leases are refused in turn
// (Partition::LocalWriterActive).
//
// Idempotence follows Kafka's rules: a batch's producer id, epoch and sequences are checked
// against the partition's producer state before any space is reserved; a retry of one of the
// producer's last five batches is answered with the offset it was stored at.
//
// Threading: Append runs under the partition's lock.
#pragma once

#include <functional>
#include <span>

#include "counters.h"
#include "lease_manager.h"
#include "partition.h"
#include "publisher.h"
#include "rdmq/common/status.h"

namespace rdmq::broker::internal {

// Pages of a segment to populate for write (madvise MADV_POPULATE_WRITE) before appends reach
// them; `pin` keeps the mapping alive until it is done.
struct LocalPrefault {
  std::byte* begin = nullptr;
  size_t length = 0;
  std::shared_ptr<const void> pin;
  // Populates the range (whole pages inside it); a range unmapped meanwhile fails harmlessly.
  void Run() const;
};

struct LocalAppendResult {
  Status status;  // a WireError (or the log's error): nothing was stored
  // The bytes were written into the log (set before anything can fail after that): a failure
  // now left a filler there. A failure without it changed nothing, not even producer state.
  bool wrote = false;
  bool pending = false;           // accepted: the base offset comes through `done` later
  bool duplicate = false;         // already stored (idempotence)
  Offset base_offset{kNoOffset};  // when complete (or a duplicate whose offset is remembered)
  Offset log_start{kNoOffset};
  // The next stretch of the segment ahead of this append, for the caller to populate off the
  // partition's lock, on another thread where it has one (empty when nothing is due).
  LocalPrefault prefault;
};

class LocalAppender {
 public:
  LocalAppender(LeaseManager& leases, Publisher& publisher, Counters& counters)
      : leases_(leases), publisher_(publisher), n_(counters) {}

  // Appends `batches` (one or more whole RecordBatch v2, as a client sent them). When the range's
  // offsets cannot be assigned yet (a shared producer's reservation before it is still open) the
  // result is `pending` and `done` is called (under the partition's lock) once they are, or with
  // the error if the range is dropped.
  LocalAppendResult Append(Partition& p, std::span<const std::byte> batches,
                           std::function<void(Result<Offset>)> done) REQUIRES(p.mu);
  // The same for several requests' batches at once, stored back to back as one range (one
  // reservation, one commit: one persist in durable mode), in the order given: the checks apply
  // to all of them together (one producer, sequences continuing from one part to the next), and
  // the base offset is the first part's; the next part's records follow the previous part's.
  LocalAppendResult Append(Partition& p, std::span<const std::span<const std::byte>> parts,
                           std::function<void(Result<Offset>)> done) REQUIRES(p.mu);

 private:
  // The batches' producer and sequences, checked against the producer state.
  struct Identity {
    ProducerId producer_id = kNoProducerId;
    int16_t epoch = -1;
    int32_t first_sequence = -1;
    int32_t last_sequence = -1;
  };
  using ByteSpan = std::span<const std::byte>;
  Status Check(Partition& p, std::span<const ByteSpan> parts, Identity* who, LocalAppendResult* dup)
      REQUIRES(p.mu);
  // One part's batches: CRCs, sizes, one producer, sequences continuing across parts.
  static Status CheckPart(Partition& p, ByteSpan batches, uint64_t max, Identity* who, bool* first_batch,
                          int32_t* next_sequence) REQUIRES(p.mu);
  // The batches' producer id, epoch and sequences against the partition's producer state.
  static Status CheckSequence(Partition& p, Identity* who, LocalAppendResult* dup) REQUIRES(p.mu);
  // Reserves `length` bytes on the active segment, rolling once if the segment is full.
  Result<storage::Reservation> Reserve(Partition& p, uint64_t length) REQUIRES(p.mu);
  // The stretch of `seg` to populate next, given that appends reached data position `end`.
  static LocalPrefault NextPrefault(Partition& p, const SegmentReg& seg, uint64_t end) REQUIRES(p.mu);

  LeaseManager& leases_;
  Publisher& publisher_;
  Counters& n_;
};

}  // namespace rdmq::broker::internal
