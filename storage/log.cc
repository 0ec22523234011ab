#include "rdmq/storage/log.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "segment.h"

namespace rdmq::storage {

using internal::kNoPosition;
using internal::kNoTimestamp;
using internal::PendingRange;
using internal::Segment;

namespace {

constexpr const char* kSlotName = "partition.slot";

std::string Num(uint64_t v) { return std::to_string(v); }
std::string Num(int64_t v) { return std::to_string(v); }

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string ParentDir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

class PartitionLog::Impl {
 public:
  Impl(Env* env, std::string dir, const LogOptions& options)
      : env_(env), dir_(std::move(dir)), opt_(options) {}

  Status OpenLocked();

  // --- helpers (mu_ held) ---
  Status CheckWritable() const {
    if (closed_) return Status(Errc::kFailedPrecondition, "log " + dir_ + " is closed");
    if (!failed_.ok()) return Status(StorageErrc::kLogFailed, "log " + dir_ + ": " + failed_.ToString());
    return Status::Ok();
  }
  Status CheckOpen() const {
    if (closed_) return Status(Errc::kFailedPrecondition, "log " + dir_ + " is closed");
    return Status::Ok();
  }
  Status Fail(const Status& s) {
    if (failed_.ok()) {
      failed_ = s;
      RDMQ_LOG(kError, "storage", "log stops accepting writes").kv("dir", dir_).kv("error", s);
    }
    return s;
  }
  Offset LogStart() const { return Offset(segments_.begin()->first); }
  Offset Hwm() const { return active_->next_offset; }

  void Publish();
  Status MaybeCheckpoint(Segment& seg);
  Result<std::shared_ptr<Segment>> CreateSegment(Offset base);
  // kSegmentTooLarge / kNoSpace when a new segment would not fit the device.
  Status CheckSpace(Offset base);
  Status EnsureActive();
  Status RollLocked();
  void Drop(const Segment& seg, uint64_t pos, uint64_t len) {
    dropped_.push_back(CompletedRange{seg.base(), Position(pos), len, kNoOffset, kNoOffset, false});
  }
  void ClearOutcome() {
    completed_.clear();
    dropped_.clear();
  }
  Result<std::shared_ptr<Segment>> SegmentForCommit(Offset base);
  // Exclusive: validates batches in [pos, pos+len) of the active segment, persists, publishes.
  Status CommitExclusiveLocked(uint64_t pos, uint64_t len, Offset expected_next, bool validated);
  // Shared: assigns offsets to pending ranges that now start at the committed prefix.
  Status AdvancePrefix(Segment& seg, bool fresh_position_valid, uint64_t fresh_position);
  Status FillGap(Segment& seg, uint64_t from, uint64_t to, uint64_t* fillers, uint64_t* bytes);
  Status MaybeRollAtCrossing(Segment& seg, bool* rolled);
  SegmentInfo Info(const std::shared_ptr<Segment>& s) const;
  Status Validate(Segment& seg, uint64_t pos, uint64_t len, CommitMode mode, Offset* next, int64_t* offsets);

  Env* env_;
  std::string dir_;
  LogOptions opt_;
  mutable std::mutex mu_;
  std::map<int64_t, std::shared_ptr<Segment>> segments_;
  std::shared_ptr<Segment> active_;
  std::shared_ptr<MappedFile> slot_file_;
  format::PartitionSlot slot_;
  RecoveryStats stats_;
  Status failed_;
  bool closed_ = false;
  std::vector<CompletedRange> completed_;
  std::vector<CompletedRange> dropped_;
};

// ---------------------------------------------------------------------------------------------
// Open and recovery

Status PartitionLog::Impl::OpenLocked() {
  const uint64_t t0 = MonoNanos();
  if (opt_.segment_bytes < format::kSegmentHeaderSize + 4096 || opt_.segment_bytes > (uint64_t{1} << 40)) {
    return Status(StorageErrc::kInvalidOptions,
                  "segment_bytes " + Num(opt_.segment_bytes) +
                      " must be between 8192 and 1 TiB (4 KiB header included)");
  }
  if (opt_.index_interval_bytes == 0) {
    return Status(StorageErrc::kInvalidOptions, "index_interval_bytes must be positive");
  }

  // Phase 1: read-only validation of everything in the directory.
  bool dir_exists = true;
  std::vector<std::string> names;
  if (auto listed = env_->ListDir(dir_); listed.ok()) {
    names = std::move(*listed);
  } else if (listed.status().is(Errc::kNotFound)) {
    dir_exists = false;
  } else {
    return listed.status();
  }
  std::vector<std::string> tmps;
  std::vector<std::pair<Offset, std::string>> seg_names;
  bool have_slot = false;
  for (const auto& n : names) {
    Offset base;
    if (format::ParseSegmentFileName(n, &base)) {
      seg_names.emplace_back(base, n);
    } else if (EndsWith(n, ".seg.tmp") || n == std::string(kSlotName) + ".tmp") {
      tmps.push_back(n);
    } else if (EndsWith(n, ".seg")) {
      return Status(StorageErrc::kSegmentMismatch,
                    dir_ + "/" + n + ": segment file names are 20 decimal digits followed by .seg");
    } else if (n == kSlotName) {
      have_slot = true;
    }
  }
  if (seg_names.empty() && opt_.must_exist) {
    return Status(Errc::kNotFound, "no partition log in " + dir_);
  }
  std::sort(seg_names.begin(), seg_names.end());

  struct Found {
    std::string path;
    format::SegmentHeader header;
    std::unique_ptr<MappedFile> ro;
    bool sealed = false;
    format::SealRecord seal;
  };
  std::vector<Found> found;
  for (const auto& [base, name] : seg_names) {
    Found f;
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
      return Status(StorageErrc::kSegmentMismatch, f.path + ": header says base offset " +
                                                       Num(f.header.base_offset.value()) +
                                                       ", the name says " + Num(base.value()));
    }
    if (f.header.topic != opt_.topic || f.header.partition != opt_.partition) {
      return Status(StorageErrc::kSegmentMismatch,
                    f.path + ": belongs to topic " + Num(f.header.topic.value()) + " partition " +
                        std::to_string(f.header.partition.value()) + ", not topic " +
                        Num(opt_.topic.value()) + " partition " + std::to_string(opt_.partition.value()));
    }
    if (size != format::kSegmentHeaderSize + f.header.capacity) {
      return Status(
          StorageErrc::kTruncatedFile,
          f.path + ": file is " + Num(size) + " bytes but its header says 4096 + " + Num(f.header.capacity));
    }
    f.sealed = format::DecodeSealRecord(f.ro->data() + format::kSealRecord, &f.seal);
    // A seal closes a non-empty segment (empty segments are never sealed).
    if (f.sealed && (f.seal.end.value() > f.header.capacity || f.seal.end.value() == 0 ||
                     f.seal.next_offset <= f.header.base_offset)) {
      return Status(StorageErrc::kCorruptHeader, f.path + ": seal record end " + Num(f.seal.end.value()) +
                                                     " / next offset " + Num(f.seal.next_offset.value()) +
                                                     " is impossible");
    }
    found.push_back(std::move(f));
  }
  for (size_t i = 0; i + 1 < found.size(); ++i) {
    if (!found[i].sealed) {
      return Status(StorageErrc::kCorruptHeader, found[i].path + " is not sealed but " + found[i + 1].path +
                                                     " follows it (the seal record is damaged)");
    }
    if (found[i].seal.next_offset != found[i + 1].header.base_offset) {
      return Status(StorageErrc::kSegmentMismatch,
                    found[i + 1].path + " starts at offset " + Num(found[i + 1].header.base_offset.value()) +
                        " but the segment before it ends at " + Num(found[i].seal.next_offset.value()));
    }
  }
  const std::string slot_path = dir_ + "/" + kSlotName;
  uint64_t prev_generation = 0;
  if (have_slot) {
    RDMQ_ASSIGN_OR_RETURN(uint64_t size, env_->FileSize(slot_path));
    if (size != format::kSlotFileSize) {
      return Status(StorageErrc::kTruncatedFile, slot_path + ": " + Num(size) + " bytes, expected 4096");
    }
    RDMQ_ASSIGN_OR_RETURN(auto ro, env_->OpenMapped(slot_path, Env::Access::kReadOnly));
    format::PartitionSlot old;
    const Status s = format::DecodePartitionSlot(ro->data(), &old);
    bool all_zero = true;
    for (size_t i = 0; i < format::kSlotSize; ++i) all_zero = all_zero && ro->data()[i] == std::byte{0};
    if (s.is(StorageErrc::kBadMagic) && !all_zero) return s.WithContext(slot_path);
    if (s.is(StorageErrc::kBadVersion)) return s.WithContext(slot_path);
    prev_generation = coding::LoadLE<uint64_t>(ro->data());
  }

  // Phase 2: everything is valid; take ownership (writable mappings), then repair.
  // After a process crash, names created or renamed before it may not be durable yet, nor may
  // the last seal record be: make both durable before building on them.
  if (dir_exists) RDMQ_RETURN_IF_ERROR(env_->SyncDir(dir_));
  if (!found.empty() && found.back().sealed && opt_.persist != PersistMode::kNone) {
    const auto& ro = found.back().ro;
    RDMQ_RETURN_IF_ERROR(ro->Persist(ro->data() + format::kSealRecord, format::kRecordSize));
  }
  std::shared_ptr<Segment> last_rw;
  uint64_t scan_start = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    Found& f = found[i];
    std::unique_ptr<MappedFile> m;
    const bool is_last = i + 1 == found.size();
    if (is_last && !f.sealed) {
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
    if (f.sealed) {
      seg->LoadSealed(f.seal);
    } else {
      const auto scan = seg->RecoverActive();
      scan_start = scan.start;
      stats_.batches_scanned = scan.batches_scanned;
      stats_.bytes_scanned = scan.bytes_scanned;
      last_rw = seg;
    }
    segments_[f.header.base_offset.value()] = seg;
  }
  for (const auto& t : tmps) {
    RDMQ_LOG(kInfo, "storage", "removing a segment left half-created").kv("file", dir_ + "/" + t);
    RDMQ_RETURN_IF_ERROR(env_->DeleteFile(dir_ + "/" + t));
  }
  (void)dir_exists;  // a missing directory is created with the first segment, after its checks

  if (segments_.empty()) {
    RDMQ_ASSIGN_OR_RETURN(active_, CreateSegment(opt_.initial_offset));
    segments_[active_->base().value()] = active_;
    stats_.created = true;
  } else {
    active_ = std::prev(segments_.end())->second;
    if (last_rw) {
      // What the scan accepted may only have been in the page cache (a process crash, not a
      // power loss): make it durable before anyone can read it, so it can never disappear again.
      RDMQ_RETURN_IF_ERROR(last_rw->PersistData(scan_start, last_rw->committed - scan_start));
      RDMQ_ASSIGN_OR_RETURN(auto z, last_rw->TruncateTail());
      stats_.truncated_bytes = z.nonzero_bytes;
      stats_.zeroed_pages = z.zeroed_pages;
      RDMQ_RETURN_IF_ERROR(last_rw->WriteCheckpoint());
      last_rw->last_checkpoint_ns = MonoNanos();
    }
  }
  stats_.segments = segments_.size();

  // The partition slot (volatile: rebuilt here from the recovered state). A new one is created
  // under a temporary name and renamed, so a crash never leaves a half-made slot file.
  if (have_slot) {
    RDMQ_ASSIGN_OR_RETURN(auto rw, env_->OpenMapped(slot_path, Env::Access::kReadWrite));
    slot_file_ = std::move(rw);
  } else {
    const std::string tmp = slot_path + ".tmp";
    if (env_->FileExists(tmp)) RDMQ_RETURN_IF_ERROR(env_->DeleteFile(tmp));
    RDMQ_ASSIGN_OR_RETURN(auto rw, env_->CreateMapped(tmp, format::kSlotFileSize));
    format::PartitionSlot initial;
    format::EncodePartitionSlot(initial, rw->data());
    RDMQ_RETURN_IF_ERROR(rw->Persist(rw->data(), format::kSlotSize));
    RDMQ_RETURN_IF_ERROR(env_->RenameFile(tmp, slot_path));
    RDMQ_RETURN_IF_ERROR(env_->SyncDir(dir_));
    slot_file_ = std::move(rw);
  }
  slot_.generation = prev_generation;
  RDMQ_RETURN_IF_ERROR(EnsureActive());
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

  stats_.recovered_position = Position(active_->committed);
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

Status PartitionLog::Impl::CheckSpace(Offset base) {
  // Check the device before creating anything (the directory may not exist yet: ask its parent).
  auto space = env_->Space(dir_);
  if (!space.ok()) space = env_->Space(ParentDir(dir_));
  if (!space.ok()) {
    RDMQ_RETURN_IF_ERROR(env_->CreateDir(dir_));
    space = env_->Space(dir_);
    if (!space.ok()) return space.status();
  }
  const std::string name = format::SegmentFileName(base);
  if (opt_.segment_bytes > space->capacity_bytes) {
    return Status(StorageErrc::kSegmentTooLarge,
                  dir_ + "/" + name + ": a segment of " + Num(opt_.segment_bytes) +
                      " bytes is larger than the device (" + Num(space->capacity_bytes) + " bytes)");
  }
  if (opt_.segment_bytes > space->free_bytes) {
    return Status(StorageErrc::kNoSpace, dir_ + "/" + name + ": a segment needs " + Num(opt_.segment_bytes) +
                                             " bytes, the device has " + Num(space->free_bytes) + " free");
  }
  return Status::Ok();
}

Result<std::shared_ptr<Segment>> PartitionLog::Impl::CreateSegment(Offset base) {
  if (segments_.count(base.value())) {
    return Status(Errc::kInternal,
                  "segment with base offset " + Num(base.value()) + " already exists in " + dir_);
  }
  RDMQ_RETURN_IF_ERROR(CheckSpace(base));
  RDMQ_RETURN_IF_ERROR(env_->CreateDir(dir_));
  format::SegmentHeader h;
  h.topic = opt_.topic;
  h.partition = opt_.partition;
  h.base_offset = base;
  h.capacity = opt_.segment_bytes - format::kSegmentHeaderSize;
  h.created = WallMillis();
  RDMQ_ASSIGN_OR_RETURN(auto seg, Segment::Create(env_, dir_, h, opt_.persist, opt_.index_interval_bytes));
  if (opt_.persist == PersistMode::kPmem && !seg->file().is_pmem()) {
    const std::string path = seg->path();
    seg.reset();
    (void)env_->DeleteFile(path);
    return Status(
        StorageErrc::kNotPmem,
        path + " is not on persistent memory (not a DAX mapping); use persistence mode msync or none");
  }
  seg->last_checkpoint_ns = MonoNanos();
  return std::shared_ptr<Segment>(std::move(seg));
}

Status PartitionLog::Impl::EnsureActive() {
  if (!active_->sealed) return Status::Ok();
  RDMQ_ASSIGN_OR_RETURN(auto seg, CreateSegment(active_->next_offset));
  segments_[seg->base().value()] = seg;
  active_ = seg;
  Publish();
  return Status::Ok();
}

void PartitionLog::Impl::Publish() {
  ++slot_.generation;
  slot_.flags = static_cast<uint16_t>((active_->sealed ? format::kSlotSealed : 0) |
                                      (closed_ ? format::kSlotClosed : 0));
  slot_.active_segment = active_->base();
  slot_.committed_position = Position(active_->committed);
  slot_.high_watermark = active_->next_offset;
  slot_.log_start_offset = LogStart();
  slot_.active_capacity = active_->capacity();
  format::StorePartitionSlot(slot_file_->data(), slot_);
}

Status PartitionLog::Impl::MaybeCheckpoint(Segment& seg) {
  ++seg.commits_since_checkpoint;
  const uint64_t now = MonoNanos();
  if (seg.commits_since_checkpoint >= opt_.checkpoint_every_commits ||
      now - seg.last_checkpoint_ns >= uint64_t{opt_.checkpoint_interval_ms} * 1'000'000) {
    if (Status s = seg.WriteCheckpoint(); !s.ok()) return Fail(s);
    seg.last_checkpoint_ns = now;
  }
  return Status::Ok();
}

Status PartitionLog::Impl::RollLocked() {
  Segment& seg = *active_;
  if (!seg.sealed) {
    if (seg.committed == 0) {
      if (seg.reservation().load(std::memory_order_acquire) == 0)
        return Status::Ok();  // empty: nothing to do
      return Status(StorageErrc::kReservationConflict,
                    "cannot seal the empty " + seg.Where(0) + " while reservations are outstanding");
    }
    // Make sure the next segment fits before sealing this one: a full device then leaves the
    // log exactly as it was (and writable for what still fits).
    RDMQ_RETURN_IF_ERROR(CheckSpace(seg.next_offset));
    for (const auto& [p, r] : seg.pending) Drop(seg, p, r.length);
    if (Status s = seg.Seal(); !s.ok()) return Fail(s);
    Publish();
    RDMQ_LOG(kDebug, "storage", "segment sealed").kv("segment", seg.path()).kv("end", seg.committed);
  }
  return EnsureActive();
}

Result<std::shared_ptr<Segment>> PartitionLog::Impl::SegmentForCommit(Offset base) {
  auto it = segments_.find(base.value());
  if (it == segments_.end()) {
    return Status(StorageErrc::kUnknownSegment,
                  "no segment with base offset " + Num(base.value()) + " in " + dir_);
  }
  if (it->second->sealed) {
    return Status(StorageErrc::kSegmentSealed, it->second->Where(it->second->committed) +
                                                   ": sealed; the active segment starts at offset " +
                                                   Num(active_->base().value()));
  }
  return it->second;
}

Status PartitionLog::Impl::Validate(Segment& seg, uint64_t pos, uint64_t len, CommitMode mode, Offset* next,
                                    int64_t* offsets) {
  uint64_t p = pos;
  const uint64_t end = pos + len;
  int64_t count = 0;
  while (p < end) {
    BatchHeader h;
    if (Status s = ValidateBatch({seg.data() + p, end - p}, Validation::kCrc, &h); !s.ok()) {
      return s.WithContext(seg.Where(p));
    }
    if (h.record_count <= 0 || h.last_offset_delta != h.record_count - 1) {
      return Status(StorageErrc::kMalformedBatch, seg.Where(p) + ": " + std::to_string(h.record_count) +
                                                      " records but lastOffsetDelta " +
                                                      std::to_string(h.last_offset_delta));
    }
    if (mode == CommitMode::kExclusive) {
      if (h.base_offset != *next) {
        return Status(StorageErrc::kOffsetMismatch, seg.Where(p) + ": batch base offset " +
                                                        Num(h.base_offset.value()) + ", the log expects " +
                                                        Num(next->value()));
      }
      *next = h.next_offset();
    } else if (h.base_offset != kNoOffset) {
      return Status(StorageErrc::kOffsetMismatch, seg.Where(p) + ": shared-mode batch has base offset " +
                                                      Num(h.base_offset.value()) +
                                                      "; shared producers write -1");
    }
    count += h.offset_count();
    p += h.total_size();
  }
  if (offsets) *offsets = count;
  return Status::Ok();
}

Status PartitionLog::Impl::CommitExclusiveLocked(uint64_t pos, uint64_t len, Offset expected_next,
                                                 bool validated) {
  Segment& seg = *active_;
  Offset next = seg.next_offset;
  if (!validated) {
    RDMQ_RETURN_IF_ERROR(Validate(seg, pos, len, CommitMode::kExclusive, &next, nullptr));
    if (expected_next != kNoOffset && expected_next != next) {
      return Status(StorageErrc::kOffsetMismatch, seg.Where(pos) + ": the range ends at offset " +
                                                      Num(next.value()) + ", the producer says " +
                                                      Num(expected_next.value()));
    }
  }
  uint64_t expected_word = pos;
  if (!seg.reservation().compare_exchange_strong(expected_word, pos + len, std::memory_order_acq_rel)) {
    return Status(StorageErrc::kReservationConflict, seg.Where(pos) + ": the reservation word moved to " +
                                                         Num(expected_word) +
                                                         " (a shared producer reserved)");
  }
  if (Status s = seg.PersistData(pos, len); !s.ok()) return Fail(s);
  uint64_t p = pos;
  while (p < pos + len) {
    BatchHeader h;
    (void)DecodeBatchHeader({seg.data() + p, pos + len - p}, &h);
    seg.NoteBatch(p, h);
    p += h.total_size();
    next = h.next_offset();
  }
  const Offset first = seg.next_offset;
  seg.committed = pos + len;
  seg.next_offset = next;
  completed_.push_back(CompletedRange{seg.base(), Position(pos), len, first, next, false});
  Publish();
  return MaybeCheckpoint(seg);
}

Status PartitionLog::Impl::AdvancePrefix(Segment& seg, bool fresh_valid, uint64_t fresh_pos) {
  const uint64_t start = seg.committed;
  uint64_t cursor = start;
  Offset next = seg.next_offset;
  while (!seg.pending.empty() && seg.pending.begin()->first == cursor) {
    const uint64_t pos = cursor;
    PendingRange r = seg.pending.begin()->second;
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
    uint64_t p = pos;
    while (p < pos + r.length) {
      BatchHeader h;
      (void)DecodeBatchHeader({seg.data() + p, pos + r.length - p}, &h);
      PatchBaseOffset(seg.data() + p, next);
      h.base_offset = next;
      seg.NoteBatch(p, h);
      next = h.next_offset();
      p += h.total_size();
    }
    completed_.push_back(CompletedRange{seg.base(), Position(pos), r.length, first, next, r.filler});
    cursor = pos + r.length;
  }
  if (cursor == start) return Status::Ok();
  if (Status s = seg.PersistData(start, cursor - start); !s.ok()) return Fail(s);
  seg.committed = cursor;
  seg.next_offset = next;
  Publish();
  return MaybeCheckpoint(seg);
}

Status PartitionLog::Impl::FillGap(Segment& seg, uint64_t from, uint64_t to, uint64_t* fillers,
                                   uint64_t* bytes) {
  const TimestampMs ts = seg.max_ts != kNoTimestamp ? TimestampMs(seg.max_ts) : WallMillis();
  PendingRange r;
  r.length = to - from;
  r.filler = true;
  uint64_t p = from;
  while (p < to) {
    uint64_t n = std::min<uint64_t>(to - p, kMaxBatchBytes);
    if (to - p - n != 0 && to - p - n < kMinFillerBytes) n -= kMinFillerBytes;  // leave a fillable rest
    RDMQ_RETURN_IF_ERROR(WriteFillerBatch({seg.data() + p, n}, kNoOffset, ts));
    BatchHeader h;
    RDMQ_RETURN_IF_ERROR(DecodeBatchHeader({seg.data() + p, n}, &h));
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

SegmentInfo PartitionLog::Impl::Info(const std::shared_ptr<Segment>& s) const {
  SegmentInfo i;
  i.base_offset = s->base();
  i.path = s->path();
  i.mapping = s->file_bytes();
  i.mapping_size = s->file().size();
  i.fd = s->file().fd();
  i.file_offset = s->file().file_offset();
  i.capacity = s->capacity();
  i.sealed = s->sealed;
  i.committed = Position(s->committed);
  i.next_offset = s->next_offset;
  i.pin = s;
  return i;
}

// ---------------------------------------------------------------------------------------------
// Public surface

PartitionLog::PartitionLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PartitionLog::~PartitionLog() {
  if (impl_ && !impl_->closed_) {
    if (Status s = Close(); !s.ok()) {
      RDMQ_LOG(kWarn, "storage", "closing the log failed").kv("dir", impl_->dir_).kv("error", s);
    }
  }
}

Result<std::unique_ptr<PartitionLog>> PartitionLog::Open(Env* env, const std::string& dir,
                                                         const LogOptions& options) {
  auto impl = std::make_unique<Impl>(env, dir, options);
  {
    std::lock_guard lock(impl->mu_);
    if (Status s = impl->OpenLocked(); !s.ok()) {
      impl->closed_ = true;
      return s;
    }
  }
  return std::unique_ptr<PartitionLog>(new PartitionLog(std::move(impl)));
}

Result<AppendResult> PartitionLog::Append(std::span<const RecordInput> records, const BatchOptions& batch) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  if (records.empty()) return Status(Errc::kInvalidArgument, "append of zero records to " + m.dir_);
  if ((batch.attributes & kAttrCompressionMask) != 0) {
    return Status(StorageErrc::kUnsupportedBatch,
                  "Append does not compress; attributes ask for codec " +
                      std::to_string(batch.attributes & kAttrCompressionMask));
  }
  RDMQ_RETURN_IF_ERROR(m.EnsureActive());
  for (int attempt = 0; attempt < 2; ++attempt) {
    Segment& seg = *m.active_;
    if (!seg.pending.empty() || seg.reservation().load(std::memory_order_acquire) != seg.committed) {
      return Status(
          StorageErrc::kReservationConflict,
          seg.Where(seg.committed) + ": shared-mode reservations are outstanding; Append is exclusive");
    }
    const uint64_t pos = seg.committed;
    BatchOptions o = batch;
    o.base_offset = seg.next_offset;
    BatchBuilder b(seg.data() + pos, seg.capacity() - pos, o);
    bool all = true;
    for (const auto& r : records) {
      if (!b.Add(r)) {
        all = false;
        break;
      }
    }
    if (!all) {
      if (pos == 0) {
        return Status(Errc::kInvalidArgument, "a batch of " + std::to_string(records.size()) +
                                                  " records does not fit an empty segment of " +
                                                  Num(seg.capacity()) + " bytes");
      }
      RDMQ_RETURN_IF_ERROR(m.RollLocked());
      continue;
    }
    const size_t size = b.Finish();
    const Offset first = seg.next_offset;
    RDMQ_RETURN_IF_ERROR(m.CommitExclusiveLocked(pos, size, kNoOffset, /*validated=*/true));
    return AppendResult{first, seg.next_offset, seg.base(), Position(pos), size};
  }
  return Status(Errc::kInternal, "append did not fit a freshly rolled segment");
}

Result<AppendResult> PartitionLog::AppendBatch(std::span<const std::byte> batch) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  BatchHeader h;
  RDMQ_RETURN_IF_ERROR(ValidateBatch(batch, Validation::kCrc, &h));
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
  if (m.active_->capacity() - m.active_->committed < batch.size()) {
    if (m.active_->capacity() < batch.size()) {
      return Status(Errc::kInvalidArgument, "a batch of " + Num(uint64_t{batch.size()}) +
                                                " bytes does not fit a segment of " +
                                                Num(m.active_->capacity()));
    }
    RDMQ_RETURN_IF_ERROR(m.RollLocked());
  }
  Segment& seg = *m.active_;
  if (!seg.pending.empty() || seg.reservation().load(std::memory_order_acquire) != seg.committed) {
    return Status(
        StorageErrc::kReservationConflict,
        seg.Where(seg.committed) + ": shared-mode reservations are outstanding; AppendBatch is exclusive");
  }
  const uint64_t pos = seg.committed;
  std::memcpy(seg.data() + pos, batch.data(), batch.size());
  const Offset first = seg.next_offset;
  PatchBaseOffset(seg.data() + pos, first);
  RDMQ_RETURN_IF_ERROR(m.CommitExclusiveLocked(pos, batch.size(), kNoOffset, /*validated=*/true));
  return AppendResult{first, seg.next_offset, seg.base(), Position(pos), batch.size()};
}

Result<CommitOutcome> PartitionLog::Commit(const CommitRequest& req) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  RDMQ_ASSIGN_OR_RETURN(auto segp, m.SegmentForCommit(req.segment));
  Segment& seg = *segp;
  const uint64_t pos = req.position.value();
  const uint64_t len = req.length;
  const uint64_t cap = seg.capacity();
  CommitOutcome out;
  if (len == 0) return Status(Errc::kInvalidArgument, seg.Where(pos) + ": commit of 0 bytes");

  if (req.mode == CommitMode::kExclusive) {
    if (pos > cap || len > cap - pos) {
      return Status(StorageErrc::kPositionOutOfRange, seg.Where(pos) + ": range of " + Num(len) +
                                                          " bytes runs past the segment end " + Num(cap));
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
    const uint64_t word = seg.reservation().load(std::memory_order_acquire);
    if (word != pos) {
      return Status(
          StorageErrc::kReservationConflict,
          seg.Where(pos) + ": the reservation word is " + Num(word) + ", shared producers hold reservations");
    }
    const Offset first = seg.next_offset;
    RDMQ_RETURN_IF_ERROR(m.CommitExclusiveLocked(pos, len, req.expected_next_offset, false));
    out.complete = true;
    out.base_offset = first;
  } else {
    if (pos >= cap) {
      // Reservations that filled the data area exactly leave no reservation straddling the end:
      // the first one starting at the end marks it instead, so the segment still seals and
      // rolls once everything before it is committed (otherwise every later reservation would
      // be told to retry on a next segment that never comes).
      if (pos == cap && seg.crossing == kNoPosition) {
        seg.crossing = cap;
        bool rolled = false;
        RDMQ_RETURN_IF_ERROR(m.MaybeRollAtCrossing(seg, &rolled));
      }
      return Status(StorageErrc::kSegmentFull, seg.Where(pos) + ": reservation starts past the segment end " +
                                                   Num(cap) + "; retry on the next segment");
    }
    if (pos < seg.committed) {
      return Status(StorageErrc::kRangeConflict,
                    seg.Where(pos) + ": already committed (up to " + Num(seg.committed) + ")");
    }
    auto overlaps = [&](uint64_t a, uint64_t b) {
      auto it = seg.pending.lower_bound(a);
      if (it != seg.pending.end() && it->first < b) return true;
      if (it != seg.pending.begin()) {
        --it;
        if (it->first + it->second.length > a) return true;
      }
      return false;
    };
    if (len > cap - pos) {
      // The reservation that crossed the end: the segment will be sealed at its start.
      if (overlaps(pos, cap) || (seg.crossing != kNoPosition && seg.crossing != pos)) {
        return Status(StorageErrc::kRangeConflict,
                      seg.Where(pos) + ": crossing reservation overlaps other ranges");
      }
      seg.crossing = pos;
      bool rolled = false;
      RDMQ_RETURN_IF_ERROR(m.MaybeRollAtCrossing(seg, &rolled));
      return Status(StorageErrc::kSegmentFull, seg.Where(pos) + ": reservation of " + Num(len) +
                                                   " bytes crosses the segment end " + Num(cap) +
                                                   "; the segment ends here, retry on the next segment");
    }
    const uint64_t word = seg.reservation().load(std::memory_order_acquire);
    if (pos + len > word) {
      return Status(StorageErrc::kRangeConflict, seg.Where(pos) + ": range of " + Num(len) +
                                                     " bytes was not reserved (reservation word " +
                                                     Num(word) + ")");
    }
    if (overlaps(pos, pos + len)) {
      return Status(StorageErrc::kRangeConflict, seg.Where(pos) + ": overlaps a range already committed");
    }
    if (seg.crossing != kNoPosition && pos + len > seg.crossing) {
      return Status(StorageErrc::kRangeConflict,
                    seg.Where(pos) + ": beyond the end " + Num(seg.crossing) + " of this segment");
    }
    Offset unused;
    int64_t offsets = 0;
    RDMQ_RETURN_IF_ERROR(m.Validate(seg, pos, len, CommitMode::kShared, &unused, &offsets));
    seg.pending[pos] = PendingRange{len, offsets, false};
    RDMQ_RETURN_IF_ERROR(m.AdvancePrefix(seg, true, pos));
    for (const auto& c : m.completed_) {
      if (c.position.value() == pos) {
        out.complete = true;
        out.base_offset = c.base_offset;
      }
    }
    bool rolled = false;
    RDMQ_RETURN_IF_ERROR(m.MaybeRollAtCrossing(seg, &rolled));
  }
  out.committed = Position(seg.committed);
  out.high_watermark = m.Hwm();
  out.completed = m.completed_;
  out.dropped = m.dropped_;
  return out;
}

Result<Reservation> PartitionLog::Reserve(uint64_t length) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
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
  std::lock_guard lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  RDMQ_RETURN_IF_ERROR(m.EnsureActive());
  ExpireOutcome out;
  Segment& seg = *m.active_;
  const uint64_t cap = seg.capacity();
  const uint64_t word = seg.reservation().load(std::memory_order_acquire);
  if (seg.samples.empty() || seg.samples.back().second != word) seg.samples.emplace_back(now_ns, word);
  if (word <= cap) seg.boundary_in_capacity = std::max(seg.boundary_in_capacity, word);
  // The newest sample at least a lease old: every reservation below its value is expired.
  const uint64_t lease = m.opt_.reservation_lease_ns;
  size_t idx = seg.samples.size();
  for (size_t i = 0; i < seg.samples.size() && seg.samples[i].first + lease <= now_ns; ++i) idx = i;
  if (idx == seg.samples.size()) return out;
  const uint64_t horizon = seg.samples[idx].second;
  seg.samples.erase(seg.samples.begin(), seg.samples.begin() + static_cast<long>(idx));

  // Walk the uncommitted space below the horizon and turn expired holes into filler batches.
  // Holes between committed ranges and a trailing hole ending at a sampled word value consist of
  // whole reservations; a hole below kMinFillerBytes (a producer reserved less than any batch) is
  // widened over the committed range after it (dropping that range) or over bytes claimed from
  // the reservation word, or left for a later call.
  const uint64_t limit = std::min(horizon, cap);
  uint64_t pos = seg.committed;
  while (pos < limit) {
    auto it = seg.pending.lower_bound(pos);
    if (it != seg.pending.end() && it->first == pos) {
      pos += it->second.length;
      continue;
    }
    uint64_t hole_end =
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
      uint64_t expected = hole_end;
      const uint64_t need = kMinFillerBytes - (hole_end - pos);
      if (hole_end + need <= cap &&
          seg.reservation().compare_exchange_strong(expected, hole_end + need, std::memory_order_acq_rel)) {
        hole_end += need;
        continue;
      }
      break;
    }
    if (hole_end - pos < kMinFillerBytes) break;
    RDMQ_RETURN_IF_ERROR(m.FillGap(seg, pos, hole_end, &out.fillers, &out.filled_bytes));
    pos = hole_end;
  }
  RDMQ_RETURN_IF_ERROR(m.AdvancePrefix(seg, false, 0));

  if (horizon > cap && !seg.sealed) {
    // Every reservation that fit was made before the horizon and has expired: end the segment at
    // the last reservation boundary we know of (the crossing reservation's start if it was
    // reported, else the largest sampled boundary), filling up to it, then roll.
    const uint64_t target = seg.crossing != kNoPosition ? seg.crossing : seg.boundary_in_capacity;
    if (seg.pending.empty() && target > seg.committed && target - seg.committed >= kMinFillerBytes) {
      RDMQ_RETURN_IF_ERROR(m.FillGap(seg, seg.committed, target, &out.fillers, &out.filled_bytes));
      RDMQ_RETURN_IF_ERROR(m.AdvancePrefix(seg, false, 0));
    }
    if (seg.committed == 0) {
      // Nothing was committed in this segment (its reservations all expired, or the only one
      // crossed the end): start it over instead of sealing an empty segment.
      for (const auto& [p, r] : seg.pending) m.Drop(seg, p, r.length);
      seg.pending.clear();
      seg.reservation().store(0, std::memory_order_release);
      seg.samples.clear();
      seg.boundary_in_capacity = 0;
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

Result<ReadResult> PartitionLog::Read(Offset from, size_t max_bytes) const {
  const Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  const Offset start = m.LogStart();
  const Offset hwm = m.Hwm();
  if (from < start) {
    return Status(StorageErrc::kOffsetOutOfRange, "offset " + Num(from.value()) + " is below the log start " +
                                                      Num(start.value()) + " of " + m.dir_);
  }
  if (from > hwm) {
    return Status(StorageErrc::kOffsetOutOfRange, "offset " + Num(from.value()) +
                                                      " is beyond the high watermark " + Num(hwm.value()) +
                                                      " of " + m.dir_);
  }
  ReadResult out;
  out.high_watermark = hwm;
  if (from == hwm) {
    out.segment = m.active_->base();
    out.position = Position(m.active_->committed);
    out.next_offset = hwm;
    return out;
  }
  auto it = std::prev(m.segments_.upper_bound(from.value()));
  while (from >= it->second->next_offset) ++it;  // from < hwm, so a later segment holds it
  const std::shared_ptr<Segment>& seg = it->second;
  const uint64_t end = seg->committed;
  // Walk batch headers from the closest index entry (a position recovery verified) to the batch
  // holding `from`, checking that offsets continue.
  const internal::IndexEntry* entry = seg->IndexFloor(from);
  uint64_t pos = entry ? entry->position : 0;
  Offset expect = entry ? Offset(entry->offset) : seg->base();
  auto damaged = [&](uint64_t p) {
    return Status(StorageErrc::kCorruptBatch, seg->Where(p) + ": offset " + Num(from.value()) +
                                                  " lies in a damaged part of the segment (from position " +
                                                  Num(seg->corrupt_at) + ")");
  };
  while (true) {
    if (seg->Damaged(pos)) return damaged(pos);
    if (pos >= end) {
      return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": offset " + Num(from.value()) +
                                                    " not found before the committed end " + Num(end));
    }
    BatchHeader h;
    if (Status s = DecodeBatchHeader({seg->data() + pos, end - pos}, &h); !s.ok()) {
      return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": " + std::string(s.context()));
    }
    if (h.base_offset != expect) {
      return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": batch base offset " +
                                                    Num(h.base_offset.value()) + ", expected " +
                                                    Num(expect.value()));
    }
    if (h.next_offset() > from) break;
    pos += h.total_size();
    expect = h.next_offset();
  }
  const uint64_t first = pos;
  Offset next = from;
  while (pos < end && !seg->Damaged(pos)) {
    BatchHeader h;
    Status s = ValidateBatch({seg->data() + pos, end - pos}, Validation::kCrc, &h);
    if (s.ok() && h.base_offset != expect) {
      s = Status(StorageErrc::kCorruptBatch,
                 "batch base offset " + Num(h.base_offset.value()) + ", expected " + Num(expect.value()));
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
  out.bytes = {seg->data() + first, pos - first};
  out.segment = seg->base();
  out.position = Position(first);
  out.next_offset = next;
  out.pin = seg;
  return out;
}

Result<Offset> PartitionLog::OffsetForTimestamp(TimestampMs ts) const {
  const Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  for (const auto& [base, seg] : m.segments_) {
    if (seg->max_ts < ts.value()) continue;
    uint64_t pos = seg->IndexLookupTime(ts.value());
    while (pos < seg->committed) {
      if (seg->Damaged(pos)) {
        return Status(StorageErrc::kCorruptBatch, seg->Where(pos) +
                                                      ": a damaged part of the segment (from position " +
                                                      Num(seg->corrupt_at) + ") hides the timestamps");
      }
      BatchHeader h;
      if (Status s = ValidateBatch({seg->data() + pos, seg->committed - pos}, Validation::kCrc, &h);
          !s.ok()) {
        return Status(StorageErrc::kCorruptBatch, seg->Where(pos) + ": " + std::string(s.context()));
      }
      if (h.max_timestamp >= ts) {
        RecordIterator it(h, {seg->data() + pos, h.total_size()});
        RecordView r;
        while (it.Next(&r)) {
          if (h.base_timestamp.value() + r.timestamp_delta >= ts.value())
            return h.base_offset + r.offset_delta;
        }
        if (!it.status().ok()) return it.status().WithContext(seg->Where(pos));
      }
      pos += h.total_size();
    }
  }
  return kNoOffset;
}

Offset PartitionLog::LogStartOffset() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->closed_ ? kNoOffset : impl_->LogStart();
}

Offset PartitionLog::HighWatermark() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->closed_ ? kNoOffset : impl_->Hwm();
}

Status PartitionLog::Roll() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  return m.RollLocked();
}

Result<RetentionOutcome> PartitionLog::ApplyRetention(TimestampMs now) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  RetentionOutcome out;
  uint64_t total = 0;
  for (const auto& [b, s] : m.segments_) total += s->file().size();
  while (m.segments_.size() > 1) {
    const auto& oldest = m.segments_.begin()->second;
    if (!oldest->sealed) break;
    const bool by_size = m.opt_.retention_bytes > 0 && total > m.opt_.retention_bytes;
    const bool by_age = m.opt_.retention_ms > 0 && oldest->max_ts < now.value() - m.opt_.retention_ms;
    if (!by_size && !by_age) break;
    const std::string path = oldest->path();
    const uint64_t size = oldest->file().size();
    m.segments_.erase(m.segments_.begin());
    m.Publish();  // consumers see the new log start before the file goes
    RDMQ_RETURN_IF_ERROR(m.env_->DeleteFile(path));
    total -= size;
    ++out.segments_deleted;
    out.bytes_deleted += size;
    RDMQ_LOG(kInfo, "storage", "retention deleted a segment")
        .kv("segment", path)
        .kv("reason", by_size ? "size" : "age")
        .kv("log_start", m.LogStart().value());
  }
  if (out.segments_deleted > 0) RDMQ_RETURN_IF_ERROR(m.env_->SyncDir(m.dir_));
  out.log_start = m.LogStart();
  return out;
}

Status PartitionLog::Checkpoint() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  if (m.active_->sealed) return Status::Ok();
  if (Status s = m.active_->WriteCheckpoint(); !s.ok()) return m.Fail(s);
  m.active_->last_checkpoint_ns = MonoNanos();
  return Status::Ok();
}

Status PartitionLog::Close() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu_);
  if (m.closed_) return Status::Ok();
  Status result;
  if (m.failed_.ok() && !m.active_->sealed) {
    result = m.active_->WriteCheckpoint();
  }
  m.closed_ = true;
  m.Publish();
  m.active_.reset();
  m.segments_.clear();
  m.slot_file_.reset();
  return result;
}

SegmentInfo PartitionLog::ActiveSegment() const {
  std::lock_guard lock(impl_->mu_);
  if (impl_->closed_) return {};
  return impl_->Info(impl_->active_);
}

std::vector<SegmentInfo> PartitionLog::Segments() const {
  std::lock_guard lock(impl_->mu_);
  std::vector<SegmentInfo> out;
  for (const auto& [b, s] : impl_->segments_) out.push_back(impl_->Info(s));
  return out;
}

SlotInfo PartitionLog::Slot() const {
  std::lock_guard lock(impl_->mu_);
  SlotInfo i;
  if (impl_->closed_) return i;
  i.path = impl_->dir_ + "/" + kSlotName;
  i.memory = impl_->slot_file_->data();
  i.size = impl_->slot_file_->size();
  i.fd = impl_->slot_file_->fd();
  i.file_offset = 0;
  i.pin = impl_->slot_file_;
  return i;
}

const RecoveryStats& PartitionLog::recovery() const { return impl_->stats_; }
const std::string& PartitionLog::dir() const { return impl_->dir_; }
const LogOptions& PartitionLog::options() const { return impl_->opt_; }

}  // namespace rdmq::storage
