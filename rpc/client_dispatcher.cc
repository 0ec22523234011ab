// The client's dispatcher thread: polls the response rings when no caller spins, parks on the
// doorbell (Dekker) or the receive CQ, and keeps house (peer liveness, async deadlines).
#include <string>
#include <thread>
#include <vector>

#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

bool ClientImpl::AnyReady() {
  for (auto& c : ch_) {
    if (c->reader->HasWork()) return true;
  }
  return false;
}

void ClientImpl::Housekeeping() {
  if (!broken_.load(std::memory_order_acquire)) {
    for (auto& c : ch_) {
      if (!c->ep->connected()) {
        Break(Status(fabric::FabricErrc::kPeerGone, "rpc: channel " + std::to_string(c->index) + " to " +
                                                        c->ep->peer() + ": the server went away"));
        break;
      }
    }
  }
  // Deadlines of async calls (sync callers watch their own).
  const auto now = Clock::now();
  const uint32_t n = nthreads_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadState* ts = threads_[i].load(std::memory_order_acquire);
    if (ts == nullptr) continue;
    std::vector<PendingCall*> expired;
    {
      MutexLock g(ts->mu);
      for (size_t k = 0; k < ts->pending.size();) {
        PendingCall* p = ts->pending[k];
        if (p->async && p->deadline <= now) {
          expired.push_back(p);
          ts->pending[k] = ts->pending.back();
          ts->pending.pop_back();
        } else {
          ++k;
        }
      }
    }
    for (PendingCall* p : expired) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      n_.timeouts.fetch_add(1, std::memory_order_relaxed);
      p->status = Status(RpcErrc::kTimedOut,
                         "handler " + std::to_string(p->handler) + ": no response before the deadline");
      RunCallback(p);
    }
  }
}

void ClientImpl::DispatcherLoop() {
  auto last_work = Clock::now();
  auto next_housekeeping = last_work;
  while (!stop_.load(std::memory_order_acquire)) {
    auto now = Clock::now();
    if (now >= next_housekeeping) {
      Housekeeping();
      next_housekeeping = now + std::chrono::milliseconds(1);
    }
    if (broken_.load(std::memory_order_acquire) || poll_spinners_.load(std::memory_order_acquire) > 0) {
      // Nothing to do, or callers poll for themselves: stay out of their way.
      (void)wake_region_->WaitWhileEqual(kDoorbellOffset, Doorbell(*wake_region_), opts_.park_timeout);
      continue;
    }
    size_t woke = 0;
    if (TryPoll(&woke) > 0) {
      last_work = Clock::now();
      // Callers we just woke need a core more than we need to spin.
      if (woke > 0) std::this_thread::yield();
      continue;
    }
    if (outstanding_.load(std::memory_order_acquire) > 0 && now - last_work < opts_.dispatcher_spin) {
      CpuRelax();
      continue;
    }
    if (imm_mode_) {
      // The server sends every response message with WRITE_WITH_IMM: sleep on the receive CQ.
      if (!poll_lock_.exchange(true, std::memory_order_acquire)) {
        (void)recv_cq_->Wait(opts_.park_timeout);
        poll_lock_.store(false, std::memory_order_release);
      }
      continue;
    }
    // Park (Dekker): publish "parked", fence, recheck, sleep on the doorbell. With no call
    // outstanding there are no deadlines to watch: sleep longer between safety-net checks.
    const uint64_t d = Doorbell(*wake_region_);
    SetParked(*wake_region_, 1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (poll_spinners_.load(std::memory_order_seq_cst) == 0 && !AnyReady()) {
      const auto nap =
          outstanding_.load(std::memory_order_acquire) > 0 ? opts_.park_timeout : 10 * opts_.park_timeout;
      (void)wake_region_->WaitWhileEqual(kDoorbellOffset, d, nap);
    }
    if (poll_spinners_.load(std::memory_order_acquire) == 0) SetParked(*wake_region_, 0);
    last_work = Clock::now();
  }
}

}  // namespace rdmq::rpc::internal
