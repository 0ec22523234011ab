// PartitionLog: shared producers: reservations, shared commits, offsets assigned in position
// order, filler batches for expired reservations, the seal at a crossing reservation. See
// log_impl.h.
#include <algorithm>

#include "log_impl.h"
#include "rdmq/common/clock.h"

namespace rdmq::storage {

using internal::kNoPosition;
using internal::kNoTimestamp;
using internal::Num;
using internal::PendingRange;
using internal::Segment;

Status PartitionLog::Impl::AdvancePrefix(Segment& seg, bool fresh_valid, Position fresh_pos) {
  const Position start = seg.committed;
  Position cursor = start;
  Offset next = seg.next_offset;
  while (!seg.pending.empty() && seg.pending.begin()->first == cursor) {
    const Position pos = cursor;
    const PendingRange r = seg.pending.begin()->second;
    seg.pending.erase(seg.pending.begin());
    // A range validated in an earlier call may have been scribbled on since (its producer could
    // still write): check it again before publishing it.
    bool ok = true;
    if (!r.filler && !(fresh_valid && fresh_pos == pos)) {
      int64_t offsets = 0;
      Offset unused;
      ok = Validate(seg, pos, r.length, CommitMode::kShared, &unused, &offsets).ok() && offsets == r.offsets;
    }
    if (!ok) {
      // Its bytes went bad after the commit was accepted (the producer can still write there):
      // drop it. It becomes a hole that ExpireReservations fills once its lease is over.
      RDMQ_LOG(kWarn, "storage", "committed range changed before its offsets were assigned; dropping it")
          .kv("where", seg.Where(pos))
          .kv("length", r.length);
      Drop(seg, pos, r.length);
      break;
    }
    const Offset first = next;
    const Position end = pos + r.length;
    Position p = pos;
    while (p < end) {
      BatchHeader h;
      (void)DecodeBatchHeader(seg.bytes(p, end), &h);
      PatchBaseOffset(seg.at(p), next);
      h.base_offset = next;
      if (stamp_epoch_ >= 0) {
        PatchLeaderEpoch(seg.at(p), stamp_epoch_);
        h.leader_epoch = stamp_epoch_;
      }
      seg.NoteBatch(p, h);
      next = h.next_offset();
      p += h.total_size();
    }
    completed_.push_back(CompletedRange{seg.base(), pos, r.length, first, next, r.filler});
    cursor = end;
  }
  if (cursor == start) return Status::Ok();
  if (Status s = seg.PersistData(start, cursor - start); !s.ok()) return Fail(s);
  seg.committed = cursor;
  seg.next_offset = next;
  Publish();
  return MaybeCheckpoint(seg);
}

Status PartitionLog::Impl::FillGap(Segment& seg, Position from, Position to, uint64_t* fillers,
                                   uint64_t* bytes) {
  const TimestampMs ts = seg.max_ts != kNoTimestamp ? seg.max_ts : WallMillis();
  PendingRange r;
  r.length = to - from;
  r.filler = true;
  Position p = from;
  while (p < to) {
    uint64_t n = std::min<uint64_t>(to - p, kMaxBatchBytes);
    if (to - p - n != 0 && to - p - n < kMinFillerBytes) n -= kMinFillerBytes;  // leave a fillable rest
    RDMQ_RETURN_IF_ERROR(WriteFillerBatch({seg.at(p), n}, kNoOffset, ts));
    BatchHeader h;
    RDMQ_RETURN_IF_ERROR(DecodeBatchHeader({seg.at(p), n}, &h));
    r.offsets += h.offset_count();
    ++*fillers;
    p += n;
  }
  *bytes += r.length;
  seg.pending[from] = r;
  return Status::Ok();
}

Status PartitionLog::Impl::MaybeRollAtCrossing(Segment& seg, bool* rolled) {
  if (&seg != active_.get() || seg.sealed || seg.crossing == kNoPosition || seg.committed != seg.crossing) {
    return Status::Ok();
  }
  RDMQ_RETURN_IF_ERROR(RollLocked());
  if (rolled) *rolled = true;
  return Status::Ok();
}

namespace {

// True when [a, b) overlaps a pending (committed, not yet complete) range of `seg`.
bool OverlapsPending(const Segment& seg, Position a, Position b) {
  auto it = seg.pending.lower_bound(a);
  if (it != seg.pending.end() && it->first < b) return true;
  if (it != seg.pending.begin()) {
    --it;
    if (it->first + it->second.length > a) return true;
  }
  return false;
}

}  // namespace

Status PartitionLog::Impl::CommitShared(Segment& seg, Position pos, uint64_t len, CommitOutcome* out) {
  const Position cap = seg.end();
  if (pos >= cap) {
    // Reservations that filled the data area exactly leave no reservation straddling the end:
    // the first one starting at the end marks it instead, so the segment still seals and
    // rolls once everything before it is committed (otherwise every later reservation would
    // be told to retry on a next segment that never comes).
    if (pos == cap && seg.crossing == kNoPosition) {
      seg.crossing = cap;
      bool rolled = false;
      RDMQ_RETURN_IF_ERROR(MaybeRollAtCrossing(seg, &rolled));
    }
    return Status(StorageErrc::kSegmentFull, seg.Where(pos) + ": reservation starts past the segment end " +
                                                 Num(cap) + "; retry on the next segment");
  }
  if (pos < seg.committed) {
    return Status(StorageErrc::kRangeConflict,
                  seg.Where(pos) + ": already committed (up to " + Num(seg.committed) + ")");
  }
  if (len > cap - pos) {
    // The reservation that crossed the end: the segment will be sealed at its start.
    if (OverlapsPending(seg, pos, cap) || (seg.crossing != kNoPosition && seg.crossing != pos)) {
      return Status(StorageErrc::kRangeConflict,
                    seg.Where(pos) + ": crossing reservation overlaps other ranges");
    }
    seg.crossing = pos;
    bool rolled = false;
    RDMQ_RETURN_IF_ERROR(MaybeRollAtCrossing(seg, &rolled));
    return Status(StorageErrc::kSegmentFull, seg.Where(pos) + ": reservation of " + Num(len) +
                                                 " bytes crosses the segment end " + Num(cap) +
                                                 "; the segment ends here, retry on the next segment");
  }
  const Position word = seg.reserved();
  if (pos + len > word) {
    return Status(StorageErrc::kRangeConflict, seg.Where(pos) + ": range of " + Num(len) +
                                                   " bytes was not reserved (reservation word " + Num(word) +
                                                   ")");
  }
  if (OverlapsPending(seg, pos, pos + len)) {
    return Status(StorageErrc::kRangeConflict, seg.Where(pos) + ": overlaps a range already committed");
  }
  if (seg.crossing != kNoPosition && pos + len > seg.crossing) {
    return Status(StorageErrc::kRangeConflict,
                  seg.Where(pos) + ": beyond the end " + Num(seg.crossing) + " of this segment");
  }
  Offset unused;
  int64_t offsets = 0;
  RDMQ_RETURN_IF_ERROR(Validate(seg, pos, len, CommitMode::kShared, &unused, &offsets));
  seg.pending[pos] = PendingRange{len, offsets, false};
  RDMQ_RETURN_IF_ERROR(AdvancePrefix(seg, true, pos));
  for (const auto& c : completed_) {
    if (c.position == pos) {
      out->complete = true;
      out->base_offset = c.base_offset;
    }
  }
  bool rolled = false;
  return MaybeRollAtCrossing(seg, &rolled);
}

Result<Reservation> PartitionLog::Reserve(uint64_t length) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  if (length == 0) return Status(Errc::kInvalidArgument, "reservation of 0 bytes in " + m.dir_);
  RDMQ_RETURN_IF_ERROR(m.EnsureActive());
  Segment& seg = *m.active_;
  const uint64_t old = seg.reservation().fetch_add(length, std::memory_order_acq_rel);
  return Reservation{seg.base(), Position(old), length,
                     old <= seg.capacity() && length <= seg.capacity() - old};
}

Result<ExpireOutcome> PartitionLog::ExpireReservations(uint64_t now_ns) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  RDMQ_RETURN_IF_ERROR(m.EnsureActive());
  ExpireOutcome out;
  Segment& seg = *m.active_;
  const Position cap = seg.end();
  const Position word = seg.reserved();
  if (seg.samples.empty() || seg.samples.back().second != word) seg.samples.emplace_back(now_ns, word);
  if (word <= cap) seg.boundary_in_capacity = std::max(seg.boundary_in_capacity, word);
  // The newest sample at least a lease old: every reservation below its value is expired.
  const uint64_t lease = m.opt_.reservation_lease_ns;
  size_t idx = seg.samples.size();
  for (size_t i = 0; i < seg.samples.size() && seg.samples[i].first + lease <= now_ns; ++i) idx = i;
  if (idx == seg.samples.size()) return out;
  const Position horizon = seg.samples[idx].second;
  seg.samples.erase(seg.samples.begin(), seg.samples.begin() + static_cast<long>(idx));

  // Walk the uncommitted space below the horizon and turn expired holes into filler batches.
  // Holes between committed ranges and a trailing hole ending at a sampled word value consist of
  // whole reservations; a hole below kMinFillerBytes (a producer reserved less than any batch) is
  // widened over the committed range after it (dropping that range) or over bytes claimed from
  // the reservation word, or left for a later call.
  const Position limit = std::min(horizon, cap);
  Position pos = seg.committed;
  while (pos < limit) {
    auto it = seg.pending.lower_bound(pos);
    if (it != seg.pending.end() && it->first == pos) {
      pos += it->second.length;
      continue;
    }
    Position hole_end =
        (it != seg.pending.end() && it->first < limit) ? it->first : (horizon <= cap ? horizon : pos);
    if (hole_end <= pos) break;
    while (hole_end - pos < kMinFillerBytes) {
      auto next = seg.pending.find(hole_end);
      if (next != seg.pending.end()) {
        m.Drop(seg, next->first, next->second.length);
        hole_end += next->second.length;
        seg.pending.erase(next);
        continue;
      }
      uint64_t expected = hole_end.value();
      const uint64_t need = kMinFillerBytes - (hole_end - pos);
      if (hole_end + need <= cap && seg.reservation().compare_exchange_strong(
                                        expected, (hole_end + need).value(), std::memory_order_acq_rel)) {
        hole_end += need;
        continue;
      }
      break;
    }
    if (hole_end - pos < kMinFillerBytes) break;
    RDMQ_RETURN_IF_ERROR(m.FillGap(seg, pos, hole_end, &out.fillers, &out.filled_bytes));
    pos = hole_end;
  }
  RDMQ_RETURN_IF_ERROR(m.AdvancePrefix(seg, false, Position(0)));

  if (horizon > cap && !seg.sealed) {
    // Every reservation that fit was made before the horizon and has expired: end the segment at
    // the last reservation boundary we know of (the crossing reservation's start if it was
    // reported, else the largest sampled boundary), filling up to it, then roll.
    const Position target = seg.crossing != kNoPosition ? seg.crossing : seg.boundary_in_capacity;
    if (seg.pending.empty() && target > seg.committed && target - seg.committed >= kMinFillerBytes) {
      RDMQ_RETURN_IF_ERROR(m.FillGap(seg, seg.committed, target, &out.fillers, &out.filled_bytes));
      RDMQ_RETURN_IF_ERROR(m.AdvancePrefix(seg, false, Position(0)));
    }
    if (seg.committed == Position(0)) {
      // Nothing was committed in this segment (its reservations all expired, or the only one
      // crossed the end): start it over instead of sealing an empty segment.
      for (const auto& [p, r] : seg.pending) m.Drop(seg, p, r.length);
      seg.pending.clear();
      seg.reservation().store(0, std::memory_order_release);
      seg.samples.clear();
      seg.boundary_in_capacity = Position(0);
      seg.crossing = kNoPosition;
      m.Publish();
    } else {
      RDMQ_RETURN_IF_ERROR(m.RollLocked());
      out.rolled = true;
    }
  } else {
    bool rolled = false;
    RDMQ_RETURN_IF_ERROR(m.MaybeRollAtCrossing(seg, &rolled));
    out.rolled = rolled;
  }
  out.completed = m.completed_;
  out.dropped = m.dropped_;
  return out;
}

}  // namespace rdmq::storage
