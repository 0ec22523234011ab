// PartitionLog: exclusive writes (Append, AppendBatch, exclusive commits) and the batch
// validation every commit runs. See log_impl.h.
#include <cstring>

#include "log_impl.h"

namespace rdmq::storage {

using internal::Num;
using internal::Segment;

Result<std::shared_ptr<Segment>> PartitionLog::Impl::SegmentForCommit(Offset base) {
  auto it = segments_.find(base);
  if (it == segments_.end()) {
    return Status(StorageErrc::kUnknownSegment, "no segment with base offset " + Num(base) + " in " + dir_);
  }
  if (it->second->sealed) {
    return Status(StorageErrc::kSegmentSealed, it->second->Where(it->second->committed) +
                                                   ": sealed; the active segment starts at offset " +
                                                   Num(active_->base()));
  }
  return it->second;
}

Status PartitionLog::Impl::Validate(const Segment& seg, Position pos, uint64_t len, CommitMode mode,
                                    Offset* next, int64_t* offsets) const {
  Position p = pos;
  const Position end = pos + len;
  int64_t count = 0;
  while (p < end) {
    BatchHeader h;
    if (Status s = ValidateBatch(seg.bytes(p, end), Validation::kCompressedRecords, &h); !s.ok()) {
      return s.WithContext(seg.Where(p));
    }
    if (h.record_count <= 0 || h.last_offset_delta != h.record_count - 1) {
      return Status(StorageErrc::kMalformedBatch, seg.Where(p) + ": " + std::to_string(h.record_count) +
                                                      " records but lastOffsetDelta " +
                                                      std::to_string(h.last_offset_delta));
    }
    if (mode == CommitMode::kExclusive) {
      if (h.base_offset != *next) {
        return Status(
            StorageErrc::kOffsetMismatch,
            seg.Where(p) + ": batch base offset " + Num(h.base_offset) + ", the log expects " + Num(*next));
      }
      *next = h.next_offset();
    } else if (h.base_offset != kNoOffset) {
      return Status(StorageErrc::kOffsetMismatch, seg.Where(p) + ": shared-mode batch has base offset " +
                                                      Num(h.base_offset) + "; shared producers write -1");
    }
    count += h.offset_count();
    p += h.total_size();
  }
  if (offsets) *offsets = count;
  return Status::Ok();
}

Status PartitionLog::Impl::CommitExclusiveLocked(Position pos, uint64_t len, Offset expected_next,
                                                 bool validated) {
  Segment& seg = *active_;
  Offset next = seg.next_offset;
  if (!validated) {
    RDMQ_RETURN_IF_ERROR(Validate(seg, pos, len, CommitMode::kExclusive, &next, nullptr));
    if (expected_next != kNoOffset && expected_next != next) {
      return Status(StorageErrc::kOffsetMismatch, seg.Where(pos) + ": the range ends at offset " + Num(next) +
                                                      ", the producer says " + Num(expected_next));
    }
  }
  uint64_t expected_word = pos.value();
  if (!seg.reservation().compare_exchange_strong(expected_word, (pos + len).value(),
                                                 std::memory_order_acq_rel)) {
    return Status(StorageErrc::kReservationConflict, seg.Where(pos) + ": the reservation word moved to " +
                                                         Num(expected_word) +
                                                         " (a shared producer reserved)");
  }
  const Position end = pos + len;
  if (stamp_epoch_ >= 0) StampEpochs(seg, pos, end);
  if (Status s = seg.PersistData(pos, len); !s.ok()) return Fail(s);
  Position p = pos;
  while (p < end) {
    BatchHeader h;
    (void)DecodeBatchHeader(seg.bytes(p, end), &h);
    seg.NoteBatch(p, h);
    p += h.total_size();
    next = h.next_offset();
  }
  const Offset first = seg.next_offset;
  seg.committed = end;
  seg.next_offset = next;
  completed_.push_back(CompletedRange{seg.base(), pos, len, first, next, false});
  Publish();
  return MaybeCheckpoint(seg);
}

void PartitionLog::Impl::StampEpochs(Segment& seg, Position from, Position to) const {
  // Whole validated batches: each header is there and its length stays inside [from, to).
  for (Position p = from; p < to;) {
    BatchHeader h;
    if (!DecodeBatchHeader(seg.bytes(p, to), &h).ok()) return;
    PatchLeaderEpoch(seg.at(p), stamp_epoch_);
    p += h.total_size();
  }
}

Status PartitionLog::SetLeaderEpoch(int32_t epoch) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  if (epoch >= 0) {
    const std::vector<EpochStart> known = m.EpochsLocked();
    if (!known.empty() && epoch < known.back().epoch) {
      return Status(Errc::kInvalidArgument, "log " + m.dir_ + ": leader epoch " + std::to_string(epoch) +
                                                " is below epoch " + std::to_string(known.back().epoch) +
                                                ", which the log already holds");
    }
  }
  m.stamp_epoch_ = epoch < 0 ? -1 : epoch;
  return Status::Ok();
}

std::vector<EpochStart> PartitionLog::LeaderEpochs() const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu_);
  return m.EpochsLocked();
}

std::vector<EpochStart> PartitionLog::Impl::EpochsLocked() const {
  std::vector<EpochStart> out;
  for (const auto& [base, seg] : segments_) {
    for (const EpochStart& e : seg->epochs) {
      if (out.empty() || e.epoch > out.back().epoch) out.push_back(e);
    }
  }
  // Retention deletes whole segments: the oldest entry left may have started in one of them.
  if (!out.empty() && !segments_.empty() && out.front().start < LogStart()) out.front().start = LogStart();
  return out;
}

Result<AppendResult> PartitionLog::Append(std::span<const RecordInput> records, const BatchOptions& batch) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  if (records.empty()) return Status(Errc::kInvalidArgument, "append of zero records to " + m.dir_);
  const int codec_id = batch.attributes & kAttrCompressionMask;
  auto codec = compression::CodecFromId(codec_id);
  if (!codec.ok()) {
    return Status(StorageErrc::kUnsupportedBatch, "Append: attributes name compression codec " +
                                                      std::to_string(codec_id) + ", which does not exist");
  }
  RDMQ_RETURN_IF_ERROR(m.EnsureActive());
  for (int attempt = 0; attempt < 2; ++attempt) {
    Segment& seg = *m.active_;
    if (!seg.pending.empty() || seg.reserved() != seg.committed) {
      return Status(
          StorageErrc::kReservationConflict,
          seg.Where(seg.committed) + ": shared-mode reservations are outstanding; Append is exclusive");
    }
    const Position pos = seg.committed;
    BatchOptions o = batch;
    o.base_offset = seg.next_offset;
    BatchBuilder b(seg.at(pos), seg.end() - pos, o);
    bool all = true;
    for (const auto& r : records) {
      if (!b.Add(r)) {
        all = false;
        break;
      }
    }
    if (!all) {
      if (pos == Position(0)) {
        return Status(Errc::kInvalidArgument, "a batch of " + std::to_string(records.size()) +
                                                  " records does not fit an empty segment of " +
                                                  Num(seg.capacity()) + " bytes");
      }
      RDMQ_RETURN_IF_ERROR(m.RollLocked());
      continue;
    }
    size_t size = b.Finish();
    if (*codec != compression::Codec::kNone) {
      // Compressed in place when that makes it smaller; the plain bytes left past its new end
      // are zeroed, as everything past the committed end is.
      RDMQ_ASSIGN_OR_RETURN(const size_t packed, CompressBatchInPlace({seg.at(pos), size}, *codec));
      std::memset(seg.at(pos) + packed, 0, size - packed);
      size = packed;
    }
    const Offset first = seg.next_offset;
    RDMQ_RETURN_IF_ERROR(m.CommitExclusiveLocked(pos, size, kNoOffset, /*validated=*/true));
    return AppendResult{first, seg.next_offset, seg.base(), pos, size};
  }
  return Status(Errc::kInternal, "append did not fit a freshly rolled segment");
}

Result<AppendResult> PartitionLog::AppendBatch(std::span<const std::byte> batch) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  BatchHeader h;
  RDMQ_RETURN_IF_ERROR(ValidateBatch(batch, Validation::kCompressedRecords, &h));
  if (h.total_size() != batch.size()) {
    return Status(StorageErrc::kMalformedBatch, "AppendBatch takes exactly one batch; " +
                                                    Num(uint64_t{batch.size() - h.total_size()}) +
                                                    " bytes follow it");
  }
  if (h.record_count <= 0 || h.last_offset_delta != h.record_count - 1) {
    return Status(StorageErrc::kMalformedBatch, std::to_string(h.record_count) +
                                                    " records but lastOffsetDelta " +
                                                    std::to_string(h.last_offset_delta));
  }
  RDMQ_RETURN_IF_ERROR(m.EnsureActive());
  if (m.active_->end() - m.active_->committed < batch.size()) {
    if (m.active_->capacity() < batch.size()) {
      return Status(Errc::kInvalidArgument, "a batch of " + Num(uint64_t{batch.size()}) +
                                                " bytes does not fit a segment of " +
                                                Num(m.active_->capacity()));
    }
    RDMQ_RETURN_IF_ERROR(m.RollLocked());
  }
  Segment& seg = *m.active_;
  if (!seg.pending.empty() || seg.reserved() != seg.committed) {
    return Status(
        StorageErrc::kReservationConflict,
        seg.Where(seg.committed) + ": shared-mode reservations are outstanding; AppendBatch is exclusive");
  }
  const Position pos = seg.committed;
  std::memcpy(seg.at(pos), batch.data(), batch.size());
  const Offset first = seg.next_offset;
  PatchBaseOffset(seg.at(pos), first);
  RDMQ_RETURN_IF_ERROR(m.CommitExclusiveLocked(pos, batch.size(), kNoOffset, /*validated=*/true));
  return AppendResult{first, seg.next_offset, seg.base(), pos, batch.size()};
}

Result<CommitOutcome> PartitionLog::Commit(const CommitRequest& req) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  RDMQ_ASSIGN_OR_RETURN(auto segp, m.SegmentForCommit(req.segment));
  Segment& seg = *segp;
  const Position pos = req.position;
  const uint64_t len = req.length;
  CommitOutcome out;
  if (len == 0) return Status(Errc::kInvalidArgument, seg.Where(pos) + ": commit of 0 bytes");
  if (req.mode == CommitMode::kExclusive) {
    RDMQ_ASSIGN_OR_RETURN(out.base_offset, m.CommitExclusive(seg, pos, len, req.expected_next_offset));
    out.complete = true;
  } else {
    RDMQ_RETURN_IF_ERROR(m.CommitShared(seg, pos, len, &out));
  }
  out.committed = seg.committed;
  out.high_watermark = m.Hwm();
  out.completed = m.completed_;
  out.dropped = m.dropped_;
  return out;
}

Result<Offset> PartitionLog::Impl::CommitExclusive(Segment& seg, Position pos, uint64_t len,
                                                   Offset expected_next) {
  const Position cap = seg.end();
  if (pos > cap || len > cap - pos) {
    return Status(StorageErrc::kPositionOutOfRange,
                  seg.Where(pos) + ": range of " + Num(len) + " bytes runs past the segment end " + Num(cap));
  }
  if (pos != seg.committed) {
    return Status(
        StorageErrc::kRangeConflict,
        seg.Where(pos) + ": exclusive commit must start at the committed end " + Num(seg.committed));
  }
  if (!seg.pending.empty()) {
    return Status(StorageErrc::kReservationConflict,
                  seg.Where(pos) + ": shared-mode ranges are pending; exclusive commits are refused");
  }
  const Position word = seg.reserved();
  if (word != pos) {
    return Status(StorageErrc::kReservationConflict, seg.Where(pos) + ": the reservation word is " +
                                                         Num(word) + ", shared producers hold reservations");
  }
  const Offset first = seg.next_offset;
  RDMQ_RETURN_IF_ERROR(CommitExclusiveLocked(pos, len, expected_next, false));
  return first;
}

}  // namespace rdmq::storage
