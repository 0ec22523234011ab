// PartitionLog: reads by offset and by time, and the watermarks. See log_impl.h.
#include <string>

#include "log_impl.h"

namespace rdmq::storage {

using internal::Num;
using internal::Segment;

Result<ReadResult> PartitionLog::Read(Offset from, size_t max_bytes, ReadScope scope) const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  const bool to_end = scope == ReadScope::kCommitted || !m.opt_.replicated;
  const Offset start = m.LogStart();
  const Offset hwm = to_end ? m.Hwm() : m.Visible();
  if (from < start) {
    return Status(StorageErrc::kOffsetOutOfRange,
                  "offset " + Num(from) + " is below the log start " + Num(start) + " of " + m.dir_);
  }
  if (from > hwm) {
    return Status(StorageErrc::kOffsetOutOfRange,
                  "offset " + Num(from) + " is beyond the " +
                      (scope == ReadScope::kCommitted ? "log end " : "high watermark ") + Num(hwm) + " of " +
                      m.dir_);
  }
  ReadResult out;
  out.high_watermark = hwm;
  if (from == hwm) {
    if (!to_end) {
      out.segment = m.exposed_.segment;
      out.position = m.exposed_.position;
    } else {
      out.segment = m.active_->base();
      out.position = m.active_->committed;
    }
    out.next_offset = hwm;
    return out;
  }
  auto it = std::prev(m.segments_.upper_bound(from));
  while (from >= it->second->next_offset) ++it;  // from < hwm, so a later segment holds it
  const std::shared_ptr<Segment>& seg = it->second;
  const Position end = to_end ? seg->committed : m.VisibleEndIn(*seg);
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
    const Position end = m.VisibleEndIn(*seg);
    while (pos < end) {
      if (seg->Damaged(pos)) {
        return Status(StorageErrc::kCorruptBatch, seg->Where(pos) +
                                                      ": a damaged part of the segment (from position " +
                                                      Num(seg->corrupt_at) + ") hides the timestamps");
      }
      BatchHeader h;
      if (Status s = ValidateBatch(seg->bytes(pos, end), Validation::kCrc, &h); !s.ok()) {
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
  return impl_->closed_ ? kNoOffset : impl_->Visible();
}

Offset PartitionLog::LogEndOffset() const {
  MutexLock lock(impl_->mu_);
  return impl_->closed_ ? kNoOffset : impl_->Hwm();
}

Result<PartitionLog::Impl::Place> PartitionLog::Impl::Locate(Offset o) const {
  if (o == Hwm()) return Place{active_->base(), active_->committed};
  if (o < LogStart() || o > Hwm()) {
    return Status(StorageErrc::kOffsetOutOfRange, "offset " + Num(o) + " is outside [" + Num(LogStart()) +
                                                      ", " + Num(Hwm()) + "] of " + dir_);
  }
  auto it = std::prev(segments_.upper_bound(o));
  const Segment& seg = *it->second;
  if (o == seg.next_offset) return Place{seg.base(), seg.committed};  // the end of a sealed segment
  const internal::IndexEntry* entry = seg.IndexFloor(o);
  Position pos = entry ? entry->position : Position(0);
  Offset at = entry ? entry->offset : seg.base();
  while (at < o && pos < seg.committed) {
    BatchHeader h;
    if (Status s = DecodeBatchHeader(seg.bytes(pos, seg.committed), &h); !s.ok()) {
      return Status(StorageErrc::kCorruptBatch, seg.Where(pos) + ": " + std::string(s.context()));
    }
    pos += h.total_size();
    at = h.next_offset();
  }
  if (at != o) {
    return Status(Errc::kInvalidArgument,
                  "offset " + Num(o) + " is inside a batch of " + seg.Where(pos) + " (not a batch boundary)");
  }
  return Place{seg.base(), pos};
}

Status PartitionLog::Expose(Offset next) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  if (!m.opt_.replicated) return Status(Errc::kFailedPrecondition, "log " + m.dir_ + " is not replicated");
  if (next == m.exposed_.next) return Status::Ok();
  if (next < m.exposed_.next) {
    return Status(Errc::kInvalidArgument, "log " + m.dir_ + ": the exposed end only grows (it is " +
                                              Num(m.exposed_.next) + ", not " + Num(next) + ")");
  }
  if (next > m.Hwm()) {
    return Status(StorageErrc::kOffsetOutOfRange, "log " + m.dir_ + ": cannot expose " + Num(next) +
                                                      " past the committed end " + Num(m.Hwm()));
  }
  RDMQ_ASSIGN_OR_RETURN(Impl::Place at, m.Locate(next));
  m.exposed_ = Impl::Exposed{at.segment, at.position, next};
  m.Publish();
  return Status::Ok();
}

}  // namespace rdmq::storage
