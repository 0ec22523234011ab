#include "soft_cq.h"

#include <algorithm>

#include "futex.h"
#include "rdmq/common/clock.h"

namespace rdmq::fabric::internal {

void RingBell(Bell* bell) noexcept {
  bell->seq.fetch_add(1, std::memory_order_seq_cst);
  if (bell->waiters.load(std::memory_order_seq_cst) != 0) FutexWake32(&bell->seq);
}

void SoftCq::Push(const Completion& c) {
  {
    MutexLock l(mu_);
    queue_.push_back(c);
    queued_.fetch_add(1, std::memory_order_release);
  }
  Ring();
}

void SoftCq::PushMany(std::span<const Completion> cs) {
  if (cs.empty()) return;
  {
    MutexLock l(mu_);
    queue_.insert(queue_.end(), cs.begin(), cs.end());
    queued_.fetch_add(cs.size(), std::memory_order_release);
  }
  Ring();
}

void SoftCq::AddSource(CqSource* s) {
  MutexLock l(sources_mu_);
  sources_.push_back(s);
  nsources_.store(sources_.size(), std::memory_order_release);
}

void SoftCq::RemoveSource(CqSource* s) {
  MutexLock l(sources_mu_);
  sources_.erase(std::remove(sources_.begin(), sources_.end(), s), sources_.end());
  nsources_.store(sources_.size(), std::memory_order_release);
}

size_t SoftCq::Poll(std::span<Completion> out) {
  size_t n = 0;
  if (out.empty()) return 0;
  if (nsources_.load(std::memory_order_acquire) != 0) {
    MutexLock l(sources_mu_);
    for (CqSource* s : sources_) {
      if (n == out.size()) break;
      n += s->Drain(out.subspan(n));
    }
  }
  if (n < out.size() && queued_.load(std::memory_order_acquire) != 0) {
    MutexLock l(mu_);
    while (n < out.size() && !queue_.empty()) {
      out[n++] = queue_.front();
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  return n;
}

bool SoftCq::HasWork() noexcept {
  if (queued_.load(std::memory_order_acquire) != 0) return true;
  if (nsources_.load(std::memory_order_acquire) == 0) return false;
  MutexLock l(sources_mu_);
  for (CqSource* s : sources_) {
    if (s->Ready()) return true;
  }
  return false;
}

Status SoftCq::Wait(std::chrono::nanoseconds timeout) {
  const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0));
  for (;;) {
    const uint32_t seq = bell_->seq.load(std::memory_order_seq_cst);
    if (HasWork()) return Status::Ok();
    const uint64_t now = MonoNanos();
    if (now >= deadline) return Status(Errc::kTimeout, "completion queue wait");
    bell_->waiters.fetch_add(1, std::memory_order_seq_cst);
    if (bell_->seq.load(std::memory_order_seq_cst) == seq) {
      FutexWait32(&bell_->seq, seq, std::chrono::nanoseconds(deadline - now));
    }
    bell_->waiters.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace rdmq::fabric::internal
