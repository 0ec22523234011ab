// Internal: PartitionLog::Impl, shared by the log_*.cc files that implement PartitionLog
// (public contract: rdmq/storage/log.h). One file per concern:
//   log_open.cc      Open: read-only validation of the directory, then recovery and repair; Close
//   log_segments.cc  the segment chain: creating and rolling segments, the partition slot,
//                    checkpoints, retention, SegmentInfo/SlotInfo
//   log_append.cc    exclusive writes: Append, AppendBatch, exclusive commits, batch validation
//   log_shared.cc    shared producers: Reserve, shared commits, offset assignment in position
//                    order, fillers for expired reservations
//   log_read.cc      Read by offset, OffsetForTimestamp, the watermarks
//   log_truncate.cc  TruncateTo: cutting the log back to an offset, crash-safely
// Threading: every member below is guarded by mu_ except the constants set at construction and
// stats_, which Open writes before the log is shared; the segments' state is guarded by mu_ too.
// The options are guarded as well: Reconfigure replaces them while the log is open.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rdmq/common/log.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/storage/log.h"
#include "segment.h"

namespace rdmq::storage {

namespace internal {

inline constexpr const char* kSlotName = "partition.slot";
// The next segment's file made ahead (PrepareSpare); a `.seg.tmp` name, so Open deletes it.
inline constexpr const char* kSpareName = "spare.seg.tmp";

inline std::string Num(uint64_t v) { return std::to_string(v); }
inline std::string Num(int64_t v) { return std::to_string(v); }
template <class Tag, class Rep>
std::string Num(StrongInt<Tag, Rep> v) {
  return std::to_string(v.value());
}

}  // namespace internal

class PartitionLog::Impl {
 public:
  using Segment = internal::Segment;

  Impl(Env* env, std::string dir, const LogOptions& options)
      : env_(env), dir_(std::move(dir)), opt_(options) {}

  // --- open and recovery (log_open.cc) ---
  Status OpenLocked() REQUIRES(mu_);
  struct DirScan;
  Status ValidateDirectory(DirScan* scan) const REQUIRES(mu_);
  // kInvalidOptions for sizes the log cannot work with (Open and Reconfigure).
  static Status CheckOptions(const LogOptions& o);
  Status LoadSegments(DirScan& scan, std::shared_ptr<Segment>* last_rw, Position* scan_start) REQUIRES(mu_);
  // Opens the partition slot, or creates it (under a temporary name, then renamed).
  Status OpenSlot(const DirScan& scan) REQUIRES(mu_);

  // --- helpers ---
  Status CheckWritable() const REQUIRES(mu_) {
    if (closed_) return Status(Errc::kFailedPrecondition, "log " + dir_ + " is closed");
    if (!failed_.ok()) return Status(StorageErrc::kLogFailed, "log " + dir_ + ": " + failed_.ToString());
    return Status::Ok();
  }
  Status CheckOpen() const REQUIRES(mu_) {
    if (closed_) return Status(Errc::kFailedPrecondition, "log " + dir_ + " is closed");
    return Status::Ok();
  }
  Status Fail(const Status& s) REQUIRES(mu_) {
    if (failed_.ok()) {
      failed_ = s;
      RDMQ_LOG(kError, "storage", "log stops accepting writes").kv("dir", dir_).kv("error", s);
    }
    return s;
  }
  Offset LogStart() const REQUIRES(mu_) { return segments_.begin()->first; }
  Offset Hwm() const REQUIRES(mu_) { return active_->next_offset; }
  // What readers may read up to (the committed end, or in a replicated log the exposed end).
  Offset Visible() const REQUIRES(mu_) { return opt_.replicated ? exposed_.next : Hwm(); }
  // The end readers may read to in segment `seg`: its committed end, or in a replicated log the
  // exposed position in the exposed segment (nothing past it).
  Position VisibleEndIn(const Segment& seg) const REQUIRES(mu_) {
    if (!opt_.replicated) return seg.committed;
    if (seg.base() == exposed_.segment) return exposed_.position;
    return seg.base() < exposed_.segment ? seg.committed : Position(0);
  }
  // Where offset `o` starts: a committed batch's first offset, or the end of a segment (the
  // committed end of the log included). kInvalidArgument when `o` is inside a batch.
  struct Place {
    Offset segment{0};
    Position position{0};
  };
  Result<Place> Locate(Offset o) const REQUIRES(mu_);

  void Publish() REQUIRES(mu_);
  Status MaybeCheckpoint(Segment& seg) REQUIRES(mu_);
  Result<std::shared_ptr<Segment>> CreateSegment(Offset base) REQUIRES(mu_);
  // kSegmentTooLarge / kNoSpace when a new segment would not fit the device.
  Status CheckSpace(Offset base) const REQUIRES(mu_);
  Status EnsureActive() REQUIRES(mu_);
  Status RollLocked() REQUIRES(mu_);
  void Drop(const Segment& seg, Position pos, uint64_t len) REQUIRES(mu_) {
    dropped_.push_back(CompletedRange{seg.base(), pos, len, kNoOffset, kNoOffset, false});
  }
  void ClearOutcome() REQUIRES(mu_) {
    completed_.clear();
    dropped_.clear();
  }
  Result<std::shared_ptr<Segment>> SegmentForCommit(Offset base) REQUIRES(mu_);
  // Commit's two modes, after the common checks; `seg` is the active segment.
  Result<Offset> CommitExclusive(Segment& seg, Position pos, uint64_t len, Offset expected_next)
      REQUIRES(mu_);
  Status CommitShared(Segment& seg, Position pos, uint64_t len, CommitOutcome* out) REQUIRES(mu_);
  // Exclusive: validates batches in [pos, pos+len) of the active segment, persists, publishes.
  Status CommitExclusiveLocked(Position pos, uint64_t len, Offset expected_next, bool validated)
      REQUIRES(mu_);
  // Writes stamp_epoch_ into every batch of [from, to) (whole, validated batches).
  void StampEpochs(Segment& seg, Position from, Position to) const REQUIRES(mu_);
  // LeaderEpochs() for a caller that holds the lock.
  std::vector<EpochStart> EpochsLocked() const REQUIRES(mu_);
  // Shared: assigns offsets to pending ranges that now start at the committed prefix.
  Status AdvancePrefix(Segment& seg, bool fresh_position_valid, Position fresh_position) REQUIRES(mu_);
  Status FillGap(Segment& seg, Position from, Position to, uint64_t* fillers, uint64_t* bytes) REQUIRES(mu_);
  Status MaybeRollAtCrossing(Segment& seg, bool* rolled) REQUIRES(mu_);
  SegmentInfo Info(const std::shared_ptr<Segment>& s) const REQUIRES(mu_);
  // --- truncation (log_truncate.cc) ---
  // TruncateTo's checks: kOffsetOutOfRange, kInvalidArgument, kReservationConflict.
  Result<Place> CheckTruncation(Offset end) const REQUIRES(mu_);
  Status TruncateLocked(Offset end) REQUIRES(mu_);
  Status Validate(const Segment& seg, Position pos, uint64_t len, CommitMode mode, Offset* next,
                  int64_t* offsets) const REQUIRES(mu_);

  Env* const env_;
  const std::string dir_;
  // Serialises every call; the segments' state (Segment's public members) is guarded by it too.
  mutable Mutex mu_;
  LogOptions opt_ GUARDED_BY(mu_);  // as of Open, then as of the last Reconfigure
  std::map<Offset, std::shared_ptr<Segment>> segments_ GUARDED_BY(mu_);  // by base offset
  std::shared_ptr<Segment> active_ GUARDED_BY(mu_);                      // the last segment
  std::shared_ptr<MappedFile> slot_file_ GUARDED_BY(mu_);
  format::PartitionSlot slot_ GUARDED_BY(mu_);
  // A replicated log's exposed end (Expose): readers see [log start, next).
  struct Exposed {
    Offset segment{0};
    Position position{0};
    Offset next{0};
  };
  Exposed exposed_ GUARDED_BY(mu_);
  int32_t stamp_epoch_ GUARDED_BY(mu_) = -1;  // SetLeaderEpoch
  Status failed_ GUARDED_BY(mu_);             // the first failed persist; writes are refused after it
  bool closed_ GUARDED_BY(mu_) = false;
  // The next segment's file, made ahead by PrepareSpare (null: none), and whether a PrepareSpare
  // is making one now (outside the lock).
  std::unique_ptr<MappedFile> spare_ GUARDED_BY(mu_);
  bool spare_busy_ GUARDED_BY(mu_) = false;
  CondVar spare_done_;                    // notified when spare_busy_ turns false
  std::atomic<bool> spare_abort_{false};  // set by Close: a PrepareSpare under way stops warming
  std::string SparePath() const { return dir_ + "/" + internal::kSpareName; }
  // Deletes the spare, if any (a failure is logged: Open deletes it anyway).
  void DropSpare() REQUIRES(mu_);
  // What the current call completed and dropped (CommitOutcome/ExpireOutcome point into them).
  std::vector<CompletedRange> completed_ GUARDED_BY(mu_);
  std::vector<CompletedRange> dropped_ GUARDED_BY(mu_);
  // Written by Open before the log is shared, read-only afterwards.
  RecoveryStats stats_;
};

}  // namespace rdmq::storage
