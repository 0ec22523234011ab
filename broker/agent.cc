// The storage-node agent: partition logs as fabric regions, leases, the data-plane commit path,
// acks, shared-mode settlement, watches, sessions and housekeeping (expiry, retention,
// checkpoints).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "broker_impl.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::broker::internal {

using protocol::WireError;

namespace {

constexpr uint32_t kSegmentAccess =
    fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteWrite | fabric::kRemoteAtomic;

std::string Where(const Partition& p) { return p.topic.name + "-" + std::to_string(p.index); }

storage::LogOptions LogOptionsFor(const metadata::TopicInfo& t, int32_t index, const BrokerConfig& cfg) {
  storage::LogOptions o;
  o.topic = t.id;
  o.partition = PartitionId(index);
  o.segment_bytes = t.config.segment_bytes;
  o.persist = t.config.durability == metadata::Durability::kDurable ? storage::PersistMode::kMsync
                                                                    : storage::PersistMode::kNone;
  o.index_interval_bytes = t.config.index_interval_bytes;
  o.retention_bytes = t.config.retention_bytes > 0 ? static_cast<uint64_t>(t.config.retention_bytes) : 0;
  o.retention_ms = t.config.retention_ms > 0 ? t.config.retention_ms : 0;
  o.reservation_lease_ns = uint64_t{cfg.lease_ms} * 1'000'000;
  o.checkpoint_interval_ms = cfg.checkpoint_interval_ms;
  return o;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Partitions

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

Result<std::shared_ptr<Partition>> BrokerImpl::OpenPartition(const metadata::TopicInfo& topic,
                                                             int32_t index) {
  auto p = std::make_shared<Partition>();
  p->topic = topic;
  p->index = index;
  p->dir = cfg_.data_dir + "/topics/" + topic.name + "-" + std::to_string(index);
  auto log = storage::PartitionLog::Open(env_, p->dir, LogOptionsFor(topic, index, cfg_));
  if (!log.ok()) return log.status().WithContext("partition " + Where(*p) + " in " + p->dir);
  p->log = std::move(*log);
  std::lock_guard lock(p->mu);
  p->slot = p->log->Slot();
  auto slot_region = data_fabric_->Register(p->slot.memory, p->slot.size, p->slot.fd, p->slot.file_offset,
                                            fabric::kRemoteRead);
  if (!slot_region.ok())
    return slot_region.status().WithContext("register the partition slot of " + Where(*p));
  p->slot_region = std::move(*slot_region);
  p->slot_descriptor = p->slot_region->Descriptor().Encode();
  RDMQ_RETURN_IF_ERROR(SyncSegments(*p));
  RebuildProducers(*p);
  const auto& rs = p->log->recovery();
  RDMQ_LOG(kInfo, "broker", rs.created ? "partition created" : "partition recovered")
      .kv("partition", Where(*p))
      .kv("segments", rs.segments)
      .kv("log_start", p->log->LogStartOffset())
      .kv("high_watermark", p->high_watermark)
      .kv("committed_position", p->committed)
      .kv("truncated_bytes", rs.truncated_bytes)
      .kv("producers", static_cast<uint64_t>(p->producers.size()))
      .kv("seconds", rs.seconds);
  return p;
}

void BrokerImpl::RefreshActive(Partition& p) {
  const storage::SegmentInfo a = p.log->ActiveSegment();
  p.active_base = a.base_offset.value();
  p.active_data = a.data();
  p.capacity = a.capacity;
  p.committed = a.committed.value();
  p.high_watermark = p.log->HighWatermark().value();
}

Status BrokerImpl::SyncSegments(Partition& p) {
  std::vector<storage::SegmentInfo> segs = p.log->Segments();
  std::set<int64_t> live;
  for (auto& s : segs) {
    const int64_t base = s.base_offset.value();
    live.insert(base);
    auto it = p.segments.find(base);
    if (it != p.segments.end()) {
      it->second.info.sealed = s.sealed;
      continue;
    }
    // Sealed segments are mapped read-only by the log (after recovery): register them so.
    const uint32_t access = s.sealed ? fabric::kRemoteRead : kSegmentAccess;
    SegmentReg reg;
    std::byte* addr = s.mapping;
    if (s.sealed && data_fabric_->provider() == fabric::Provider::kVerbs) {
      RDMQ_ASSIGN_OR_RETURN(reg.alias, WritableAlias::Map(s.path, s.mapping_size));
      addr = reg.alias->data();
    }
    auto region = data_fabric_->Register(addr, s.mapping_size, s.fd, s.file_offset, access);
    if (!region.ok()) return region.status().WithContext("register segment " + s.path);
    reg.region = std::move(*region);
    auto rd = reg.region->Descriptor(fabric::kRemoteRead);
    if (!rd.ok()) return rd.status().WithContext("read-only descriptor of segment " + s.path);
    reg.read_descriptor = rd->Encode();
    reg.info = std::move(s);
    p.segments.emplace(base, std::move(reg));
  }
  const uint64_t now = MonoNanos();
  for (auto it = p.segments.begin(); it != p.segments.end();) {
    if (live.count(it->first) == 0) {
      RDMQ_LOG(kDebug, "broker", "segment retired").kv("partition", Where(p)).kv("base", it->first);
      p.retired.emplace_back(now + kRetiredGraceNs, std::move(it->second));
      it = p.segments.erase(it);
    } else {
      ++it;
    }
  }
  // Registrations past their grace period go: the region first, then the pin (member order).
  std::erase_if(p.retired, [now](const auto& r) { return r.first <= now; });
  RefreshActive(p);
  return Status::Ok();
}

void BrokerImpl::ClosePartition(Partition& p, bool remove_files) {
  std::vector<std::shared_ptr<Lease>> leases;
  std::lock_guard lock(p.mu);
  if (p.deleted) return;
  if (p.exclusive) leases.push_back(p.exclusive);
  for (auto& [id, l] : p.shared) leases.push_back(l);
  for (auto& l : leases) {
    EndLeaseLocked(p, l, remove_files ? WireError::kUnknownTopic : WireError::kUnavailable, true);
  }
  p.pending.clear();
  if (Status s = p.log->Close(); !s.ok()) {
    RDMQ_LOG(kWarn, "broker", "closing a partition log failed").kv("partition", Where(p)).kv("error", s);
  }
  // Wake consumers sleeping on the slot: they see the closed flag.
  AfterPublish(p);
  p.deleted = true;
  p.watches.clear();
  if (remove_files && !stopping_.load()) {
    Buried b;
    b.drop_after_ns = MonoNanos() + kRetiredGraceNs;
    b.segments = std::move(p.segments);
    b.retired = std::move(p.retired);
    b.slot_region = std::move(p.slot_region);
    b.slot = std::move(p.slot);
    std::lock_guard g(graveyard_mu_);
    graveyard_.push_back(std::move(b));
  }
  p.segments.clear();
  p.retired.clear();
  p.slot_region.reset();
  p.slot = {};
  p.log.reset();
  if (remove_files) {
    std::error_code ec;
    std::filesystem::remove_all(p.dir, ec);
    if (ec)
      RDMQ_LOG(kWarn, "broker", "could not remove a partition directory")
          .kv("dir", p.dir)
          .kv("error", ec.message());
  }
}

protocol::SegmentLocation ReadLocation(int64_t base, const SegmentReg& reg) {
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

Result<std::shared_ptr<Partition>> BrokerImpl::FindPartition(const std::string& topic, int32_t partition) {
  std::lock_guard lock(topics_mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return Status(WireError::kUnknownTopic, "unknown topic '" + topic + "'");
  const auto& parts = it->second->partitions;
  if (partition < 0 || static_cast<size_t>(partition) >= parts.size()) {
    return Status(WireError::kUnknownPartition, "topic '" + topic + "' has " + std::to_string(parts.size()) +
                                                    " partitions; there is no partition " +
                                                    std::to_string(partition));
  }
  return parts[static_cast<size_t>(partition)];
}

Result<BrokerImpl::LockedPartition> BrokerImpl::LockPartition(const std::string& topic, int32_t partition) {
  RDMQ_ASSIGN_OR_RETURN(auto p, FindPartition(topic, partition));
  std::unique_lock lock(p->mu);
  if (p->deleted) return TopicDeleted(topic);
  return LockedPartition{std::move(p), std::move(lock)};
}

// ---------------------------------------------------------------------------------------------
// Leases

Result<std::shared_ptr<Lease>> BrokerImpl::FindLease(uint64_t lease_id, uint64_t client_id) {
  std::lock_guard lock(leases_mu_);
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) {
    return Status(WireError::kLeaseExpired,
                  "lease " + std::to_string(lease_id) + " is unknown, expired or released");
  }
  if (it->second->session->client_id != client_id) {
    return Status(WireError::kLeaseExpired,
                  "lease " + std::to_string(lease_id) + " belongs to another client");
  }
  return it->second;
}

Status BrokerImpl::GrantSegment(Partition& p, Lease& l) {
  if (l.mode == protocol::ProduceMode::kExclusive && p.capacity - p.committed < storage::kMinFillerBytes) {
    // No room for even the smallest batch: start a new segment now.
    RDMQ_RETURN_IF_ERROR(p.log->Roll());
    RDMQ_RETURN_IF_ERROR(SyncSegments(p));
  }
  auto it = p.segments.find(p.active_base);
  if (it == p.segments.end())
    return Status(Errc::kInternal, "active segment of " + Where(p) + " is not registered");
  std::unique_ptr<fabric::Grant> grant;
  {
    std::lock_guard slock(l.session->mu);
    if (l.session->closed || !l.session->ep)
      return Status(WireError::kUnavailable, "the client's data endpoint is closed");
    if (l.grant) {
      (void)l.grant->Revoke();
      l.grant.reset();
    }
    Result<std::unique_ptr<fabric::Grant>> g =
        l.mode == protocol::ProduceMode::kExclusive
            ? l.session->ep->GrantAccess(*it->second.region,
                                         storage::format::kSegmentHeaderSize + p.committed,
                                         p.capacity - p.committed, fabric::kRemoteWrite)
            : l.session->ep->GrantAccess(*it->second.region, 0, it->second.info.mapping_size,
                                         fabric::kRemoteWrite | fabric::kRemoteAtomic);
    if (!g.ok()) return g.status().WithContext("grant write access to " + Where(p));
    grant = std::move(*g);
  }
  l.grant = std::move(grant);
  l.segment_base = p.active_base;
  l.grant_position = l.mode == protocol::ProduceMode::kExclusive ? p.committed : 0;
  return Status::Ok();
}

Status BrokerImpl::DescribeLease(Partition& p, Lease& l, protocol::LeaseResponse* out) {
  out->lease_id = l.id;
  out->lease_index = l.index;
  out->lease_ms = cfg_.lease_ms;
  out->segment.base_offset = l.segment_base;
  out->segment.region.bytes = l.grant->descriptor().Encode();
  out->segment.capacity = p.capacity;
  if (l.mode == protocol::ProduceMode::kExclusive) {
    out->segment.data_offset = 0;
    out->segment.reservation_offset = 0;
    out->segment.region_position = l.grant_position;
  } else {
    out->segment.data_offset = storage::format::kSegmentHeaderSize;
    out->segment.reservation_offset = storage::format::kReservationWord;
    out->segment.region_position = 0;
  }
  out->write_position = p.committed;
  out->credit_end = p.capacity;
  out->next_offset = p.high_watermark;
  out->last_sequence = -1;
  if (l.producer_id >= 0) {
    auto it = p.producers.find(l.producer_id);
    if (it != p.producers.end() && it->second.epoch == l.producer_epoch)
      out->last_sequence = it->second.last_sequence;
  }
  out->slot.bytes = p.slot_descriptor;
  return Status::Ok();
}

void BrokerImpl::WriteAck(Lease& l, uint16_t error, uint16_t flags) {
  if (!l.ack) return;
  const Partition& p = *l.partition;
  protocol::AckBlock a;
  a.generation = ++l.ack_generation;
  a.acked_position = l.acked_position;
  a.next_offset = l.acked_next_offset;
  a.segment_base = l.acked_segment;
  a.credit_end = p.capacity;
  a.error = error;
  a.flags = flags;
  protocol::EncodeAckBlock(a, l.ack_buf);
  fabric::WorkRequest wr;
  wr.opcode = fabric::Opcode::kWriteImm;
  wr.signaled = false;
  wr.local = {l.ack_buf, protocol::kAckBlockSize, staging_.get()};
  wr.remote = l.ack.get();
  wr.remote_offset = 0;
  wr.imm = l.index;
  std::lock_guard slock(l.session->mu);
  if (l.session->closed || !l.session->ep) return;
  Status s = l.session->ep->Post({&wr, 1});
  for (int i = 0; s.is(fabric::FabricErrc::kQueueFull) && i < 1000; ++i) {
    // Unsignalled writes still occupy send slots until the peer answered (tcp) or a forced
    // completion was polled (verbs); the commit poller frees them.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    s = l.session->ep->Post({&wr, 1});
  }
  if (!s.ok()) {
    RDMQ_LOG(kDebug, "broker", "ack not sent").kv("lease", l.id).kv("error", s);
    return;
  }
  n_.acks.fetch_add(1, std::memory_order_relaxed);
}

void BrokerImpl::EndLeaseLocked(Partition& p, const std::shared_ptr<Lease>& l, WireError error, bool notify) {
  if (l->ended) return;
  l->ended = true;
  {
    // Revoke first: a producer that reads the final ack may write at once, and must fail.
    std::lock_guard slock(l->session->mu);
    if (l->grant) {
      if (Status s = l->grant->Revoke(); !s.ok()) {
        RDMQ_LOG(kWarn, "broker", "revoking a lease's write access failed").kv("lease", l->id).kv("error", s);
      }
      l->grant.reset();
    }
  }
  if (notify) WriteAck(*l, static_cast<uint16_t>(error), protocol::kAckLeaseRevoked);
  {
    std::lock_guard slock(l->session->mu);
    l->ack.reset();
    l->session->leases.erase(l->id);
  }
  if (p.exclusive == l) p.exclusive.reset();
  p.shared.erase(l->id);
  {
    std::lock_guard llock(leases_mu_);
    leases_.erase(l->id);
    const uint32_t slot = protocol::LeaseSlot(l->index);
    if (slot < lease_slots_.size() && lease_slots_[slot] == l) {
      lease_slots_[slot].reset();
      ++lease_reuse_[slot];
      free_slots_.push_back(slot);
    }
  }
  RDMQ_LOG(kDebug, "broker", "lease ended")
      .kv("lease", l->id)
      .kv("partition", Where(p))
      .kv("reason", protocol::make_error_code(error).message());
}

void BrokerImpl::EndLease(const std::shared_ptr<Lease>& l, WireError error, bool notify) {
  std::lock_guard lock(l->partition->mu);
  EndLeaseLocked(*l->partition, l, error, notify);
}

// ---------------------------------------------------------------------------------------------
// Publishing and watches

void BrokerImpl::AfterPublish(Partition& p) {
  if (!p.slot_region) return;
  if (data_fabric_->provider() == fabric::Provider::kShm) p.slot_region->Wake(0);
  if (p.watches.empty()) return;
  const uint64_t gen =
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p.slot.memory)).load(std::memory_order_acquire);
  std::vector<Watch> keep;
  for (auto& w : p.watches) {
    if (w.generation == gen) {
      keep.push_back(w);
      continue;
    }
    auto s = w.session.lock();
    if (!s) continue;
    const uint32_t slot = notify_cursor_.fetch_add(1, std::memory_order_relaxed) % kNotifySlots;
    std::byte* buf = staging_->data() + uint64_t{kMaxLeases} * protocol::kAckBlockSize + uint64_t{slot} * 32;
    protocol::EncodeNotification({p.topic.id.value(), p.index, gen}, buf);
    fabric::WorkRequest wr;
    wr.opcode = fabric::Opcode::kSend;
    wr.signaled = false;
    wr.local = {buf, protocol::kNotificationSize, staging_.get()};
    std::lock_guard slock(s->mu);
    if (s->closed || !s->ep) continue;
    if (Status st = s->ep->Post({&wr, 1}); !st.ok()) {
      RDMQ_LOG(kDebug, "broker", "notification not sent").kv("client", s->client_id).kv("error", st);
      continue;
    }
    n_.notifications.fetch_add(1, std::memory_order_relaxed);
  }
  p.watches = std::move(keep);
}

void BrokerImpl::SpoilTail(Partition& p, uint64_t pos, uint64_t len) {
  if (p.active_data == nullptr || pos >= p.capacity || len == 0) return;
  const uint64_t n = std::min<uint64_t>({len, storage::kBatchHeaderSize, p.capacity - pos});
  std::memset(p.active_data + pos, 0, n);
  if (p.topic.config.durability == metadata::Durability::kDurable) {
    const uintptr_t page = 4096;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p.active_data + pos) & ~(page - 1);
    const uintptr_t b = reinterpret_cast<uintptr_t>(p.active_data + pos + n);
    if (::msync(reinterpret_cast<void*>(a), b - a, MS_SYNC) != 0) {
      RDMQ_LOG(kWarn, "broker", "msync of a refused range failed")
          .kv("partition", Where(p))
          .kv("errno", errno);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Idempotence

Status BrokerImpl::CheckProducer(Partition& p, Lease& l, std::byte* data, uint64_t len, bool shared,
                                 ProducerState* next, int32_t* first_sequence) {
  ProducerState st;
  if (l.producer_id >= 0) {
    auto it = p.producers.find(l.producer_id);
    if (it != p.producers.end()) st = it->second;
    if (it == p.producers.end() || st.epoch != l.producer_epoch) st = ProducerState{l.producer_epoch, -1};
  }
  *first_sequence = -1;
  const uint64_t max_batch = p.topic.config.max_message_bytes;
  uint64_t pos = 0;
  while (pos < len) {
    storage::BatchHeader h;
    // Malformed bytes are the log's to report (with segment and position); stop checking here.
    if (!storage::DecodeBatchHeader({data + pos, len - pos}, &h).ok()) break;
    const uint64_t size = h.total_size();
    if (size > max_batch) {
      return Status(WireError::kRecordTooLarge, "a batch of " + std::to_string(size) + " bytes in " +
                                                    Where(p) + " exceeds max.message.bytes " +
                                                    std::to_string(max_batch));
    }
    if (h.producer_id.value() != l.producer_id ||
        (l.producer_id >= 0 && h.producer_epoch != l.producer_epoch)) {
      return Status(WireError::kInvalidProducerEpoch,
                    "batch at byte " + std::to_string(pos) + " of the range carries producer " +
                        std::to_string(h.producer_id.value()) + " epoch " + std::to_string(h.producer_epoch) +
                        ", the lease is for producer " + std::to_string(l.producer_id) + " epoch " +
                        std::to_string(l.producer_epoch));
    }
    if (l.producer_id >= 0 && !h.is_control()) {
      const int64_t count = h.offset_count();
      const int64_t seq = h.base_sequence;
      const int64_t expected = int64_t{st.last_sequence} + 1;
      if (seq == expected) {
        if (*first_sequence < 0) *first_sequence = h.base_sequence;
        st.last_sequence = static_cast<int32_t>(seq + count - 1);
      } else if (seq >= 0 && seq + count - 1 <= st.last_sequence) {
        n_.duplicates.fetch_add(1, std::memory_order_relaxed);
        if (!shared) {
          return Status(WireError::kDuplicateSequence,
                        "producer " + std::to_string(l.producer_id) + " sequence " + std::to_string(seq) +
                            ".." + std::to_string(seq + count - 1) + " is already committed in " + Where(p) +
                            " (last sequence " + std::to_string(st.last_sequence) + ")");
        }
        // A resend of what is already committed: replace it in place by a filler so it is not
        // delivered twice.
        RDMQ_RETURN_IF_ERROR(storage::WriteFillerBatch({data + pos, size}, kNoOffset, h.max_timestamp));
      } else {
        return Status(WireError::kOutOfOrderSequence,
                      "producer " + std::to_string(l.producer_id) + " sent sequence " + std::to_string(seq) +
                          " to " + Where(p) + ", expected " + std::to_string(expected));
      }
    }
    pos += size;
  }
  *next = st;
  return Status::Ok();
}

void BrokerImpl::RebuildProducers(Partition& p) {
  p.producers.clear();
  for (const auto& [base, reg] : p.segments) {
    const storage::SegmentInfo& s = reg.info;
    uint64_t end = s.committed.value();
    if (base == p.active_base) end = p.committed;
    storage::BatchScanner scan({s.data(), end}, storage::Validation::kHeader);
    storage::BatchView b;
    while (scan.Next(&b)) {
      const auto& h = b.header;
      if (h.producer_id.value() < 0 || h.is_control()) continue;
      ProducerState& st = p.producers[h.producer_id.value()];
      if (h.producer_epoch >= st.epoch) {
        st.epoch = h.producer_epoch;
        st.last_sequence = static_cast<int32_t>(h.base_sequence + h.last_offset_delta);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Shared mode

void BrokerImpl::SettleShared(Partition& p, std::span<const storage::CompletedRange> completed,
                              std::span<const storage::CompletedRange> dropped) {
  auto owner = [&](const storage::CompletedRange& r, PendingRange* out) -> std::shared_ptr<Lease> {
    auto it = p.pending.find({r.segment.value(), r.position.value()});
    if (it == p.pending.end()) return nullptr;
    *out = it->second;
    p.pending.erase(it);
    std::lock_guard llock(leases_mu_);
    auto lit = leases_.find(out->lease_id);
    return lit == leases_.end() ? nullptr : lit->second;
  };
  for (const auto& c : completed) {
    PendingRange pr;
    auto l = owner(c, &pr);
    if (!l || l->ended) continue;
    l->acked_position = c.position.value() + c.length;
    l->acked_segment = c.segment.value();
    l->acked_next_offset = c.next_offset.value();
    WriteAck(*l, 0, 0);
  }
  for (const auto& d : dropped) {
    PendingRange pr;
    auto l = owner(d, &pr);
    if (pr.producer_id >= 0 && pr.first_sequence >= 0) {
      auto it = p.producers.find(pr.producer_id);
      if (it != p.producers.end() && it->second.last_sequence >= pr.first_sequence) {
        it->second.last_sequence = pr.first_sequence - 1;
      }
    }
    if (l && !l->ended) EndLeaseLocked(p, l, WireError::kStaleLocation, true);
  }
}

// ---------------------------------------------------------------------------------------------
// Data plane: the commit poller

std::shared_ptr<Session> BrokerImpl::SessionByEndpoint(uint64_t ep_id) {
  std::lock_guard lock(sessions_mu_);
  auto it = sessions_by_ep_.find(ep_id);
  return it == sessions_by_ep_.end() ? nullptr : it->second;
}

void BrokerImpl::Repost(Session& s, uint32_t n) {
  std::lock_guard slock(s.mu);
  s.recv_owed += n;
  if (s.recv_owed < 32 || s.closed || !s.ep) return;
  std::vector<fabric::RecvRequest> rr(s.recv_owed);
  if (s.ep->PostRecv(rr).ok()) s.recv_owed = 0;
}

void BrokerImpl::CommitFromImm(const fabric::Completion& c) {
  auto session = SessionByEndpoint(c.endpoint_id);
  if (!session) return;
  if (c.status) {
    if (c.status == fabric::FabricErrc::kPeerGone || c.status == fabric::FabricErrc::kFlushed) {
      EndSession(session->client_id, "data endpoint closed");
    } else {
      RDMQ_LOG(kWarn, "broker", "receive failed on a data endpoint")
          .kv("client", session->client_id)
          .kv("error", Status(c.status));
    }
    return;
  }
  Repost(*session, 1);
  if (!c.has_imm) return;  // clients send nothing else
  std::shared_ptr<Lease> l;
  {
    std::lock_guard llock(leases_mu_);
    const uint32_t slot = protocol::LeaseSlot(c.imm);
    if (slot < lease_slots_.size()) l = lease_slots_[slot];
  }
  if (!l || l->index != c.imm || l->session != session) {
    RDMQ_LOG(kDebug, "broker", "commit for an unknown or ended lease ignored")
        .kv("client", session->client_id)
        .kv("imm", c.imm);
    return;
  }
  Partition& p = *l->partition;
  std::lock_guard lock(p.mu);
  if (l->ended) return;  // already told
  auto fail = [&](const Status& s) {
    n_.commit_errors.fetch_add(1, std::memory_order_relaxed);
    RDMQ_LOG(kWarn, "broker", "commit refused; the lease ends")
        .kv("partition", Where(p))
        .kv("lease", l->id)
        .kv("client", session->client_id)
        .kv("error", s);
    EndLeaseLocked(p, l, protocol::ToWireError(s), true);
    // The refused bytes lie at the committed end: recovery's forward scan would adopt a batch
    // there whose CRC and offsets are fine (a duplicate, a sequence gap). Spoil its header
    // now that the producer can no longer write.
    if (!p.deleted && l->segment_base == p.active_base) SpoilTail(p, p.committed, c.byte_len);
  };
  if (p.deleted) return fail(TopicDeleted(p.topic.name));
  if (l->mode != protocol::ProduceMode::kExclusive) {
    return fail(Status(WireError::kInvalidRequest, "shared leases commit with the Commit RPC"));
  }
  if (l->segment_base != p.active_base) {
    return fail(Status(WireError::kStaleLocation, "segment " + std::to_string(l->segment_base) + " of " +
                                                      Where(p) + " is no longer the active one (" +
                                                      std::to_string(p.active_base) + ")"));
  }
  const uint64_t pos = p.committed;
  const uint64_t len = c.byte_len;
  if (len == 0 || len > p.capacity - pos) {
    return fail(Status(WireError::kOutOfCredit,
                       "commit of " + std::to_string(len) + " bytes at position " + std::to_string(pos) +
                           " of " + Where(p) + " runs past the credit end " + std::to_string(p.capacity)));
  }
  ProducerState next;
  int32_t first_seq = -1;
  if (Status s = CheckProducer(p, *l, p.active_data + pos, len, false, &next, &first_seq); !s.ok())
    return fail(s);
  storage::CommitRequest req;
  req.mode = storage::CommitMode::kExclusive;
  req.segment = Offset(p.active_base);
  req.position = Position(pos);
  req.length = len;
  auto out = p.log->Commit(req);
  if (!out.ok()) return fail(out.status());
  if (l->producer_id >= 0) p.producers[l->producer_id] = next;
  p.committed = out->committed.value();
  p.high_watermark = out->high_watermark.value();
  p.dirty = true;
  n_.commits.fetch_add(1, std::memory_order_relaxed);
  l->deadline_ns = MonoNanos() + uint64_t{cfg_.lease_ms} * 1'000'000;
  l->acked_segment = p.active_base;
  l->acked_position = p.committed;
  l->acked_next_offset = p.high_watermark;
  WriteAck(*l, 0, 0);
  AfterPublish(p);
}

void BrokerImpl::CommitLoop() {
  fabric::Completion wc[64];
  const uint64_t spin_ns = uint64_t{cfg_.data_spin_us} * 1000;
  uint64_t idle_since = MonoNanos();
  uint32_t spins = 0;
  while (true) {
    const size_t n = data_recv_cq_->Poll(wc);
    for (size_t i = 0; i < n; ++i) CommitFromImm(wc[i]);
    const size_t m = data_send_cq_->Poll(wc);
    for (size_t i = 0; i < m; ++i) {
      if (wc[i].status && wc[i].status != fabric::FabricErrc::kPeerGone &&
          wc[i].status != fabric::FabricErrc::kFlushed) {
        RDMQ_LOG(kDebug, "broker", "data-plane operation failed")
            .kv("endpoint", wc[i].endpoint_id)
            .kv("op", fabric::OpcodeName(wc[i].opcode))
            .kv("error", Status(wc[i].status));
      }
    }
    if (n != 0 || m != 0) {
      idle_since = MonoNanos();
      continue;
    }
    if (stopping_.load(std::memory_order_acquire)) break;
    if (MonoNanos() - idle_since < spin_ns) {
      // Give way now and then: on a machine where producers and consumers need every core,
      // a poller that never yields takes a third of the CPU from them.
      if ((++spins & 31) == 0) {
        std::this_thread::yield();
      } else {
        CpuRelax();
      }
      continue;
    }
    (void)data_recv_cq_->Wait(std::chrono::milliseconds(10));
    idle_since = MonoNanos();
  }
}

// ---------------------------------------------------------------------------------------------
// Data endpoints

void BrokerImpl::AcceptLoop() {
  fabric::EndpointOptions eo;
  eo.send_cq = data_send_cq_.get();
  eo.recv_cq = data_recv_cq_.get();
  eo.max_send_wr = 4096;
  eo.max_recv_wr = kRecvDepth;
  while (accepting_.load(std::memory_order_acquire)) {
    auto ep = data_fabric_->Accept(eo, std::chrono::milliseconds(100));
    if (!ep.ok()) {
      if (!ep.status().is(Errc::kTimeout)) {
        RDMQ_LOG(kWarn, "broker", "accepting a data endpoint failed").kv("error", ep.status());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    std::unique_ptr<fabric::Endpoint> e = std::move(*ep);
    auto reply = [&](WireError err, const std::string& msg) {
      const std::string r = err == WireError::kOk_ ? protocol::Encode(protocol::ResponseHeader{})
                                                   : protocol::EncodeError(err, msg);
      (void)e->SendControl(std::as_bytes(std::span(r.data(), r.size())));
    };
    auto hello = e->RecvControl(std::chrono::seconds(5));
    if (!hello.ok() || hello->size() != protocol::kDataHelloSize) {
      RDMQ_LOG(kWarn, "broker", "data endpoint without a valid handshake dropped")
          .kv("peer", e->peer())
          .kv("error", hello.ok() ? Status(Errc::kCorruption, std::to_string(hello->size()) + " bytes")
                                  : hello.status());
      if (hello.ok())
        reply(WireError::kInvalidRequest, "the data endpoint handshake is the 8-byte client id");
      continue;
    }
    const uint64_t client_id = coding::LoadLE<uint64_t>(hello->data());
    std::shared_ptr<Session> s;
    {
      std::lock_guard lock(sessions_mu_);
      auto it = sessions_.find(client_id);
      if (it != sessions_.end()) s = it->second;
    }
    if (!s) {
      reply(WireError::kInvalidRequest, "no client " + std::to_string(client_id) + " said Hello");
      continue;
    }
    {
      std::lock_guard slock(s->mu);
      if (s->ep || s->closed) {
        reply(WireError::kInvalidRequest,
              "client " + std::to_string(client_id) + " already has a data endpoint");
        continue;
      }
      std::vector<fabric::RecvRequest> rr(kRecvDepth);
      if (Status st = e->PostRecv(rr); !st.ok()) {
        reply(WireError::kUnavailable, "cannot post receives: " + st.ToString());
        continue;
      }
      s->ep_id = e->id();
      {
        // Known by its endpoint before the client hears OK: its first immediate may follow at
        // once, and the commit poller finds the session by endpoint.
        std::lock_guard lock(sessions_mu_);
        sessions_by_ep_[s->ep_id] = s;
      }
      reply(WireError::kOk_, "");
      s->ep = std::move(e);
    }
    RDMQ_LOG(kDebug, "broker", "data endpoint bound").kv("client", client_id).kv("name", s->name);
  }
}

void BrokerImpl::EndSession(uint64_t client_id, const char* why) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(sessions_mu_);
    auto it = sessions_.find(client_id);
    if (it == sessions_.end()) return;
    s = it->second;
    sessions_.erase(it);
    if (s->ep_id != 0) sessions_by_ep_.erase(s->ep_id);
  }
  std::vector<uint64_t> ids;
  {
    std::lock_guard slock(s->mu);
    ids.assign(s->leases.begin(), s->leases.end());
  }
  for (uint64_t id : ids) {
    std::shared_ptr<Lease> l;
    {
      std::lock_guard llock(leases_mu_);
      auto it = leases_.find(id);
      if (it != leases_.end()) l = it->second;
    }
    if (l) EndLease(l, WireError::kLeaseExpired, false);
  }
  {
    std::lock_guard slock(s->mu);
    s->closed = true;
    if (s->ep) s->ep->Close();
  }
  RDMQ_LOG(kDebug, "broker", "client gone")
      .kv("client", client_id)
      .kv("name", s->name)
      .kv("why", why)
      .kv("leases", ids.size());
}

// ---------------------------------------------------------------------------------------------
// Housekeeping

void BrokerImpl::Housekeep(uint64_t now) {
  const bool checkpoint = now - last_checkpoint_ns_ >= uint64_t{cfg_.checkpoint_interval_ms} * 1'000'000;
  const bool retention = now - last_retention_ns_ >= uint64_t{cfg_.retention_check_interval_ms} * 1'000'000;
  if (checkpoint) last_checkpoint_ns_ = now;
  if (retention) last_retention_ns_ = now;
  std::vector<std::shared_ptr<Partition>> parts;
  {
    std::lock_guard lock(topics_mu_);
    for (const auto& [name, t] : topics_)
      parts.insert(parts.end(), t->partitions.begin(), t->partitions.end());
  }
  for (const auto& pp : parts) {
    Partition& p = *pp;
    std::lock_guard lock(p.mu);
    if (p.deleted) continue;
    std::vector<std::shared_ptr<Lease>> expired;
    if (p.exclusive && p.exclusive->deadline_ns < now) expired.push_back(p.exclusive);
    for (const auto& [id, l] : p.shared) {
      if (l->deadline_ns < now) expired.push_back(l);
    }
    for (const auto& l : expired) {
      n_.leases_expired.fetch_add(1, std::memory_order_relaxed);
      RDMQ_LOG(kInfo, "broker", "lease expired")
          .kv("partition", Where(p))
          .kv("lease", l->id)
          .kv("client", l->session->client_id);
      EndLeaseLocked(p, l, WireError::kLeaseExpired, true);
    }
    if (!p.shared.empty()) p.shared_until_ns = now + 4 * uint64_t{cfg_.lease_ms} * 1'000'000;
    if (!p.shared.empty() || !p.pending.empty() || now < p.shared_until_ns) {
      auto out = p.log->ExpireReservations(MonoNanos());
      if (!out.ok()) {
        RDMQ_LOG(kWarn, "broker", "expiring reservations failed")
            .kv("partition", Where(p))
            .kv("error", out.status());
      } else if (out->fillers > 0 || out->rolled || !out->completed.empty() || !out->dropped.empty()) {
        if (out->fillers > 0) {
          RDMQ_LOG(kInfo, "broker", "expired reservations filled")
              .kv("partition", Where(p))
              .kv("fillers", out->fillers)
              .kv("bytes", out->filled_bytes);
        }
        std::vector<storage::CompletedRange> completed(out->completed.begin(), out->completed.end());
        std::vector<storage::CompletedRange> dropped(out->dropped.begin(), out->dropped.end());
        if (Status s = SyncSegments(p); !s.ok()) {
          RDMQ_LOG(kError, "broker", "registering segments failed").kv("partition", Where(p)).kv("error", s);
        }
        SettleShared(p, completed, dropped);
        p.dirty = true;
        AfterPublish(p);
      }
    }
    if (!p.retired.empty()) std::erase_if(p.retired, [now](const auto& r) { return r.first <= now; });
    if (checkpoint && p.dirty) {
      p.dirty = false;
      if (Status s = p.log->Checkpoint(); !s.ok()) {
        RDMQ_LOG(kWarn, "broker", "checkpoint failed").kv("partition", Where(p)).kv("error", s);
      }
    }
    if (retention) {
      auto out = p.log->ApplyRetention(WallMillis());
      if (!out.ok()) {
        RDMQ_LOG(kWarn, "broker", "retention failed").kv("partition", Where(p)).kv("error", out.status());
      } else if (out->segments_deleted > 0) {
        if (Status s = SyncSegments(p); !s.ok()) {
          RDMQ_LOG(kError, "broker", "unregistering segments failed")
              .kv("partition", Where(p))
              .kv("error", s);
        }
        AfterPublish(p);
      }
    }
  }
}

void BrokerImpl::HousekeepingLoop() {
  auto bury = [this] {
    const uint64_t now = MonoNanos();
    std::vector<Buried> drop;
    {
      std::lock_guard g(graveyard_mu_);
      for (auto it = graveyard_.begin(); it != graveyard_.end();) {
        if (it->drop_after_ns <= now) {
          drop.push_back(std::move(*it));
          it = graveyard_.erase(it);
        } else {
          ++it;
        }
      }
    }
  };
  const auto tick = std::chrono::milliseconds(std::clamp<uint32_t>(cfg_.lease_ms / 10, 5, 100));
  std::unique_lock lock(hk_mu_);
  while (!stopping_.load(std::memory_order_acquire)) {
    hk_cv_.wait_for(lock, tick);
    if (stopping_.load(std::memory_order_acquire)) break;
    lock.unlock();
    Housekeep(MonoNanos());
    bury();
    lock.lock();
  }
}

}  // namespace rdmq::broker::internal
