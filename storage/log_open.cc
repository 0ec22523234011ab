// PartitionLog: opening (validation, then recovery and repair) and closing. See log_impl.h.
#include <algorithm>

#include "log_impl.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"

namespace rdmq::storage {

using internal::kNoPosition;
using internal::kSlotName;
using internal::Num;
using internal::Segment;

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

// What Open's read-only validation found in the directory.
struct PartitionLog::Impl::DirScan {
  struct Found {
    std::string path;
    format::SegmentHeader header;
    std::unique_ptr<MappedFile> ro;  // read-only mapping, until phase 2 takes the file over
    bool sealed = false;
    format::SealRecord seal;
    bool truncating = false;  // holds a valid truncation record
    format::TruncationRecord truncation;
  };
  static constexpr size_t kNoCut = ~size_t{0};
  bool dir_exists = true;
  std::vector<std::string> tmps;  // half-created files, deleted by the repair
  std::vector<Found> found;       // the segments, in base-offset order, all valid
  // A truncation under way (TruncateTo reached its commit point): the first segment holding a
  // truncation record ends the log, every segment after it is a leftover to delete.
  size_t cut = kNoCut;
  size_t kept() const { return cut == kNoCut ? found.size() : cut + 1; }
  bool have_slot = false;
  std::string slot_path;
  uint64_t prev_generation = 0;
  Offset prev_high_watermark = kNoOffset;  // what the slot showed last (a replicated log's exposed end)
};

Status PartitionLog::Impl::OpenLocked() {
  const uint64_t t0 = MonoNanos();
  RDMQ_RETURN_IF_ERROR(CheckOptions(opt_));

  DirScan scan;
  RDMQ_RETURN_IF_ERROR(ValidateDirectory(&scan));
  std::shared_ptr<Segment> last_rw;
  Position scan_start{0};
  RDMQ_RETURN_IF_ERROR(LoadSegments(scan, &last_rw, &scan_start));

  if (segments_.empty()) {
    RDMQ_ASSIGN_OR_RETURN(active_, CreateSegment(opt_.initial_offset));
    segments_[active_->base()] = active_;
    stats_.created = true;
  } else {
    active_ = std::prev(segments_.end())->second;
    if (last_rw) {
      // What the scan accepted may only have been in the page cache (a process crash, not a
      // power loss): make it durable before anyone can read it, so it can never disappear again.
      RDMQ_RETURN_IF_ERROR(last_rw->PersistData(scan_start, last_rw->committed - scan_start));
      Segment::ZeroResult z;
      if (scan.cut != DirScan::kNoCut) {
        // A truncation reached its commit point before the log went down: finish it (the seal
        // cleared, the tail zeroed, a checkpoint, then the record cleared; storage-format.md,
        // "Truncation"). The later segments are gone already (LoadSegments).
        RDMQ_ASSIGN_OR_RETURN(z, last_rw->FinishTruncation());
        stats_.truncation_finished = true;
      } else {
        RDMQ_ASSIGN_OR_RETURN(z, last_rw->TruncateTail());
        RDMQ_RETURN_IF_ERROR(last_rw->WriteCheckpoint());
      }
      stats_.truncated_bytes = z.nonzero_bytes;
      stats_.zeroed_pages = z.zeroed_pages;
      last_rw->last_checkpoint_ns = MonoNanos();
    }
  }
  stats_.segments = segments_.size();

  RDMQ_RETURN_IF_ERROR(OpenSlot(scan));
  slot_.generation = scan.prev_generation;
  RDMQ_RETURN_IF_ERROR(EnsureActive());
  if (opt_.replicated) {
    // What readers were shown before, if the log still holds it (and it is a batch boundary);
    // else nothing: the leader exposes again what its replicas hold.
    Offset shown = scan.prev_high_watermark;
    if (shown == kNoOffset || shown < LogStart() || shown > Hwm() || !Locate(shown).ok()) shown = LogStart();
    RDMQ_ASSIGN_OR_RETURN(Place at, Locate(shown));
    exposed_ = Exposed{at.segment, at.position, shown};
  }
  Publish();
  if (last_rw && last_rw->corrupt_at != kNoPosition && active_ == last_rw) {
    // Damage below the checkpoint (media corruption): what lies past it cannot be found by a
    // header walk after the next restart. Seal the segment at its end and continue in a new one,
    // so that nothing written from now on shares a segment with the damage.
    Status s = RollLocked();
    if (!s.ok()) {
      if (!s.is(Errc::kNoSpace)) return s;
      RDMQ_LOG(kWarn, "storage", "could not move past a damaged segment").kv("error", s);
    }
  }
  // Updates of the slot are not persisted (it is rebuilt by recovery), but its magic must be: then
  // whatever mix of old and new 8-byte words a power loss leaves, the file is still recognisably
  // a slot.
  if (opt_.persist != PersistMode::kNone) {
    RDMQ_RETURN_IF_ERROR(slot_file_->Persist(slot_file_->data(), format::kSlotSize));
  }
  stats_.recovered_position = active_->committed;
  stats_.next_offset = active_->next_offset;
  stats_.seconds = static_cast<double>(MonoNanos() - t0) / 1e9;
  RDMQ_LOG(kInfo, "storage", stats_.created ? "created partition log" : "recovered partition log")
      .kv("dir", dir_)
      .kv("segments", stats_.segments)
      .kv("log_start", LogStart().value())
      .kv("high_watermark", Hwm().value())
      .kv("truncated_bytes", stats_.truncated_bytes)
      .kv("seconds", stats_.seconds);
  return Status::Ok();
}

// Phase 1: read-only validation of everything in the directory. Changes nothing on media.
Status PartitionLog::Impl::ValidateDirectory(DirScan* out) const {
  DirScan& scan = *out;
  std::vector<std::string> names;
  if (auto listed = env_->ListDir(dir_); listed.ok()) {
    names = std::move(*listed);
  } else if (listed.status().is(Errc::kNotFound)) {
    scan.dir_exists = false;
  } else {
    return listed.status();
  }
  std::vector<std::pair<Offset, std::string>> seg_names;
  for (const auto& n : names) {
    Offset base;
    if (format::ParseSegmentFileName(n, &base)) {
      seg_names.emplace_back(base, n);
    } else if (EndsWith(n, ".seg.tmp") || n == std::string(kSlotName) + ".tmp") {
      scan.tmps.push_back(n);
    } else if (EndsWith(n, ".seg")) {
      return Status(StorageErrc::kSegmentMismatch,
                    dir_ + "/" + n + ": segment file names are 20 decimal digits followed by .seg");
    } else if (n == kSlotName) {
      scan.have_slot = true;
    }
  }
  if (seg_names.empty() && opt_.must_exist) {
    return Status(Errc::kNotFound, "no partition log in " + dir_);
  }
  std::sort(seg_names.begin(), seg_names.end());

  for (const auto& [base, name] : seg_names) {
    DirScan::Found f;
    f.path = dir_ + "/" + name;
    RDMQ_ASSIGN_OR_RETURN(uint64_t size, env_->FileSize(f.path));
    if (size < format::kSegmentHeaderSize) {
      return Status(StorageErrc::kTruncatedFile,
                    f.path + ": " + Num(size) + " bytes, shorter than the 4096-byte segment header");
    }
    RDMQ_ASSIGN_OR_RETURN(f.ro, env_->OpenMapped(f.path, Env::Access::kReadOnly));
    if (Status s = format::DecodeSegmentHeader({f.ro->data(), f.ro->size()}, &f.header); !s.ok()) {
      return s.WithContext(f.path);
    }
    if (f.header.base_offset != base) {
      return Status(
          StorageErrc::kSegmentMismatch,
          f.path + ": header says base offset " + Num(f.header.base_offset) + ", the name says " + Num(base));
    }
    if (f.header.topic != opt_.topic || f.header.partition != opt_.partition) {
      return Status(StorageErrc::kSegmentMismatch, f.path + ": belongs to topic " + Num(f.header.topic) +
                                                       " partition " + Num(f.header.partition) +
                                                       ", not topic " + Num(opt_.topic) + " partition " +
                                                       Num(opt_.partition));
    }
    if (size != format::kSegmentHeaderSize + f.header.capacity) {
      return Status(
          StorageErrc::kTruncatedFile,
          f.path + ": file is " + Num(size) + " bytes but its header says 4096 + " + Num(f.header.capacity));
    }
    f.sealed = format::DecodeSealRecord(f.ro->data() + format::kSealRecord, &f.seal);
    // A seal closes a non-empty segment (empty segments are never sealed).
    if (f.sealed && (f.seal.end > Position(f.header.capacity) || f.seal.end == Position(0) ||
                     f.seal.next_offset <= f.header.base_offset)) {
      return Status(StorageErrc::kCorruptHeader, f.path + ": seal record end " + Num(f.seal.end) +
                                                     " / next offset " + Num(f.seal.next_offset) +
                                                     " is impossible");
    }
    f.truncating = format::DecodeTruncationRecord(f.ro->data() + format::kTruncationRecord, &f.truncation);
    if (f.truncating && scan.cut == DirScan::kNoCut) {
      // A truncation only shortens: its end lies within what the segment holds.
      const format::TruncationRecord& t = f.truncation;
      bool possible = t.end <= Position(f.header.capacity) &&
                      (t.end == Position(0) ? t.next_offset == f.header.base_offset
                                            : t.next_offset > f.header.base_offset);
      if (f.sealed) possible = possible && t.end <= f.seal.end && t.next_offset <= f.seal.next_offset;
      if (!possible) {
        return Status(StorageErrc::kCorruptHeader, f.path + ": truncation record end " + Num(t.end) +
                                                       " / next offset " + Num(t.next_offset) +
                                                       " is impossible");
      }
      scan.cut = scan.found.size();
    }
    scan.found.push_back(std::move(f));
  }
  // The chain: segments after a truncation's cut are leftovers, not part of it.
  for (size_t i = 0; i + 1 < scan.kept(); ++i) {
    if (!scan.found[i].sealed) {
      return Status(StorageErrc::kCorruptHeader, scan.found[i].path + " is not sealed but " +
                                                     scan.found[i + 1].path +
                                                     " follows it (the seal record is damaged)");
    }
    if (scan.found[i].seal.next_offset != scan.found[i + 1].header.base_offset) {
      return Status(StorageErrc::kSegmentMismatch, scan.found[i + 1].path + " starts at offset " +
                                                       Num(scan.found[i + 1].header.base_offset) +
                                                       " but the segment before it ends at " +
                                                       Num(scan.found[i].seal.next_offset));
    }
  }
  scan.slot_path = dir_ + "/" + kSlotName;
  if (scan.have_slot) {
    RDMQ_ASSIGN_OR_RETURN(uint64_t size, env_->FileSize(scan.slot_path));
    if (size != format::kSlotFileSize) {
      return Status(StorageErrc::kTruncatedFile, scan.slot_path + ": " + Num(size) + " bytes, expected 4096");
    }
    RDMQ_ASSIGN_OR_RETURN(auto ro, env_->OpenMapped(scan.slot_path, Env::Access::kReadOnly));
    format::PartitionSlot old;
    const Status s = format::DecodePartitionSlot(ro->data(), &old);
    bool all_zero = true;
    for (size_t i = 0; i < format::kSlotSize; ++i) all_zero = all_zero && ro->data()[i] == std::byte{0};
    if (s.is(StorageErrc::kBadMagic) && !all_zero) return s.WithContext(scan.slot_path);
    if (s.is(StorageErrc::kBadVersion)) return s.WithContext(scan.slot_path);
    scan.prev_generation = coding::LoadLE<uint64_t>(ro->data());
    if (s.ok()) scan.prev_high_watermark = old.high_watermark;
  }
  return Status::Ok();
}

// Phase 2: everything is valid; take ownership (writable mappings) and recover each segment's
// state; the repair (OpenLocked) follows. `last_rw` is the unsealed last segment (if any), `scan_start` where
// its CRC scan began.
Status PartitionLog::Impl::LoadSegments(DirScan& scan, std::shared_ptr<Segment>* last_rw_out,
                                        Position* scan_start_out) {
  // After a process crash, names created or renamed before it may not be durable yet, nor may
  // the last seal record be: make both durable before building on them.
  if (scan.dir_exists) RDMQ_RETURN_IF_ERROR(env_->SyncDir(dir_));
  // So must the last segment's truncation record, before anything is done because of it, and
  // also when it is all zero: a truncation whose clearing of the record did not become durable
  // is complete, and the record must not come back to cut the log again after a power loss.
  const size_t kept = scan.kept();
  if (kept > 0 && opt_.persist != PersistMode::kNone) {
    const auto& ro = scan.found[kept - 1].ro;
    RDMQ_RETURN_IF_ERROR(ro->Persist(ro->data() + format::kTruncationRecord, format::kRecordSize));
    if (scan.cut == DirScan::kNoCut && scan.found.back().sealed) {
      RDMQ_RETURN_IF_ERROR(ro->Persist(ro->data() + format::kSealRecord, format::kRecordSize));
    }
  }
  std::shared_ptr<Segment> last_rw;
  Position scan_start{0};
  for (size_t i = 0; i < kept; ++i) {
    DirScan::Found& f = scan.found[i];
    std::unique_ptr<MappedFile> m;
    const bool is_last = i + 1 == kept;
    if (is_last && (!f.sealed || f.truncating)) {
      RDMQ_ASSIGN_OR_RETURN(m, env_->OpenMapped(f.path, Env::Access::kReadWrite));
      if (opt_.persist == PersistMode::kPmem && !m->is_pmem()) {
        return Status(StorageErrc::kNotPmem, f.path +
                                                 " is not on persistent memory (not a DAX mapping); use "
                                                 "persistence mode msync or none");
      }
      f.ro.reset();
    } else {
      m = std::move(f.ro);
    }
    auto seg =
        std::make_shared<Segment>(dir_, f.header, std::move(m), opt_.persist, opt_.index_interval_bytes);
    if (is_last && f.truncating) {
      const format::TruncationRecord& t = f.truncation;
      seg->CutTo(seg->WalkHeaders(t.end), t.end, t.next_offset, t.max_timestamp);
      scan_start = t.end;
      last_rw = seg;
    } else if (f.sealed) {
      seg->LoadSealed(f.seal);
    } else {
      const auto rec = seg->RecoverActive();
      scan_start = rec.start;
      stats_.batches_scanned = rec.batches_scanned;
      stats_.bytes_scanned = rec.bytes_scanned;
      last_rw = seg;
    }
    segments_[f.header.base_offset] = seg;
  }
  // What a truncation cut off goes (the last segment first), then the directory is synced; the
  // truncation record stays until OpenLocked finished the rest.
  for (size_t i = scan.found.size(); i > kept; --i) {
    DirScan::Found& f = scan.found[i - 1];
    RDMQ_LOG(kInfo, "storage", "removing a segment a truncation cut off").kv("file", f.path);
    f.ro.reset();
    RDMQ_RETURN_IF_ERROR(env_->DeleteFile(f.path));
  }
  if (kept < scan.found.size()) RDMQ_RETURN_IF_ERROR(env_->SyncDir(dir_));
  for (const auto& t : scan.tmps) {
    RDMQ_LOG(kInfo, "storage", "removing a segment left half-created").kv("file", dir_ + "/" + t);
    RDMQ_RETURN_IF_ERROR(env_->DeleteFile(dir_ + "/" + t));
  }
  *last_rw_out = std::move(last_rw);
  *scan_start_out = scan_start;
  return Status::Ok();
}

Status PartitionLog::Impl::OpenSlot(const DirScan& scan) {
  // The partition slot (volatile: rebuilt here from the recovered state). A new one is created
  // under a temporary name and renamed, so a crash never leaves a half-made slot file.
  if (scan.have_slot) {
    RDMQ_ASSIGN_OR_RETURN(auto rw, env_->OpenMapped(scan.slot_path, Env::Access::kReadWrite));
    slot_file_ = std::move(rw);
  } else {
    const std::string tmp = scan.slot_path + ".tmp";
    if (env_->FileExists(tmp)) RDMQ_RETURN_IF_ERROR(env_->DeleteFile(tmp));
    RDMQ_ASSIGN_OR_RETURN(auto rw, env_->CreateMapped(tmp, format::kSlotFileSize));
    format::PartitionSlot initial;
    format::EncodePartitionSlot(initial, rw->data());
    RDMQ_RETURN_IF_ERROR(rw->Persist(rw->data(), format::kSlotSize));
    RDMQ_RETURN_IF_ERROR(env_->RenameFile(tmp, scan.slot_path));
    RDMQ_RETURN_IF_ERROR(env_->SyncDir(dir_));
    slot_file_ = std::move(rw);
  }
  return Status::Ok();
}

PartitionLog::PartitionLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PartitionLog::~PartitionLog() {
  if (!impl_) return;
  if (Status s = Close(); !s.ok()) {  // a no-op when Close() was called
    RDMQ_LOG(kWarn, "storage", "closing the log failed").kv("dir", impl_->dir_).kv("error", s);
  }
}

Result<std::unique_ptr<PartitionLog>> PartitionLog::Open(Env* env, const std::string& dir,
                                                         const LogOptions& options) {
  auto impl = std::make_unique<Impl>(env, dir, options);
  {
    MutexLock lock(impl->mu_);
    if (Status s = impl->OpenLocked(); !s.ok()) {
      impl->closed_ = true;
      return s;
    }
  }
  return std::unique_ptr<PartitionLog>(new PartitionLog(std::move(impl)));
}

Status PartitionLog::Close() {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  if (m.closed_) return Status::Ok();
  // A spare being made is waited for (its warming stops early), so that nothing creates files
  // in the directory after Close: the caller may remove it.
  m.spare_abort_.store(true, std::memory_order_relaxed);
  while (m.spare_busy_) m.spare_done_.Wait(m.mu_);
  if (m.closed_) return Status::Ok();  // closed by another call meanwhile
  Status result;
  if (m.failed_.ok() && !m.active_->sealed) {
    result = m.active_->WriteCheckpoint();
  }
  m.DropSpare();
  m.closed_ = true;
  m.Publish();
  m.active_.reset();
  m.segments_.clear();
  m.slot_file_.reset();
  return result;
}

}  // namespace rdmq::storage
