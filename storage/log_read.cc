// PartitionLog: reads by offset and by time, and the watermarks. See log_impl.h.
#include <string>

#include "log_impl.h"

namespace rdmq::storage {

using internal::Num;
using internal::Segment;

Result<ReadResult> PartitionLog::Read(Offset from, size_t max_bytes) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  const Offset start = m.LogStart();
  const Offset hwm = m.Hwm();
  if (from < start) {
    return Status(StorageErrc::kOffsetOutOfRange,
                  "offset " + Num(from) + " is below the log start " + Num(start) + " of " + m.dir_);
  }
  if (from > hwm) {
    return Status(StorageErrc::kOffsetOutOfRange,
                  "offset " + Num(from) + " is beyond the high watermark " + Num(hwm) + " of " + m.dir_);
  }
  ReadResult out;
  out.high_watermark = hwm;
  if (from == hwm) {
    out.segment = m.active_->base();
    out.position = m.active_->committed;
    out.next_offset = hwm;
    return out;
  }
  auto it = std::prev(m.segments_.upper_bound(from));
  while (from >= it->second->next_offset) ++it;  // from < hwm, so a later segment holds it
  const std::shared_ptr<Segment>& seg = it->second;
  const Position end = seg->committed;
  // Walk batch headers from the closest index entry (a position recovery verified) to the batch
  // holding `from`, checking that offsets continue.
  const internal::IndexEntry* entry = seg->IndexFloor(from);
  Position pos = entry ? entry->position : Position(0);
  Offset expect = entry ? entry->offset : seg->base();
  auto damaged = [&](Position p) {
    return Status(StorageErrc::kCorruptBatch, seg->Where(p) + ": offset " + Num(from) +
                                                  " lies in a damaged part of the segment (from position " +
                                                  Num(seg->corrupt_at) + ")");
  };
  while (true) {
    if (seg->Damaged(pos)) return damaged(pos);
    if (pos >= end) {
      return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": offset " + Num(from) +
                                                    " not found before the committed end " + Num(end));
    }
    BatchHeader h;
    if (Status s = DecodeBatchHeader(seg->bytes(pos, end), &h); !s.ok()) {
      return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": " + std::string(s.context()));
    }
    if (h.base_offset != expect) {
      return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": batch base offset " +
                                                    Num(h.base_offset) + ", expected " + Num(expect));
    }
    if (h.next_offset() > from) break;
    pos += h.total_size();
    expect = h.next_offset();
  }
  const Position first = pos;
  Offset next = from;
  while (pos < end && !seg->Damaged(pos)) {
    BatchHeader h;
    Status s = ValidateBatch(seg->bytes(pos, end), Validation::kCrc, &h);
    if (s.ok() && h.base_offset != expect) {
      s = Status(StorageErrc::kCorruptBatch,
                 "batch base offset " + Num(h.base_offset) + ", expected " + Num(expect));
    }
    if (!s.ok()) {
      if (pos == first) {
        return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": " + std::string(s.context()));
      }
      break;  // return the good batches; the next read reports this one
    }
    if (pos > first && pos - first + h.total_size() > max_bytes) break;
    pos += h.total_size();
    next = h.next_offset();
    expect = next;
  }
  out.bytes = seg->bytes(first, pos);
  out.segment = seg->base();
  out.position = first;
  out.next_offset = next;
  out.pin = seg;
  return out;
}

Result<Offset> PartitionLog::OffsetForTimestamp(TimestampMs ts) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  for (const auto& [base, seg] : m.segments_) {
    if (seg->max_ts < ts) continue;
    Position pos = seg->IndexLookupTime(ts);
    while (pos < seg->committed) {
      if (seg->Damaged(pos)) {
        return Status(StorageErrc::kCorruptBatch, seg->Where(pos) +
                                                      ": a damaged part of the segment (from position " +
                                                      Num(seg->corrupt_at) + ") hides the timestamps");
      }
      BatchHeader h;
      if (Status s = ValidateBatch(seg->bytes(pos, seg->committed), Validation::kCrc, &h); !s.ok()) {
        return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": " + std::string(s.context()));
      }
      if (h.max_timestamp >= ts) {
        std::string buffer;  // a compressed batch's records
        RecordIterator it(h, {seg->at(pos), h.total_size()}, &buffer);
        RecordView r;
        while (it.Next(&r)) {
          if (h.base_timestamp + r.timestamp_delta >= ts) return h.base_offset + r.offset_delta;
        }
        if (!it.status().ok()) return it.status().WithContext(seg->Where(pos));
      }
      pos += h.total_size();
    }
  }
  return kNoOffset;
}

Offset PartitionLog::LogStartOffset() const {
  MutexLock lock(impl_->mu_);
  return impl_->closed_ ? kNoOffset : impl_->LogStart();
}

Offset PartitionLog::HighWatermark() const {
  MutexLock lock(impl_->mu_);
  return impl_->closed_ ? kNoOffset : impl_->Hwm();
}

}  // namespace rdmq::storage
