// A completion queue in software, used by the shm and tcp providers.
//
// Completions come from two places: Push() (local operations, the tcp agent, flushes) and
// sources: objects that produce completions only when the queue is polled (the shm provider's
// inbound mailboxes, which peers in other processes fill). A doorbell (a sequence word plus a
// sleeper count) lets Wait() sleep on a futex; it may live in shared memory so that a peer
// process can ring it after filling a mailbox.
//
// Threading: Push/Ring/AddSource/RemoveSource are thread-safe. Poll and Wait are called by one
// thread at a time (the CompletionQueue contract). RemoveSource waits for a Poll that is
// draining that source to finish.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

// The doorbell: {u32 sequence, u32 sleepers} (docs/fabric.md, "shm mailbox layout"). On shm it
// lives in a memfd page that the peer maps.
struct Bell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};
};
static_assert(sizeof(Bell) == 8 && std::atomic<uint32_t>::is_always_lock_free);
static_assert(offsetof(Bell, seq) == 0 && offsetof(Bell, waiters) == 4);

// Bumps the doorbell and wakes sleepers (of any process) if there are any.
void RingBell(Bell* bell) noexcept;

class CqSource {
 public:
  virtual ~CqSource() = default;
  // Moves ready completions into `out`; returns how many. Called by the polling thread.
  virtual size_t Drain(std::span<Completion> out) = 0;
  // True if Drain would produce something now. Any thread.
  virtual bool Ready() const noexcept = 0;
};

class SoftCq : public CompletionQueue {
 public:
  // `bell` must outlive the queue.
  explicit SoftCq(Bell* bell) : bell_(bell) {}
  ~SoftCq() override = default;

  void Push(const Completion& c) EXCLUDES(mu_);
  void PushMany(std::span<const Completion> cs) EXCLUDES(mu_);
  void Ring() noexcept { RingBell(bell_); }
  void AddSource(CqSource* s) EXCLUDES(sources_mu_);
  void RemoveSource(CqSource* s) EXCLUDES(sources_mu_);

  size_t Poll(std::span<Completion> out) override EXCLUDES(mu_, sources_mu_);
  Status Wait(std::chrono::nanoseconds timeout) override EXCLUDES(sources_mu_);

 private:
  bool HasWork() noexcept EXCLUDES(sources_mu_);

  Bell* bell_;
  Mutex mu_;
  std::deque<Completion> queue_ GUARDED_BY(mu_);
  std::atomic<size_t> queued_{0};
  Mutex sources_mu_;  // held while a source drains, so that RemoveSource waits for it
  std::vector<CqSource*> sources_ GUARDED_BY(sources_mu_);
  std::atomic<size_t> nsources_{0};
};

}  // namespace rdmq::fabric::internal
