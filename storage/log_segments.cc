// PartitionLog: the segment chain (creating and rolling segments), the partition slot,
// checkpoints, retention and the descriptions handed to fabrics. See log_impl.h.
#include <sys/mman.h>

#include <thread>

#include "log_impl.h"
#include "rdmq/common/clock.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace rdmq::storage {

using internal::kSlotName;
using internal::Num;
using internal::Segment;

namespace {

std::string ParentDir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Reads a fresh file's pages into the page cache (zeroed, clean: nothing to write back), 1 MiB
// at a time with a yield between, so that no thread of the data path waits long behind it.
// Kernels before 5.14 (no MADV_POPULATE_READ) and DAX files (no page cache) skip it.
void WarmPages(const MappedFile& f, const std::atomic<bool>& abort) {
  if (f.is_pmem()) return;
  constexpr size_t kStep = size_t{1} << 20;
  for (size_t at = 0; at < f.size() && !abort.load(std::memory_order_relaxed); at += kStep) {
    if (::madvise(f.data() + at, std::min(kStep, f.size() - at), MADV_POPULATE_READ) != 0) return;
    std::this_thread::yield();
  }
}

}  // namespace

Status PartitionLog::Impl::CheckSpace(Offset base) const {
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
  const bool have_spare = spare_ != nullptr && spare_->size() == opt_.segment_bytes;
  if (!have_spare && opt_.segment_bytes > space->free_bytes) {
    return Status(StorageErrc::kNoSpace, dir_ + "/" + name + ": a segment needs " + Num(opt_.segment_bytes) +
                                             " bytes, the device has " + Num(space->free_bytes) + " free");
  }
  return Status::Ok();
}

Result<std::shared_ptr<Segment>> PartitionLog::Impl::CreateSegment(Offset base) {
  if (segments_.count(base)) {
    return Status(Errc::kInternal, "segment with base offset " + Num(base) + " already exists in " + dir_);
  }
  RDMQ_RETURN_IF_ERROR(CheckSpace(base));
  RDMQ_RETURN_IF_ERROR(env_->CreateDir(dir_));
  format::SegmentHeader h;
  h.topic = opt_.topic;
  h.partition = opt_.partition;
  h.base_offset = base;
  h.capacity = opt_.segment_bytes - format::kSegmentHeaderSize;
  h.created = WallMillis();
  RDMQ_ASSIGN_OR_RETURN(auto seg, Segment::Create(env_, dir_, h, opt_.persist, opt_.index_interval_bytes,
                                                  std::move(spare_), SparePath()));
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
  segments_[seg->base()] = seg;
  active_ = seg;
  Publish();
  return Status::Ok();
}

void PartitionLog::Impl::Publish() {
  format::PartitionSlot next = slot_;
  if (opt_.replicated) {
    // Readers see the exposed end: its segment is "active" for them, sealed only once everything
    // of the sealed active segment is exposed.
    auto seg = segments_.find(exposed_.segment);
    const Segment& e = seg != segments_.end() ? *seg->second : *active_;
    const bool all_of_it = e.sealed && exposed_.position == e.committed;
    next.flags =
        static_cast<uint16_t>((all_of_it ? format::kSlotSealed : 0) | (closed_ ? format::kSlotClosed : 0));
    next.active_segment = exposed_.segment;
    next.committed_position = exposed_.position;
    next.high_watermark = exposed_.next;
    next.active_capacity = e.capacity();
  } else {
    next.flags = static_cast<uint16_t>((active_->sealed ? format::kSlotSealed : 0) |
                                       (closed_ ? format::kSlotClosed : 0));
    next.active_segment = active_->base();
    next.committed_position = active_->committed;
    next.high_watermark = active_->next_offset;
    next.active_capacity = active_->capacity();
  }
  next.log_start_offset = LogStart();
  // A replicated log's commits change nothing readers see: no new generation for them.
  if (opt_.replicated && next.flags == slot_.flags && next.active_segment == slot_.active_segment &&
      next.committed_position == slot_.committed_position && next.high_watermark == slot_.high_watermark &&
      next.log_start_offset == slot_.log_start_offset && next.active_capacity == slot_.active_capacity &&
      slot_.generation != 0) {
    return;
  }
  ++next.generation;
  slot_ = next;
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
    if (seg.committed == Position(0)) {
      if (seg.reserved() == Position(0)) return Status::Ok();  // empty: nothing to do
      return Status(StorageErrc::kReservationConflict, "cannot seal the empty " + seg.Where(Position(0)) +
                                                           " while reservations are outstanding");
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

SegmentInfo PartitionLog::Impl::Info(const std::shared_ptr<Segment>& s) const {
  SegmentInfo i;
  i.base_offset = s->base();
  i.path = s->path();
  i.mapping = s->file_bytes();
  i.mapping_size = s->file().size();
  i.fd = s->file().fd();
  i.file_id = s->file().id();
  i.file_offset = s->file().file_offset();
  i.capacity = s->capacity();
  i.sealed = s->sealed;
  i.persist = s->mode();
  i.committed = s->committed;
  i.next_offset = s->next_offset;
  i.pin = s;
  return i;
}

Status PartitionLog::Roll() {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  m.ClearOutcome();
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  return m.RollLocked();
}

void PartitionLog::Impl::DropSpare() {
  if (spare_ == nullptr) return;
  spare_.reset();
  if (Status s = env_->DeleteFile(SparePath()); !s.ok()) {
    RDMQ_LOG(kWarn, "storage", "could not remove a spare segment").kv("path", SparePath()).kv("error", s);
  }
}

Result<bool> PartitionLog::PrepareSpare() {
  Impl& m = *impl_;
  uint64_t size = 0;
  {
    MutexLock lock(m.mu_);
    if (!m.CheckWritable().ok() || m.spare_ != nullptr || m.spare_busy_) return false;
    size = m.opt_.segment_bytes;
    auto space = m.env_->Space(m.dir_);
    if (!space.ok() || space->free_bytes < 2 * size) return false;
    m.spare_busy_ = true;
  }
  // Allocated and warmed without the lock: this is the work a roll would otherwise do while
  // commits wait, and the first writes into the new segment after it.
  const std::string path = m.SparePath();
  if (m.env_->FileExists(path)) (void)m.env_->DeleteFile(path);
  Result<std::unique_ptr<MappedFile>> file = m.env_->CreateMappedGradually(path, size, size_t{1} << 20);
  if (file.ok()) WarmPages(**file, m.spare_abort_);
  MutexLock lock(m.mu_);
  m.spare_busy_ = false;
  m.spare_done_.NotifyAll();
  if (!file.ok()) return file.status();
  if (m.closed_ || m.spare_abort_.load(std::memory_order_relaxed) || m.spare_ != nullptr ||
      m.opt_.segment_bytes != size) {
    // Closing, or the segment size changed meanwhile: of no use.
    file->reset();
    (void)m.env_->DeleteFile(path);
    return false;
  }
  m.spare_ = std::move(*file);
  return true;
}

bool PartitionLog::HasSpare() const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu_);
  return m.spare_ != nullptr;
}

Result<RetentionOutcome> PartitionLog::ApplyRetention(TimestampMs now) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  RetentionOutcome out;
  uint64_t total = 0;
  for (const auto& [b, s] : m.segments_) total += s->file().size();
  while (m.segments_.size() > 1) {
    const auto& oldest = m.segments_.begin()->second;
    if (!oldest->sealed) break;
    // A replicated log keeps what its readers have not been shown yet.
    if (m.opt_.replicated && oldest->next_offset > m.exposed_.next) break;
    const bool by_size = m.opt_.retention_bytes > 0 && total > m.opt_.retention_bytes;
    const bool by_age = m.opt_.retention_ms > 0 && oldest->max_ts < now - m.opt_.retention_ms;
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
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckWritable());
  if (m.active_->sealed) return Status::Ok();
  if (Status s = m.active_->WriteCheckpoint(); !s.ok()) return m.Fail(s);
  m.active_->last_checkpoint_ns = MonoNanos();
  return Status::Ok();
}

SegmentInfo PartitionLog::ActiveSegment() const {
  MutexLock lock(impl_->mu_);
  if (impl_->closed_) return {};
  return impl_->Info(impl_->active_);
}

std::vector<SegmentInfo> PartitionLog::Segments() const {
  MutexLock lock(impl_->mu_);
  std::vector<SegmentInfo> out;
  for (const auto& [b, s] : impl_->segments_) out.push_back(impl_->Info(s));
  return out;
}

SlotInfo PartitionLog::Slot() const {
  MutexLock lock(impl_->mu_);
  SlotInfo i;
  if (impl_->closed_) return i;
  i.path = impl_->dir_ + "/" + kSlotName;
  i.memory = impl_->slot_file_->data();
  i.size = impl_->slot_file_->size();
  i.fd = impl_->slot_file_->fd();
  i.file_id = impl_->slot_file_->id();
  i.file_offset = 0;
  i.pin = impl_->slot_file_;
  return i;
}

const RecoveryStats& PartitionLog::recovery() const { return impl_->stats_; }
const std::string& PartitionLog::dir() const { return impl_->dir_; }
LogOptions PartitionLog::options() const {
  MutexLock lock(impl_->mu_);
  return impl_->opt_;
}

Status PartitionLog::Impl::CheckOptions(const LogOptions& o) {
  if (o.segment_bytes < format::kSegmentHeaderSize + 4096 || o.segment_bytes > (uint64_t{1} << 40)) {
    return Status(
        StorageErrc::kInvalidOptions,
        "segment_bytes " + Num(o.segment_bytes) + " must be between 8192 and 1 TiB (4 KiB header included)");
  }
  if (o.index_interval_bytes == 0) {
    return Status(StorageErrc::kInvalidOptions, "index_interval_bytes must be positive");
  }
  return Status::Ok();
}

Status PartitionLog::Reconfigure(const LogOptions& options) {
  Impl& m = *impl_;
  MutexLock lock(m.mu_);
  RDMQ_RETURN_IF_ERROR(m.CheckOpen());
  if (options.topic != m.opt_.topic || options.partition != m.opt_.partition) {
    return Status(StorageErrc::kInvalidOptions, "log " + m.dir_ + " belongs to topic " + Num(m.opt_.topic) +
                                                    " partition " + Num(m.opt_.partition) +
                                                    "; Reconfigure cannot move it");
  }
  RDMQ_RETURN_IF_ERROR(Impl::CheckOptions(options));
  const Offset initial = m.opt_.initial_offset;
  const bool must_exist = m.opt_.must_exist;
  m.opt_ = options;
  m.opt_.initial_offset = initial;  // only meaningful when Open creates the log
  m.opt_.must_exist = must_exist;
  RDMQ_LOG(kInfo, "storage", "log reconfigured")
      .kv("dir", m.dir_)
      .kv("segment_bytes", options.segment_bytes)
      .kv("retention_bytes", options.retention_bytes)
      .kv("retention_ms", options.retention_ms);
  return Status::Ok();
}

}  // namespace rdmq::storage
