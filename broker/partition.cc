#include "partition.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <set>

#include "lease.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::broker::internal {

using protocol::WireError;

namespace {

constexpr uint32_t kSegmentAccess =
    fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteWrite | fabric::kRemoteAtomic;

storage::LogOptions LogOptionsFor(TopicId topic, const metadata::TopicConfig& c, PartitionId index,
                                  const PartitionOptions& po) {
  storage::LogOptions o;
  o.topic = topic;
  o.partition = index;
  o.segment_bytes = c.segment_bytes;
  o.persist = c.durability == metadata::Durability::kDurable ? storage::PersistMode::kMsync
                                                             : storage::PersistMode::kNone;
  o.index_interval_bytes = c.index_interval_bytes;
  o.retention_bytes = c.retention_bytes > 0 ? static_cast<uint64_t>(c.retention_bytes) : 0;
  o.retention_ms = c.retention_ms > 0 ? c.retention_ms : 0;
  o.reservation_lease_ns = uint64_t{po.lease_ms} * 1'000'000;
  o.checkpoint_interval_ms = po.checkpoint_interval_ms;
  o.replicated = c.replication_factor > 1;
  return o;
}

// Out of file descriptors (EMFILE, ENFILE): say what the limit is and what a partition takes, so
// that an operator knows the fix is the limit, not the disk.
Status WithFileLimitHint(Status s) {
  if (s.code() != std::errc::too_many_files_open && s.code() != std::errc::too_many_files_open_in_system)
    return s;
  rlimit rl{};
  std::string limit = "unknown";
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    limit = rl.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(rl.rlim_cur);
  }
  return s.WithContext("the broker's open-file limit (" + limit +
                       ") is reached: on the shm fabric a partition keeps its slot and each of its "
                       "segments open; raise it (ulimit -n, systemd LimitNOFILE)");
}

// Registers a mapping of the log's. The shm provider passes regions to clients as descriptors,
// and a log on files keeps none (storage/env.h): one is opened for the call (the fabric keeps
// its own duplicate) and closed again. tcp and verbs register the memory alone.
Result<std::unique_ptr<fabric::Region>> RegisterMapping(fabric::Fabric& f, void* addr, size_t size, int fd,
                                                        storage::FileId id, const std::string& path,
                                                        uint64_t file_offset, uint32_t access) {
  if (fd >= 0 || f.provider() != fabric::Provider::kShm)
    return f.Register(addr, size, fd, file_offset, access);
  const bool writable = (access & (fabric::kRemoteWrite | fabric::kRemoteAtomic)) != 0;
  RDMQ_ASSIGN_OR_RETURN(const int opened, storage::OpenMappedFileFd(fd, id, path, writable));
  auto region = f.Register(addr, size, opened, file_offset, access);
  ::close(opened);
  return region;
}

}  // namespace

Result<std::unique_ptr<WritableAlias>> WritableAlias::Map(const std::string& path, size_t size) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path + " read-write (to register it)");
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return Status::FromErrno(err, "mmap " + path + " read-write (to register it)");
  return std::unique_ptr<WritableAlias>(new WritableAlias(static_cast<std::byte*>(p), size));
}

WritableAlias::~WritableAlias() { ::munmap(data_, size_); }

protocol::SegmentLocation ReadLocation(Offset base, const SegmentReg& reg) {
  protocol::SegmentLocation loc;
  loc.base_offset = base;
  loc.region.bytes = reg.read_descriptor;
  loc.data_offset = storage::format::kSegmentHeaderSize;
  loc.capacity = reg.info.capacity;
  loc.reservation_offset = storage::format::kReservationWord;
  return loc;
}

Status TopicDeleted(const std::string& topic) {
  return Status(WireError::kUnknownTopic, "topic '" + topic + "' was deleted");
}

std::string Partition::DirFor(const PartitionOptions& options, const std::string& topic, PartitionId index) {
  return options.data_dir + "/topics/" + topic + "-" + std::to_string(index.value());
}

Partition::Partition(const metadata::TopicInfo& topic, PartitionId index, const PartitionOptions& options)
    : topic_name_(topic.name),
      topic_id_(topic.id),
      options_(options),
      index_(index),
      replicated_(topic.config.replication_factor > 1),
      where_(topic.name + "-" + std::to_string(index.value())),
      dir_(DirFor(options, topic.name, index)),
      fabric_(options.fabric),
      config_(topic.config) {}

Partition::~Partition() = default;

Result<std::shared_ptr<Partition>> Partition::Open(const metadata::TopicInfo& topic, PartitionId index,
                                                   const PartitionOptions& options, Offset initial_offset) {
  std::shared_ptr<Partition> p(new Partition(topic, index, options));
  storage::LogOptions lo = LogOptionsFor(topic.id, topic.config, index, options);
  lo.initial_offset = initial_offset;
  // A partition this call creates holds nothing yet: if it cannot be opened and served, its
  // directory goes again, so that a topic whose creation is rolled back leaves no files behind
  // (and the same name can be created later).
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(p->dir_, ec) && !ec;
  auto log = storage::PartitionLog::Open(storage::DefaultEnv(), p->dir_, lo);
  if (!log.ok()) {
    if (fresh) std::filesystem::remove_all(p->dir_, ec);
    return WithFileLimitHint(log.status()).WithContext("partition " + p->where_ + " in " + p->dir_);
  }
  MutexLock lock(p->mu);
  p->log_ = std::move(*log);
  p->slot_ = p->log_->Slot();
  p->opened_high_watermark_ = p->log_->HighWatermark();
  const auto failed = [&p, fresh](Status s) REQUIRES(p->mu) {
    if (fresh) {
      p->segments_.clear();
      p->slot_region_.reset();
      p->log_.reset();
      std::error_code gone;
      std::filesystem::remove_all(p->dir_, gone);
    }
    return WithFileLimitHint(std::move(s));
  };
  auto slot_region =
      RegisterMapping(*p->fabric_, p->slot_.memory, p->slot_.size, p->slot_.fd, p->slot_.file_id,
                      p->slot_.path, p->slot_.file_offset, fabric::kRemoteRead);
  if (!slot_region.ok())
    return failed(slot_region.status()).WithContext("register the partition slot of " + p->where_);
  p->slot_region_ = std::move(*slot_region);
  p->slot_descriptor_ = p->slot_region_->Descriptor().Encode();
  if (Status s = p->SyncSegments(); !s.ok()) return failed(s);
  p->RebuildProducers();
  const auto& rs = p->log_->recovery();
  RDMQ_LOG(kInfo, "broker", rs.created ? "partition created" : "partition recovered")
      .kv("partition", p->where_)
      .kv("segments", rs.segments)
      .kv("log_start", p->log_->LogStartOffset())
      .kv("high_watermark", p->active_.high_watermark)
      .kv("committed_position", p->active_.committed)
      .kv("truncated_bytes", rs.truncated_bytes)
      .kv("producers", static_cast<uint64_t>(p->producers_.size()))
      .kv("seconds", rs.seconds);
  return p;
}

void Partition::RefreshActive() {
  const storage::SegmentInfo a = log_->ActiveSegment();
  if (active_.data != nullptr && a.base_offset != active_.base) rolled_ = true;
  active_.base = a.base_offset;
  active_.data = a.data();
  active_.capacity = a.capacity;
  active_.durable = a.persist != storage::PersistMode::kNone;
  active_.committed = a.committed;
  active_.log_end = log_->LogEndOffset();
  active_.high_watermark = log_->HighWatermark();
}

void Partition::RebuildProducers() {
  producers_.Clear();
  for (const auto& [base, reg] : segments_) {
    const storage::SegmentInfo& s = reg.info;
    const uint64_t end = base == active_.base ? active_.committed.value() : s.committed.value();
    ObserveProducers({s.data(), end});
  }
}

void Partition::ObserveProducers(std::span<const std::byte> batches) {
  storage::BatchScanner scan(batches, storage::Validation::kHeader);
  storage::BatchView b;
  while (scan.Next(&b)) producers_.Observe(b.header);
}

Status Partition::Expose(Offset next) {
  RDMQ_RETURN_IF_ERROR(log_->Expose(next));
  active_.high_watermark = log_->HighWatermark();
  return Status::Ok();
}

void Partition::SetReplicaSet(std::unique_ptr<cluster::ReplicaSet> set) {
  replica_set_ = std::move(set);
  if (!replica_set_) {
    FailReplicatedWaiters(Status(WireError::kNotLeader, "this broker no longer leads " + where_ +
                                                            "; the records may not be replicated"));
  }
}

void Partition::FailReplicatedWaiters(const Status& why) {
  auto waiters = std::move(replicated_waiters_);
  replicated_waiters_.clear();
  for (auto& [end, done] : waiters) done(why);
}

bool Partition::RaiseHighWatermark() {
  if (!replica_set_ || deleted_) return false;
  replica_set_->OnAppend(log_->LogEndOffset(), MonoNanos());
  const Offset hw = replica_set_->high_watermark();
  if (hw <= active_.high_watermark) return false;
  if (Status s = Expose(hw); !s.ok()) {
    RDMQ_LOG(kError, "broker", "exposing the replicas' high watermark failed")
        .kv("partition", where_)
        .kv("high_watermark", hw)
        .kv("error", s);
    return false;
  }
  const Offset now = active_.high_watermark;
  while (!replicated_waiters_.empty() && replicated_waiters_.begin()->first <= now) {
    auto done = std::move(replicated_waiters_.begin()->second);
    replicated_waiters_.erase(replicated_waiters_.begin());
    done(Status::Ok());
  }
  return true;
}

void Partition::WhenReplicated(Offset end, std::function<void(const Status&)> done) {
  if (!replica_set_ && replicated_) {
    // Just elected: the followers are not being fed yet (ClusterMember starts that after it
    // serves). The client retries.
    done(Status(WireError::kNotEnoughReplicas, "the replication of " + where_ + " is starting"));
    return;
  }
  if (!replica_set_ || end <= active_.high_watermark) {
    done(Status::Ok());
    return;
  }
  replicated_waiters_.emplace(end, std::move(done));
}

Status Partition::CheckAcksAll() {
  if (!replicated_ || !serving()) return Status::Ok();  // a refused write says why itself
  if (!replica_set_) {
    return Status(WireError::kNotEnoughReplicas, "the replication of " + where_ + " is starting");
  }
  if (Status s = replica_set_->CheckAcksAll(); !s.ok()) {
    return Status(WireError::kNotEnoughReplicas, where_ + ": " + std::string(s.context()));
  }
  return Status::Ok();
}

bool Partition::WantsSpare() {
  if (deleted_ || spare_asked_for_ == active_.base.value()) return false;
  // A partition that rolled since it opened is written at volume: its next segment is made as soon
  // as the new one takes commits (a part of a segment's time may not be enough to make it on a
  // busy machine). One that never rolled gets it once a quarter full, so that idle partitions
  // hold none.
  if (!(rolled_ && active_.committed.value() > 0) && active_.committed.value() < active_.capacity / 4)
    return false;
  spare_asked_for_ = active_.base.value();
  return true;
}

void Partition::Advance(Position committed, Offset log_end) {
  active_.committed = committed;
  active_.log_end = log_end;
  // A replicated log exposes only what its leader released (Expose), not what was committed.
  active_.high_watermark = replicated_ ? log_->HighWatermark() : log_end;
}

Status Partition::SyncSegments() {
  std::vector<storage::SegmentInfo> segs = log_->Segments();
  std::set<Offset> live;
  for (auto& s : segs) {
    const Offset base = s.base_offset;
    live.insert(base);
    auto it = segments_.find(base);
    if (it != segments_.end() && it->second.info.mapping == s.mapping) {
      it->second.info.sealed = s.sealed;
      continue;
    }
    if (it != segments_.end()) {
      // The log mapped it anew (a truncation into a segment it had mapped read-only): register
      // the new mapping; readers of the old one keep it for the grace period.
      retired_.emplace_back(MonoNanos() + kRetiredGraceNs, std::move(it->second));
      segments_.erase(it);
    }
    // Sealed segments are mapped read-only by the log (after recovery): register them so.
    const uint32_t access = s.sealed ? fabric::kRemoteRead : kSegmentAccess;
    SegmentReg reg;
    std::byte* addr = s.mapping;
    if (s.sealed && fabric_->provider() == fabric::Provider::kVerbs) {
      RDMQ_ASSIGN_OR_RETURN(reg.alias, WritableAlias::Map(s.path, s.mapping_size));
      addr = reg.alias->data();
    }
    auto region =
        RegisterMapping(*fabric_, addr, s.mapping_size, s.fd, s.file_id, s.path, s.file_offset, access);
    if (!region.ok()) return region.status().WithContext("register segment " + s.path);
    reg.region = std::move(*region);
    auto rd = reg.region->Descriptor(fabric::kRemoteRead);
    if (!rd.ok()) return rd.status().WithContext("read-only descriptor of segment " + s.path);
    reg.read_descriptor = rd->Encode();
    reg.info = std::move(s);
    segments_.emplace(base, std::move(reg));
  }
  const uint64_t now = MonoNanos();
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (live.count(it->first) == 0) {
      RDMQ_LOG(kDebug, "broker", "segment retired").kv("partition", where_).kv("base", it->first);
      retired_.emplace_back(now + kRetiredGraceNs, std::move(it->second));
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  DropRetired(now);
  RefreshActive();
  return Status::Ok();
}

Status Partition::Roll() {
  RDMQ_RETURN_IF_ERROR(log_->Roll());
  return SyncSegments();
}

void Partition::DropRetired(uint64_t now_ns) {
  // The region goes first, then the pin (SegmentReg's member order).
  if (!retired_.empty()) std::erase_if(retired_, [now_ns](const auto& r) { return r.first <= now_ns; });
}

const SegmentReg* Partition::FindSegment(Offset base) const {
  auto it = segments_.find(base);
  return it == segments_.end() ? nullptr : &it->second;
}

std::vector<protocol::SegmentLocation> Partition::ReadLocations() const {
  std::vector<protocol::SegmentLocation> out;
  out.reserve(segments_.size());
  for (const auto& [base, reg] : segments_) out.push_back(ReadLocation(base, reg));
  return out;
}

namespace {

// Notes in the session that it holds read grants of `p` (once).
void NoteReader(Session& s, const std::shared_ptr<Partition>& p) {
  MutexLock lock(s.mu);
  for (const auto& w : s.read_partitions) {
    if (w.lock() == p) return;
  }
  std::erase_if(s.read_partitions, [](const std::weak_ptr<Partition>& w) { return w.expired(); });
  s.read_partitions.push_back(p);
}

}  // namespace

Result<std::string> Partition::SlotGrant(const std::shared_ptr<Session>& s) {
  auto it = slot_grants_.find(s->client_id);
  if (it == slot_grants_.end()) {
    RDMQ_ASSIGN_OR_RETURN(auto g, ReadGrant::Make(s, *slot_region_, slot_.size));
    it = slot_grants_.emplace(s->client_id, std::move(g)).first;
    NoteReader(*s, shared_from_this());
  }
  return it->second->descriptor();
}

Result<protocol::SegmentLocation> Partition::GrantedReadLocation(Offset base,
                                                                 const std::shared_ptr<Session>& s) {
  auto seg = segments_.find(base);
  if (seg == segments_.end()) {
    return Status(WireError::kStaleLocation,
                  "no segment with base offset " + std::to_string(base.value()) + " in " + where_);
  }
  SegmentReg& reg = seg->second;
  auto it = reg.read_grants.find(s->client_id);
  if (it == reg.read_grants.end()) {
    RDMQ_ASSIGN_OR_RETURN(auto g, ReadGrant::Make(s, *reg.region, reg.info.mapping_size));
    it = reg.read_grants.emplace(s->client_id, std::move(g)).first;
    NoteReader(*s, shared_from_this());
  }
  protocol::SegmentLocation loc = ReadLocation(base, reg);
  loc.region.bytes = it->second->descriptor();
  return loc;
}

void Partition::DropReadGrants(uint64_t client_id) {
  (void)DropReadGrantsIf([client_id](uint64_t c) { return c == client_id; });
}

size_t Partition::DropReadGrantsIf(const std::function<bool(uint64_t client_id)>& drop) {
  size_t n = 0;
  auto sweep = [&](ReadGrants& grants) {
    n += std::erase_if(grants, [&](const auto& g) { return drop(g.first); });
  };
  sweep(slot_grants_);
  for (auto& [base, reg] : segments_) sweep(reg.read_grants);
  for (auto& [when, reg] : retired_) sweep(reg.read_grants);
  return n;
}

void Partition::SpoilTail(Position position, uint64_t len) {
  const uint64_t pos = position.value();
  if (active_.data == nullptr || pos >= active_.capacity || len == 0) return;
  const uint64_t n = std::min<uint64_t>({len, storage::kBatchHeaderSize, active_.capacity - pos});
  std::memset(active_.data + pos, 0, n);
  if (active_.durable) {
    // From the start of the page holding the first spoiled byte to the last one.
    std::byte* first = active_.data + pos;
    std::byte* page = first - (reinterpret_cast<uintptr_t>(first) & uintptr_t{4095});
    if (::msync(page, static_cast<size_t>(first + n - page), MS_SYNC) != 0) {
      RDMQ_LOG(kWarn, "broker", "msync of a refused range failed").kv("partition", where_).kv("errno", errno);
    }
  }
}

uint64_t Partition::SlotGeneration() const {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(slot_.memory))
      .load(std::memory_order_acquire);
}

CommitValidator Partition::Validator() const {
  return CommitValidator(where_, producers_, config_.max_message_bytes);
}

Status Partition::Reconfigure(const metadata::TopicConfig& config) {
  if (deleted_ || log_ == nullptr) return TopicDeleted(topic_name_);
  RDMQ_RETURN_IF_ERROR(log_->Reconfigure(LogOptionsFor(topic_id_, config, index_, options_)));
  config_ = config;
  if (replica_set_) replica_set_->SetMinInsync(config.min_insync_replicas);  // acks=all from now on
  return Status::Ok();
}

void Partition::AddLease(const std::shared_ptr<Lease>& l, uint64_t now_ns, uint64_t linger_ns) {
  if (l->shared()) {
    shared_[l->id] = l;
    shared_until_ns_ = now_ns + linger_ns;
  } else {
    exclusive_ = l;
  }
}

void Partition::RemoveLease(const Lease& l) {
  if (exclusive_.get() == &l) exclusive_.reset();
  shared_.erase(l.id);
}

std::vector<std::shared_ptr<Lease>> Partition::Leases() const {
  std::vector<std::shared_ptr<Lease>> out;
  if (exclusive_) out.push_back(exclusive_);
  for (const auto& [id, l] : shared_) out.push_back(l);
  return out;
}

std::vector<std::shared_ptr<Lease>> Partition::ExpiredLeases(uint64_t now_ns) const {
  std::vector<std::shared_ptr<Lease>> out;
  if (exclusive_ && exclusive_->deadline_ns < now_ns) out.push_back(exclusive_);
  for (const auto& [id, l] : shared_) {
    if (l->deadline_ns < now_ns) out.push_back(l);
  }
  return out;
}

bool Partition::SharedActive(uint64_t now_ns, uint64_t linger_ns) {
  if (!shared_.empty()) shared_until_ns_ = now_ns + linger_ns;
  return !shared_.empty() || !pending_.empty() || now_ns < shared_until_ns_;
}

void Partition::AddPending(Offset segment, Position position, PendingRange r) {
  pending_[{segment, position}] = std::move(r);
}

uint64_t Partition::AddCommitWaiter(std::function<void()> w) {
  const uint64_t id = next_waiter_id_++;
  commit_waiters_.emplace(id, std::move(w));
  return id;
}

void Partition::RemoveCommitWaiter(uint64_t id) { commit_waiters_.erase(id); }

std::vector<std::function<void()>> Partition::TakeCommitWaiters() {
  std::vector<std::function<void()>> out;
  out.reserve(commit_waiters_.size());
  for (auto& [id, w] : commit_waiters_) out.push_back(std::move(w));
  commit_waiters_.clear();
  return out;
}

std::optional<PendingRange> Partition::TakePending(Offset segment, Position position) {
  auto it = pending_.find({segment, position});
  if (it == pending_.end()) return std::nullopt;
  PendingRange r = std::move(it->second);
  pending_.erase(it);
  return r;
}

void Partition::CloseLog() {
  for (auto& [at, r] : pending_) {
    if (r.local_done)
      r.local_done(Status(Errc::kUnavailable, where_ + " was closed before the append completed"));
  }
  pending_.clear();
  if (Status s = log_->Close(); !s.ok()) {
    RDMQ_LOG(kWarn, "broker", "closing a partition log failed").kv("partition", where_).kv("error", s);
  }
}

Buried Partition::MarkDeleted(bool keep_registrations) {
  deleted_ = true;
  watches_.clear();
  for (auto& w : TakeCommitWaiters()) w();  // they find the partition deleted
  FailReplicatedWaiters(Status(WireError::kNotLeader, where_ + " is closed on this broker"));
  Buried b;
  if (keep_registrations) {
    b.segments = std::move(segments_);
    b.retired = std::move(retired_);
    b.slot_region = std::move(slot_region_);
    b.slot = std::move(slot_);
    b.slot_grants = std::move(slot_grants_);
  }
  // The registrations go before the log that maps what they cover (grants before their regions).
  slot_grants_.clear();
  segments_.clear();
  retired_.clear();
  slot_region_.reset();
  slot_ = {};
  log_.reset();
  return b;
}

void Partition::RemoveFiles() const {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (ec) {
    RDMQ_LOG(kWarn, "broker", "could not remove a partition directory")
        .kv("dir", dir_)
        .kv("error", ec.message());
  }
}

}  // namespace rdmq::broker::internal
