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
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <vector>

#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

struct Bell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};
};
static_assert(sizeof(Bell) == 8 && std::atomic<uint32_t>::is_always_lock_free);

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

  void Push(const Completion& c);
  void PushMany(std::span<const Completion> cs);
  void Ring() noexcept { RingBell(bell_); }
  void AddSource(CqSource* s);
  void RemoveSource(CqSource* s);

  size_t Poll(std::span<Completion> out) override;
  Status Wait(std::chrono::nanoseconds timeout) override;

 private:
  bool HasWork() noexcept;

  Bell* bell_;
  std::mutex mu_;
  std::deque<Completion> queue_;
  std::atomic<size_t> queued_{0};
  std::mutex sources_mu_;
  std::vector<CqSource*> sources_;
  std::atomic<size_t> nsources_{0};
};

}  // namespace rdmq::fabric::internal
