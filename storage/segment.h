// Internal: one segment file of a partition log (header, data area, in-memory index and state).
// Guarded by the owning PartitionLog's mutex; not thread-safe on its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/storage/env.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::storage::internal {

// "No timestamp yet" for max-timestamp tracking.
inline constexpr TimestampMs kNoTimestamp = TimestampMs::min();
// "None" for a position (no damage, no crossing reservation).
inline constexpr Position kNoPosition = Position::max();

struct IndexEntry {
  Offset offset;  // base offset of the batch at `position`
  Position position;
  TimestampMs max_ts_before;  // max timestamp of every batch before `position` in this segment
};

// The first batch of each leader epoch in a segment, in order (LeaderEpochStart in log.h): a
// batch stamped with an epoch above the last one noted starts an entry; unstamped batches (-1)
// and lower epochs add none.
void NoteEpoch(std::vector<EpochStart>* epochs, const BatchHeader& h);

// A shared-mode range that was validated but waits for the bytes before it.
struct PendingRange {
  uint64_t length = 0;  // bytes
  int64_t offsets = 0;  // number of offsets its batches occupy
  bool filler = false;
};

class Segment {
 public:
  Segment(std::string dir, const format::SegmentHeader& header, std::unique_ptr<MappedFile> file,
          PersistMode mode, uint32_t index_interval);

  // Creates `<dir>/<base>.seg` via a temporary name: allocate, write and persist the header, fsync,
  // rename, sync the directory. Nothing is left behind on failure. With a `spare` (a zeroed file of
  // the segment's size made ahead at `spare_path`, a name recovery deletes), that file is used
  // instead of allocating one: the header goes into it and it is renamed.
  static Result<std::unique_ptr<Segment>> Create(Env* env, const std::string& dir,
                                                 const format::SegmentHeader& header, PersistMode mode,
                                                 uint32_t index_interval,
                                                 std::unique_ptr<MappedFile> spare = nullptr,
                                                 const std::string& spare_path = "");

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  Offset base() const { return header_.base_offset; }
  const format::SegmentHeader& header() const { return header_; }
  uint64_t capacity() const { return header_.capacity; }       // bytes of the data area
  Position end() const { return Position(header_.capacity); }  // the data area's end
  std::byte* file_bytes() const { return file_->data(); }
  std::byte* data() const { return file_->data() + format::kSegmentHeaderSize; }
  std::byte* at(Position p) const { return data() + p.value(); }
  // The bytes from `p` to `until` (at most the data area's end).
  std::span<const std::byte> bytes(Position p, Position until) const { return {at(p), until - p}; }
  MappedFile& file() const { return *file_; }
  PersistMode mode() const { return mode_; }
  // The reservation word (a position: where the next reservation starts).
  Position reserved() const { return Position(reservation().load(std::memory_order_acquire)); }
  std::atomic_ref<uint64_t> reservation() const {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(file_->data() + format::kReservationWord));
  }
  // "segment 00000000000000000100.seg position 8192"
  std::string Where(Position position) const;

  // Makes [pos, pos+len) of the data area durable according to the persistence mode.
  Status PersistData(Position pos, uint64_t len) { return Persist(at(pos), len); }
  Status Persist(const void* addr, size_t len);

  // Records a committed batch: index entry every interval, max timestamp.
  void NoteBatch(Position pos, const BatchHeader& h);
  // The last index entry at or before `offset` (nullptr: start at position 0, offset base()).
  const IndexEntry* IndexFloor(Offset offset) const;
  // True when `position` lies in a part of the segment that recovery could not walk.
  bool Damaged(Position position) const { return position >= corrupt_at && position < damaged_end; }
  // Start position for a scan towards the first batch with max timestamp >= ts.
  Position IndexLookupTime(TimestampMs ts) const;

  // Writes the next checkpoint slot (alternating A/B) for the current committed state and
  // persists it.
  Status WriteCheckpoint();
  // Writes and persists the seal record at the current committed state.
  Status Seal();

  // --- recovery ---
  // Builds index and state of a sealed segment from its seal record by walking batch headers;
  // a header that does not fit marks corrupt_at (reads there report it) but is not fatal.
  void LoadSealed(const format::SealRecord& seal);
  struct ScanResult {
    Position start{0};  // the checkpointed position the CRC-checked scan started from
    uint64_t batches_scanned = 0;
    uint64_t bytes_scanned = 0;
  };
  // Recovers the unsealed (active) segment's state: newest valid checkpoint, header walk up to it,
  // then a CRC-checked scan over batches with consecutive assigned offsets.
  ScanResult RecoverActive();
  struct ZeroResult {
    uint64_t nonzero_bytes = 0;  // extent of the nonzero bytes past `committed`
    uint64_t zeroed_pages = 0;
  };
  // Zeroes every nonzero 4 KiB page of the data area past `committed` (the partial first page
  // from `committed` on), persists what it zeroed (`whole`: the whole tail, zero already or not),
  // resets the reservation word to `committed`.
  Result<ZeroResult> TruncateTail(bool whole = false);

  // --- truncation (PartitionLog::TruncateTo and the recovery that finishes one) ---
  // What a walk over batch headers from position 0 towards `to` found: it stops at `to` or at the
  // first header that does not decode or does not continue the offsets. Changes nothing.
  struct Walk {
    std::vector<IndexEntry> index;
    std::vector<EpochStart> epochs;
    TimestampMs max_ts = kNoTimestamp;
    Position next_index_pos{0};
    Position reached{0};  // where it stopped
    Offset next{0};       // the offset after the last batch it walked
  };
  Walk WalkHeaders(Position to) const;
  // Takes the index and epochs of a walk of the headers below `end`, where `next` (from a record
  // or checkpoint) is the offset after them. False when the walk did not reach `end` with `next`:
  // [corrupt_at, damaged_end) is damage, and nothing noted at or past `next` is kept.
  bool Adopt(Walk walk, Position end, Offset next);
  // Makes the in-memory state that of a segment cut at `end` with `next` the next offset: index
  // and max timestamp from `walk` (if it stopped short of `end`, [reached, end) is damage, as in
  // RecoverActive), unsealed, no shared-mode state. Touches nothing on media.
  void CutTo(Walk walk, Position end, Offset next, TimestampMs max_ts_floor);
  // Writes and persists the truncation record: the commit point of a truncation.
  Status WriteTruncationRecord(const format::TruncationRecord& r);
  // Finishes a truncation whose record is durable, with the state already cut (CutTo). Each step
  // is persisted before the next: clear the seal record; zero the tail past `committed` and reset
  // the reservation word (TruncateTail, persisting the whole tail); write the cut state into both
  // checkpoint slots, with sequences above theirs; clear the truncation record. Until the last step,
  // recovery redoes them all. Nothing is skipped for being zero already: after a process crash
  // during an earlier attempt, zeroes in memory may not be durable yet.
  Result<ZeroResult> FinishTruncation();

  // State, owned by the log (guarded by its mutex).
  Position committed{0};  // end of the committed batches
  Offset next_offset{0};
  TimestampMs max_ts = kNoTimestamp;
  bool sealed = false;
  Position corrupt_at = kNoPosition;  // [corrupt_at, damaged_end): batches recovery could not walk
  Position damaged_end{0};
  uint64_t checkpoint_seq = 0;
  uint32_t commits_since_checkpoint = 0;
  uint64_t last_checkpoint_ns = 0;
  std::vector<IndexEntry> index;
  std::vector<EpochStart> epochs;  // NoteEpoch, by NoteBatch
  // Shared mode.
  std::map<Position, PendingRange> pending;  // by start position
  Position crossing = kNoPosition;           // start of the reservation that crossed the end, if known
  std::deque<std::pair<uint64_t, Position>> samples;  // (time ns, reservation word)
  Position boundary_in_capacity{0};                   // largest sampled word value <= capacity

 private:
  std::string dir_;
  std::string name_;
  std::string path_;
  format::SegmentHeader header_;
  std::unique_ptr<MappedFile> file_;
  PersistMode mode_;
  uint32_t interval_;
  Position next_index_pos_{0};
};

}  // namespace rdmq::storage::internal
