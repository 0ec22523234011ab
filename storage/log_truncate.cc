// PartitionLog: TruncateTo, cutting the log back to an offset (a follower whose log diverged from
// its new leader's). See log_impl.h; the protocol and why it is crash-safe are in
// docs/storage-format.md, "Truncation".
//
// Order (each step durable before the next):
//   checks, header walk of the segment holding the cut (nothing changed yet)
//   1. the truncation record in that segment's header            <- commit point
//   2. the later segments deleted, the directory synced
//   3. the seal record cleared
//   4. the tail past the cut zeroed, the reservation word reset
//   5. the cut state in both checkpoint slots, newer than what they held
//   6. the truncation record cleared
// Before 1 recovery finds the log as it was; from 1 until 6 it finds the record and does 2..6
// itself; after 6 the segment is an ordinary active segment whose checkpoint and zeroed tail end
// the log at the cut.
#include "log_impl.h"
#include "rdmq/common/clock.h"

namespace rdmq::storage {

using internal::Num;
using internal::Segment;

Status PartitionLog::TruncateTo(Offset end) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  return m.TruncateLocked(end);
}

Result<PartitionLog::Impl::Place> PartitionLog::Impl::CheckTruncation(Offset end) const {
  if (end > Hwm()) {
    return Status(StorageErrc::kOffsetOutOfRange,
                  "log " + dir_ + ": cannot truncate to " + Num(end) + ", past the log end " + Num(Hwm()));
  }
  if (end < LogStart()) {
    return Status(StorageErrc::kOffsetOutOfRange, "log " + dir_ + ": cannot truncate to " + Num(end) +
                                                      ", below the log start " + Num(LogStart()));
  }
  if (opt_.replicated && end < exposed_.next) {
    return Status(Errc::kInvalidArgument, "log " + dir_ + ": cannot truncate to " + Num(end) +
                                              ", below the exposed end " + Num(exposed_.next) +
                                              " (exposed records are never taken back)");
  }
  RDMQ_ASSIGN_OR_RETURN(Place at, Locate(end));  // kInvalidArgument inside a batch
  if (end == Hwm()) return at;
  const Segment& act = *active_;
  if (!act.sealed && (!act.pending.empty() || act.reserved() != act.committed)) {
    return Status(StorageErrc::kReservationConflict,
                  act.Where(act.committed) + ": cannot truncate to " + Num(end) + " while shared-mode " +
                      "reservations are outstanding (reservation word " + Num(act.reserved()) + ", " +
                      Num(uint64_t{act.pending.size()}) +
                      " committed ranges pending); revoke the producers and expire them first");
  }
  return at;
}

Status PartitionLog::Impl::TruncateLocked(Offset end) {
  RDMQ_ASSIGN_OR_RETURN(const Place at, CheckTruncation(end));
  if (end == Hwm()) return Status::Ok();

  // The segment that will end the log. Sealed segments recovery opened are mapped read-only:
  // map it writable (a new Segment object: readers may still pin the old one and its mapping).
  std::shared_ptr<Segment> cut = segments_.at(at.segment);
  if (!cut->file().writable()) {
    RDMQ_ASSIGN_OR_RETURN(auto rw, env_->OpenMapped(cut->path(), Env::Access::kReadWrite));
    if (opt_.persist == PersistMode::kPmem && !rw->is_pmem()) {
      return Status(StorageErrc::kNotPmem, cut->path() + " is not on persistent memory (not a DAX mapping)");
    }
    cut = std::make_shared<Segment>(dir_, cut->header(), std::move(rw), opt_.persist,
                                    opt_.index_interval_bytes);
  }
  // Everything below the cut must be walkable: it is what the log keeps, and what recovery walks.
  Segment::Walk walk = cut->WalkHeaders(at.position);
  if (walk.reached != at.position || walk.next != end) {
    return Status(StorageErrc::kCorruptBatch, cut->Where(walk.reached) + ": cannot truncate to " + Num(end) +
                                                  " at position " + Num(at.position) +
                                                  ": the batches before it are damaged");
  }

  const Offset old_end = Hwm();

  // 1. The commit point. A failure from here on leaves the record possibly durable: the log
  // stops taking writes and the next open finishes the truncation.
  const format::TruncationRecord record{at.position, end, walk.max_ts};
  if (Status s = cut->WriteTruncationRecord(record); !s.ok()) return Fail(s);

  // The in-memory state is the truncated log from now on, whatever fails below.
  std::vector<std::shared_ptr<Segment>> later;
  for (auto it = segments_.upper_bound(cut->base()); it != segments_.end();) {
    later.push_back(it->second);
    it = segments_.erase(it);
  }
  segments_[cut->base()] = cut;
  active_ = cut;
  cut->CutTo(std::move(walk), at.position, end, record.max_timestamp);

  // 2..6.
  Status s;
  for (auto it = later.rbegin(); it != later.rend() && s.ok(); ++it) s = env_->DeleteFile((*it)->path());
  if (s.ok() && !later.empty()) s = env_->SyncDir(dir_);
  if (s.ok()) s = cut->FinishTruncation().status();
  cut->last_checkpoint_ns = MonoNanos();
  Publish();
  if (!s.ok()) return Fail(s);
  RDMQ_LOG(kInfo, "storage", "log truncated")
      .kv("dir", dir_)
      .kv("end", end.value())
      .kv("removed_offsets", old_end.value() - end.value())
      .kv("segments_deleted", uint64_t{later.size()})
      .kv("active_segment", cut->path());
  return Status::Ok();
}

}  // namespace rdmq::storage
