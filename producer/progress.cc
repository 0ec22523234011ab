// Progress (core.h): polling the data endpoint and the partitions' ack blocks, by whichever
// thread needs it (Core::WaitFor), and the I/O thread for what nobody waits for: linger
// deadlines, lost leases, renewals of idle leases, prefaulting, and acks while the application
// is idle.
#include <sys/mman.h>

#include <algorithm>
#include <vector>

#include "producer/core.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace rdmq::producer {

using protocol::WireError;

bool Core::Progress() {
  // The I/O thread handles a lost broker (reconnect.cc); it checks every tick, this wakes it.
  if (!lost_.load(std::memory_order_relaxed) && !conn_->connected()) io_cv_.NotifyAll();
  bool any = data_.Drain();
  HandleCommitResults();
  std::vector<uint32_t> failed;
  data_.TakeFailedWrites(failed);
  const size_t nparts = topics_.partition_count();
  for (size_t i = 0; i < nparts; ++i) {
    PState* ps = topics_.partition(i);
    const bool write_failed = std::find(failed.begin(), failed.end(), ps->id) != failed.end();
    if (!write_failed && !ps->ack.Pending()) continue;
    PLock lock(this, *ps, std::defer_lock);
    if (!lock.TryLock()) continue;
    CheckAcks(*ps);
    if (write_failed) LeaseLost(*ps, Status(WireError::kLeaseExpired, "a write to the segment failed"));
    any = true;
  }
  return any;
}

void Core::Tick(uint64_t now) {
  const uint64_t linger_ns = static_cast<uint64_t>(cfg_.linger.count()) * 1000;
  for (PState* ps : topics_.Partitions()) {
    PLock lock(this, *ps, std::defer_lock);
    if (!lock.TryLock()) continue;
    if (ps->open_batch != nullptr && now - ps->open_batch->created_ns >= linger_ns) Seal(*ps);
    if (!ps->lease.open && (ps->tracker.has_queued() || ps->open_batch != nullptr) && ps->fatal.ok()) {
      if (ps->tracker.DeliveryExpired(now)) {
        FailAll(*ps, Undeliverable(*ps));
        continue;
      }
      if (ps->tracker.has_queued()) (void)Reopen(*ps);
    } else if (ps->tracker.has_queued()) {
      PostSealed(*ps);
    }
    // Keep an idle lease alive.
    RenewIfIdle(*ps, now);
  }
}

void Core::Prefault() {
  const std::vector<PState*> parts = topics_.Partitions();
  const uint64_t ahead = PrefaultAhead(parts.size());  // keep this much ready ahead of the writes
  const uint64_t step = std::min<uint64_t>(uint64_t{4} << 20, ahead);
  for (PState* ps : parts) {
    for (int steps = 0; steps < 8; ++steps) {
      const std::byte* base = nullptr;
      uint64_t from = 0, to = 0;
      {
        BiasedLock lock(ps->mu, std::defer_lock);
        if (!lock.TryLock()) break;
        Lease& l = ps->lease;
        if (ps->mode != PartitionMode::kExclusive || !l.open || !l.remote) break;
        const std::byte* m = l.remote->mapped();
        if (m == nullptr) break;
        const Position cap(l.seg.capacity);
        if (l.prefault_to >= cap || l.prefault_to >= l.write_pos + ahead) break;
        const Position first = std::max(l.prefault_to, l.write_pos);
        const Position last = std::min(cap, first + step);
        base = m;
        // Claimed now; a roll meanwhile resets it (and the range may then be unmapped: madvise
        // on it fails harmlessly or populates the new mapping).
        l.prefault_to = last;
        from = l.seg.RemoteOffset(first);
        to = l.seg.RemoteOffset(last);
      }
      // Whole pages: both ends rounded down to a page boundary.
      constexpr uintptr_t kPage = 4096;
      const std::byte* a = base + from;
      const std::byte* b = base + to;
      a -= reinterpret_cast<uintptr_t>(a) & (kPage - 1);
      b -= reinterpret_cast<uintptr_t>(b) & (kPage - 1);
      if (b > a) (void)::madvise(const_cast<std::byte*>(a), static_cast<size_t>(b - a), MADV_POPULATE_WRITE);
    }
  }
}

void Core::IoLoop() {
  const uint64_t linger_ns = static_cast<uint64_t>(cfg_.linger.count()) * 1000;
  const auto tick =
      std::chrono::nanoseconds(linger_ns > 0 ? std::min<uint64_t>(linger_ns, 1'000'000) : 1'000'000);
  uint64_t last_tick = 0;
  while (!closing_.load(std::memory_order_acquire)) {
    const uint64_t now = MonoNanos();
    if (now - last_tick >= static_cast<uint64_t>(tick.count())) {
      if (!lost_.load(std::memory_order_relaxed) && !conn_->connected()) CheckConnection();
      if (lost_.load(std::memory_order_relaxed)) Reconnect(now);
      Tick(now);
      last_tick = now;
    }
    DropRetiredRemotes();
    Prefault();
    if (app_active_.exchange(false, std::memory_order_relaxed))
      last_app_progress_ns_.store(now, std::memory_order_relaxed);
    const bool app_active = waiters_.load(std::memory_order_acquire) > 0 ||
                            now - last_app_progress_ns_.load(std::memory_order_relaxed) < 100'000;
    if (unacked_.load(std::memory_order_acquire) > 0 && !app_active) {
      if (Progress()) continue;
      if (!cq_sleeper_.test_and_set(std::memory_order_acquire)) {
        (void)conn_->recv_cq()->Wait(tick);
        cq_sleeper_.clear(std::memory_order_release);
      } else {
        UniqueLock lock(io_mu_);
        io_cv_.WaitFor(lock, tick);
      }
      Progress();
    } else {
      UniqueLock lock(io_mu_);
      io_cv_.WaitFor(lock, tick);
      HandleCommitResults();
    }
  }
}

}  // namespace rdmq::producer
