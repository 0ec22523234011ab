// PartitionLog: one partition's append-only log of Kafka record batches on persistent memory (or
// a file emulating it), made crash-safe by write-ahead checkpoints. The formats are specified in
// docs/storage-format.md; format.h and record_batch.h are their code side.
//
// A log is a directory holding segment files `<base offset>.seg` (preallocated, mapped) and one
// `partition.slot` (a small block remote consumers READ to learn how far they may read).
//
// Writing, three ways:
//   * Append (local writer, exclusive): encodes records as one batch straight into the active
//     segment, assigns offsets, persists and publishes. Rolls to a new segment when full.
//   * Exclusive producer (remote): WRITEs batches with offsets it assigned itself at the tail of
//     the active segment (SegmentInfo says where), then Commit{kExclusive, segment, position,
//     length, expected next offset}: the log validates every batch (length, magic, CRC,
//     consecutive offsets; a compressed batch's records decompressed and walked), persists the
//     range and publishes it. Compressed batches are stored and served exactly as written.
//   * Shared producers (remote): reserve bytes with FETCH_ADD on the segment's reservation word
//     (Reserve() is the local equivalent), WRITE batches there with baseOffset = -1, then
//     Commit{kShared, segment, position, length}. The log validates the range and assigns offsets
//     in position order as each prefix of the segment becomes complete, patching baseOffset in
//     place (the CRC does not cover it). A reservation that crosses the segment end is reported by
//     committing it: the commit fails with kSegmentFull and the log seals the segment at that
//     reservation's start once everything before it is committed, then rolls. Reservations never
//     committed are filled with filler control batches by ExpireReservations once their lease
//     expired (the caller must have revoked the producers' write access by then).
//
// Durability (PersistMode): a commit returns only after its bytes are durable (pmem, msync) or
// visible (none); acknowledged data survives any crash of the matching kind, and a batch that was
// not acknowledged is either absent or complete after recovery, never half-written.
// Open() recovers: newest valid checkpoint, forward scan over batches with a valid CRC and
// consecutive assigned offsets, truncation of the rest (zeroed and persisted so that stale bytes
// can never reappear), then it accepts writes. It also finishes a TruncateTo that a crash
// interrupted after its commit point (the segment's truncation record).
//
// Threading: all methods are thread-safe (one internal mutex; commits are serialised). Remote
// peers use the mapped memory directly: they may FETCH_ADD reservation words, WRITE into
// reserved or credited ranges, and READ committed bytes, the seal record and the slot.
// Lifetime: pointers in SegmentInfo/SlotInfo/ReadResult stay valid while their `pin` is held (a
// segment deleted by retention stays mapped until its last pin is dropped) and never beyond the
// Env. The log must not outlive its Env.
//
// Errors (StorageErrc unless said otherwise), each with a context naming segment, position or
// offset: kBadMagic, kBadVersion, kCorruptHeader, kTruncatedFile, kSegmentMismatch (Open: the
// directory holds something that is not a valid log; nothing is changed on media);
// kSegmentTooLarge, kNoSpace (a new segment does not fit the device); kCorruptBatch,
// kMalformedBatch (bad bytes in a commit, or found by a read); kOffsetMismatch, kRangeConflict,
// kReservationConflict, kPositionOutOfRange (a commit that does not fit the log's state);
// kSegmentSealed, kSegmentFull, kUnknownSegment (a commit aimed at the wrong segment);
// kOffsetOutOfRange (a read outside [log start, high watermark]); kNotPmem (PersistMode::kPmem on
// a non-DAX mapping); kLogFailed (an earlier persist failed; the log refuses writes until
// reopened); I/O errors from the Env.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/storage/env.h"
#include "rdmq/storage/errors.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::storage {

struct LogOptions {
  TopicId topic{0};
  PartitionId partition{0};
  // Size of each new segment file, header included (>= 8 KiB; the data area is 4 KiB less).
  uint64_t segment_bytes = 64ull << 20;
  PersistMode persist = PersistMode::kMsync;
  // One sparse index entry (offset, position, max timestamp so far) per this many bytes.
  uint32_t index_interval_bytes = 4096;
  // A checkpoint is written after this many commits or this much time, whichever comes first.
  uint32_t checkpoint_every_commits = 64;
  uint32_t checkpoint_interval_ms = 10;
  // Retention (0 = unlimited): whole sealed segments are deleted by ApplyRetention.
  uint64_t retention_bytes = 0;
  int64_t retention_ms = 0;
  // How long a shared-mode reservation may stay uncommitted before ExpireReservations fills it.
  uint64_t reservation_lease_ns = 5'000'000'000;
  // Base offset of the first segment when the directory holds no log yet.
  Offset initial_offset{0};
  // Open() fails with kNotFound instead of creating a new log in an empty directory.
  bool must_exist = false;
  // A replicated partition's log (docs/replication.md): readers (the partition slot, Read,
  // HighWatermark, OffsetForTimestamp) see only up to the end Expose() released (the high
  // watermark, what every in-sync replica holds), not up to the committed end; retention keeps
  // what is not exposed yet. At open the exposed end is the one the slot showed last, if it is
  // still in the log, else the log start.
  bool replicated = false;
};

// Where a segment lives, for registering it with a fabric and handing it to producers.
struct SegmentInfo {
  Offset base_offset{0};
  std::string path;
  std::byte* mapping = nullptr;  // the whole file, MAP_SHARED
  size_t mapping_size = 0;
  int fd = -1;                                        // descriptor of the mapped file (owned by the log), or
                                                      // -1: open one with OpenMappedFileFd (env.h)
  FileId file_id;                                     // the mapped file, for OpenMappedFileFd
  uint64_t file_offset = 0;                           // file offset of mapping[0]
  uint64_t data_offset = format::kSegmentHeaderSize;  // file offset of position 0
  uint64_t capacity = 0;                              // bytes of the data area
  uint64_t reservation_word_offset = format::kReservationWord;  // file offset, 8-byte aligned
  bool sealed = false;
  PersistMode persist = PersistMode::kMsync;  // how this segment's commits are made durable
  Position committed{0};                      // end of the committed batches
  Offset next_offset{0};                      // offset after the last committed record
  std::shared_ptr<const void> pin;
  std::byte* data() const { return mapping + data_offset; }
};

struct SlotInfo {
  std::string path;
  std::byte* memory = nullptr;  // kSlotFileSize bytes; the slot is the first kSlotSize
  size_t size = 0;
  int fd = -1;  // as in SegmentInfo
  FileId file_id;
  uint64_t file_offset = 0;
  std::shared_ptr<const void> pin;
};

// The first offset a leader epoch wrote (docs/replication.md, "Leader epochs"): read from the
// partitionLeaderEpoch field of the batches.
struct EpochStart {
  int32_t epoch = 0;
  Offset start{0};
  bool operator==(const EpochStart&) const = default;
};

enum class CommitMode { kExclusive, kShared };

struct CommitRequest {
  CommitMode mode = CommitMode::kExclusive;
  Offset segment{0};  // base offset of the segment the bytes were written to
  Position position{0};
  uint64_t length = 0;
  // Exclusive mode: the offset after the range's last record, as the producer computed it
  // (kNoOffset: not checked). Ignored in shared mode.
  Offset expected_next_offset{kNoOffset};
};

// A committed range whose offsets are now assigned (shared mode: possibly another producer's).
struct CompletedRange {
  Offset segment{0};
  Position position{0};
  uint64_t length = 0;
  Offset base_offset{0};
  Offset next_offset{0};
  bool filler = false;  // filled by ExpireReservations, or replaced because its bytes went bad
};

struct CommitOutcome {
  // Exclusive: always true. Shared: true when this range's offsets were assigned by this call;
  // false when it waits for bytes before it (it completes in a later Commit/ExpireReservations).
  bool complete = false;
  Offset base_offset{kNoOffset};  // first offset of the range when complete
  Position committed{0};          // the segment's committed prefix after this call
  Offset high_watermark{0};
  // Every range completed by this call, in position order. Valid until the next call that
  // writes (Commit, Append, ExpireReservations, Roll).
  std::span<const CompletedRange> completed;
  // Committed ranges this call gave up on (their bytes changed after validation, or a roll
  // sealed the segment before them); offsets kNoOffset. Their producers must retry.
  std::span<const CompletedRange> dropped;
};

struct AppendResult {
  Offset base_offset{0};
  Offset next_offset{0};
  Offset segment{0};
  Position position{0};
  uint64_t bytes = 0;
};

struct Reservation {
  Offset segment{0};
  Position position{0};
  uint64_t length = 0;
  bool fits = false;  // position + length <= capacity
};

struct ExpireOutcome {
  uint64_t fillers = 0;  // filler batches written
  uint64_t filled_bytes = 0;
  bool rolled = false;
  std::span<const CompletedRange> completed;  // as in CommitOutcome
  // Committed but incomplete ranges given up on: swallowed by a filler because a hole before
  // them was too small for one, or cut off by the seal. Their producers must retry.
  std::span<const CompletedRange> dropped;
};

// How far a read may go: to what readers may see (the high watermark), or to the log end.
enum class ReadScope { kVisible, kCommitted };

struct ReadResult {
  // Whole batches; the first contains the requested offset (its base may be lower). Empty when
  // the requested offset is the high watermark.
  std::span<const std::byte> bytes;
  Offset segment{0};
  Position position{0};
  Offset next_offset{0};  // where the next read continues
  Offset high_watermark{0};
  std::shared_ptr<const void> pin;  // keeps `bytes` mapped
};

struct RetentionOutcome {
  uint64_t segments_deleted = 0;
  uint64_t bytes_deleted = 0;
  Offset log_start{0};
};

struct RecoveryStats {
  uint64_t segments = 0;
  uint64_t batches_scanned = 0;  // CRC-checked batches after the checkpoint
  uint64_t bytes_scanned = 0;
  uint64_t truncated_bytes = 0;  // nonzero bytes found past the recovery point (torn/stale)
  uint64_t zeroed_pages = 0;
  Position recovered_position{0};  // committed end of the active segment
  Offset next_offset{0};
  bool created = false;  // the directory held no log: a new one was created
  // A truncation (TruncateTo) had reached its commit point when the log went down, and this open
  // finished it (the log ends where the truncation cut it).
  bool truncation_finished = false;
  double seconds = 0;
};

class PartitionLog {
 public:
  // Opens (recovering) or creates the log in `dir`. Validation is read-only: when the directory
  // holds something invalid, Open fails and changes no byte on media.
  static Result<std::unique_ptr<PartitionLog>> Open(Env* env, const std::string& dir,
                                                    const LogOptions& options);
  // Closes if Close() was not called (errors are logged).
  ~PartitionLog();
  PartitionLog(const PartitionLog&) = delete;
  PartitionLog& operator=(const PartitionLog&) = delete;

  // Encodes `records` (at least one) as one batch at the end of the log. `batch` supplies producer
  // id/epoch/sequence, attributes and leader epoch; its base offset is ignored. A codec in the
  // attributes (bits 0-2) compresses the records, when that makes the batch smaller.
  Result<AppendResult> Append(std::span<const RecordInput> records, const BatchOptions& batch = {});
  // Appends one pre-encoded batch, rewriting its base offset to the log's next offset. A
  // compressed batch is stored as given once its records decompressed and checked out.
  Result<AppendResult> AppendBatch(std::span<const std::byte> batch);

  // Commits bytes written into a segment's data area by a remote (or local) producer.
  Result<CommitOutcome> Commit(const CommitRequest& request);
  // FETCH_ADD `length` on the active segment's reservation word (what a remote shared producer
  // does with an atomic). The caller writes its batches at the returned position, then commits.
  Result<Reservation> Reserve(uint64_t length);
  // Fills reservations that stayed uncommitted for longer than the lease with filler batches,
  // assigns offsets to what that completes, and seals + rolls a segment whose reservations
  // crossed its end once nothing below the end can still be committed. `now_ns` is
  // CLOCK_MONOTONIC (MonoNanos()); call it periodically.
  Result<ExpireOutcome> ExpireReservations(uint64_t now_ns);

  // Reads whole batches starting with the one containing `from`, up to `max_bytes` (at least one
  // batch), within one segment, up to what readers may see; in a replicated log kCommitted reads
  // up to the log end instead (the leader forwarding to its followers what they do not hold yet,
  // ReadResult::high_watermark then being the log end). CRCs are verified: a bad batch is
  // kCorruptBatch naming segment and position.
  Result<ReadResult> Read(Offset from, size_t max_bytes, ReadScope scope = ReadScope::kVisible) const;
  // The first offset whose record timestamp is >= `ts`, or kNoOffset if there is none.
  Result<Offset> OffsetForTimestamp(TimestampMs ts) const;
  Offset LogStartOffset() const;
  // What readers may read up to: the committed end, or in a replicated log the exposed end.
  Offset HighWatermark() const;
  // The offset after the last committed record (in a replicated log: the log end offset, which
  // may be past the high watermark).
  Offset LogEndOffset() const;
  // A replicated log: readers may read up to `next` from now on. `next` must be the start of a
  // committed batch or the committed end (kInvalidArgument otherwise), at most the committed end
  // (kOutOfRange) and not below the exposed end (kInvalidArgument: the high watermark only
  // grows). kFailedPrecondition for a log that is not replicated.
  Status Expose(Offset next);

  // The leader epoch stamped into the partitionLeaderEpoch field (bytes 12..15, which the batch
  // CRC does not cover) of every batch committed or appended from now on, fillers included; -1
  // (the default at every open) stamps nothing, and batches keep what their writer put there (a
  // follower keeps its leader's stamps). kInvalidArgument for an epoch below the latest one in
  // the log (epochs never go back along a log); nothing changes then.
  Status SetLeaderEpoch(int32_t epoch);
  // Which leader epoch wrote which part of the log: for each epoch, the first offset it wrote,
  // oldest first (batches stamped -1 belong to none; an epoch below the one before it starts no
  // entry). Rebuilt at open from the batch headers, kept by commits, truncation and retention
  // (an entry whose records retention deleted in part starts at the log start).
  std::vector<EpochStart> LeaderEpochs() const;

  // Cuts the log back to `end`: every record at and after `end` is gone for good, the log end
  // offset is `end`, and appends and commits continue there, in the segment holding `end`, which
  // becomes the active segment again (unsealed, writable; later segments are deleted). For a
  // follower whose log diverged from its new leader's (docs/replication.md, "Failover").
  // `end` must be a batch boundary: the first offset of a committed batch (kInvalidArgument
  // otherwise), or the log end offset (a no-op); within [log start, log end] (kOffsetOutOfRange);
  // in a replicated log not below the exposed end (kInvalidArgument: exposed records are never
  // taken back). kReservationConflict while shared-mode reservations or pending ranges are
  // outstanding in the active segment (the caller revokes the producers first, then expires their
  // reservations or rolls). A crash at any moment leaves a log that reopens either as it was or
  // truncated, and once this returned OK, truncated; an I/O failure past the commit point fails
  // the log (kLogFailed from then on) and the next Open finishes the truncation
  // (docs/storage-format.md, "Truncation"). The active segment's SegmentInfo (mapping included)
  // may change: fabrics register it again. Readers must not hold or read what is truncated.
  Status TruncateTo(Offset end);

  // Seals the active segment at its committed end and starts a new one (no-op when the active
  // segment is empty). Shared ranges not yet complete are dropped (their commits then fail with
  // kSegmentSealed).
  Status Roll();
  // Makes the file of the next segment ahead of the roll that needs it (docs/storage-format.md,
  // "The spare segment"): a zeroed, allocated file of the next segment's size named
  // `spare.seg.tmp` (a name Open deletes), its pages read into the page cache in 1 MiB steps,
  // yielding between them. The next roll then only writes a header into it and renames it, and
  // the new segment's first writes find their pages made, instead of paying for allocating and
  // zeroing them on the data path. Returns false, doing nothing, unless the log is writable, no
  // spare exists yet and the device has room for two more segments (when to ask is the caller's
  // policy). The allocation runs without the log's lock (commits go on meanwhile). For a
  // background thread; an overlapping call returns false. Close waits for a call under way (its
  // warming stops early) and deletes what it made.
  Result<bool> PrepareSpare();
  // Whether a spare segment is ready for the next roll.
  bool HasSpare() const;
  // Deletes whole sealed segments beyond the retention limits (never the active one).
  Result<RetentionOutcome> ApplyRetention(TimestampMs now);
  // Writes a checkpoint of the active segment now.
  Status Checkpoint();
  // Checkpoints, marks the slot closed and unmaps. Later calls fail with kFailedPrecondition.
  Status Close();

  SegmentInfo ActiveSegment() const;
  std::vector<SegmentInfo> Segments() const;
  SlotInfo Slot() const;
  const RecoveryStats& recovery() const;
  const std::string& dir() const;
  // The options now in force (a copy: Reconfigure may replace them at any time).
  LogOptions options() const;

  // Replaces the options of the open log (topic and partition must stay the same; initial_offset
  // and must_exist only matter to Open and are kept). What applies when:
  //   * retention_bytes, retention_ms: the next ApplyRetention.
  //   * checkpoint_every_commits, checkpoint_interval_ms: the next commit or append.
  //   * reservation_lease_ns: the next ExpireReservations (reservations already made included).
  //   * segment_bytes, persist, index_interval_bytes: segments created from now on (the next
  //     roll); the active segment keeps its size, persistence mode and index interval until it is
  //     sealed, and SegmentInfo::persist says which mode a segment uses. Reopening the log applies
  //     persist and index_interval_bytes to every segment it opens.
  // kInvalidOptions (nothing changed) for another topic/partition or sizes Open would refuse;
  // kFailedPrecondition after Close.
  Status Reconfigure(const LogOptions& options);

  class Impl;

 private:
  explicit PartitionLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmq::storage
