#include "housekeeper.h"

#include <algorithm>
#include <vector>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "session.h"

namespace rdmq::broker::internal {

using protocol::WireError;

Housekeeper::Housekeeper(Intervals iv, TopicTable& topics, LeaseManager& leases, Publisher& publisher,
                         Counters& counters, SegmentPreparer* preparer, const std::atomic<bool>& stopping)
    : iv_(iv),
      topics_(topics),
      leases_(leases),
      publisher_(publisher),
      n_(counters),
      preparer_(preparer),
      stopping_(stopping) {}

void Housekeeper::Start() {
  last_checkpoint_ns_ = last_retention_ns_ = MonoNanos();
  thread_ = std::thread([this] { Loop(); });
}

void Housekeeper::Stop() {
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void Housekeeper::Loop() {
  const auto tick = std::chrono::milliseconds(std::clamp<uint32_t>(iv_.lease_ms / 10, 5, 100));
  UniqueLock lock(mu_);
  while (!stopping_.load(std::memory_order_acquire)) {
    cv_.WaitFor(lock, tick);
    if (stopping_.load(std::memory_order_acquire)) break;
    lock.Unlock();
    Tick(MonoNanos());
    topics_.DropBuried(MonoNanos());
    lock.Lock();
  }
}

void Housekeeper::Tick(uint64_t now) {
  const bool checkpoint = now - last_checkpoint_ns_ >= uint64_t{iv_.checkpoint_ms} * 1'000'000;
  const bool retention = now - last_retention_ns_ >= uint64_t{iv_.retention_check_ms} * 1'000'000;
  if (checkpoint) last_checkpoint_ns_ = now;
  if (retention) last_retention_ns_ = now;
  for (const auto& pp : topics_.AllPartitions()) {
    Partition& p = *pp;
    MutexLock lock(p.mu);
    if (p.deleted()) continue;
    Tend(p, now, checkpoint, retention);
    if (preparer_ != nullptr) preparer_->MaybeWant(p);
  }
}

void Housekeeper::Tend(Partition& p, uint64_t now, bool checkpoint, bool retention) {
  for (const auto& l : p.ExpiredLeases(now)) {
    Counters::Add(n_.leases_expired);
    RDMQ_LOG(kInfo, "broker", "lease expired")
        .kv("partition", p.where())
        .kv("lease", l->id)
        .kv("client", l->session->client_id);
    leases_.EndLocked(p, l, WireError::kLeaseExpired, true);
  }
  for (const auto& l : p.Leases()) {
    if (!leases_.Idle(*l, now)) continue;
    Counters::Add(n_.leases_idle);
    RDMQ_LOG(kInfo, "broker", "idle lease released")
        .kv("partition", p.where())
        .kv("lease", l->id)
        .kv("client", l->session->client_id);
    leases_.EndLocked(p, l, WireError::kLeaseExpired, true);
  }
  if (p.SharedActive(now, 4 * uint64_t{iv_.lease_ms} * 1'000'000)) ExpireReservations(p);
  p.DropRetired(now);
  if (checkpoint && p.TakeDirty()) {
    if (Status s = p.log().Checkpoint(); !s.ok()) {
      RDMQ_LOG(kWarn, "broker", "checkpoint failed").kv("partition", p.where()).kv("error", s);
    }
  }
  if (retention) ApplyRetention(p);
}

void Housekeeper::ExpireReservations(Partition& p) {
  auto out = p.log().ExpireReservations(MonoNanos());
  if (!out.ok()) {
    RDMQ_LOG(kWarn, "broker", "expiring reservations failed")
        .kv("partition", p.where())
        .kv("error", out.status());
    return;
  }
  if (out->fillers == 0 && !out->rolled && out->completed.empty() && out->dropped.empty()) return;
  if (out->fillers > 0) {
    RDMQ_LOG(kInfo, "broker", "expired reservations filled")
        .kv("partition", p.where())
        .kv("fillers", out->fillers)
        .kv("bytes", out->filled_bytes);
  }
  std::vector<storage::CompletedRange> completed(out->completed.begin(), out->completed.end());
  std::vector<storage::CompletedRange> dropped(out->dropped.begin(), out->dropped.end());
  if (Status s = p.SyncSegments(); !s.ok()) {
    RDMQ_LOG(kError, "broker", "registering segments failed").kv("partition", p.where()).kv("error", s);
  }
  leases_.Settle(p, completed, dropped);
  p.MarkDirty();
  publisher_.Publish(p);
}

void Housekeeper::ApplyRetention(Partition& p) {
  auto out = p.log().ApplyRetention(WallMillis());
  if (!out.ok()) {
    RDMQ_LOG(kWarn, "broker", "retention failed").kv("partition", p.where()).kv("error", out.status());
    return;
  }
  if (out->segments_deleted == 0) return;
  if (Status s = p.SyncSegments(); !s.ok()) {
    RDMQ_LOG(kError, "broker", "unregistering segments failed").kv("partition", p.where()).kv("error", s);
  }
  publisher_.Publish(p);
}

}  // namespace rdmq::broker::internal
