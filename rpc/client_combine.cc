// How threads share a channel (FLOCK synchronisation): presence among the response pollers, the
// thread combining queue (the head leads, the others follow), waiting, and the spinlock
// alternative of Sharing::kSpinlock.
#include <thread>

#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

void Presence::Enter() {
  if (in_) return;
  // Pure spinning only while callers do not outnumber the spare cores: otherwise a pure spinner
  // keeps its core from callers that are ready to run.
  pure_ = false;
  if (c_->callers_.load(std::memory_order_acquire) <= c_->max_spinners_) {
    if (c_->spinners_.fetch_add(1, std::memory_order_acq_rel) < c_->max_spinners_) {
      pure_ = true;
    } else {
      c_->spinners_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  if (!pure_) c_->spinners_.fetch_sub(1, std::memory_order_acq_rel);
  in_ = true;
  if (c_->poll_spinners_.fetch_add(1, std::memory_order_acq_rel) == 0) c_->PublishParked(0);
}

void Presence::Leave() {
  if (!in_) return;
  in_ = false;
  if (pure_) c_->spinners_.fetch_sub(1, std::memory_order_acq_rel);
  pure_ = false;
  if (c_->poll_spinners_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (c_->imm_mode_) {
      // The dispatcher stepped aside while we polled; it goes back to waiting on the CQ.
      c_->WakeDispatcher();
    } else {
      c_->PublishParked(1);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      c_->TryPoll();  // anything that landed before the server could see "parked"
    }
  }
}

Outcome ClientImpl::SendCoalesced(Channel& ch, Item& item, ThreadState& ts, bool quiet,
                                  Clock::time_point deadline, Presence& presence) {
  CombiningQueue::Node node;
  node.item = &item;
  node.park = &ts.park;
  node.quiet_served = quiet;  // a synchronous caller sleeps on until its response
  if (!ch.tcq.Enqueue(&node)) {
    // A follower: wait for the leader to take our request or to hand us the lead. Followers
    // do not time out: the leader always gets to them (or hands over).
    WaitFor(
        ts, presence, [&] { return node.state.load(std::memory_order_acquire) != CombiningQueue::kWaiting; },
        Clock::time_point::max());
    switch (node.state.load(std::memory_order_acquire)) {
      case CombiningQueue::kServed:
        return Outcome::kServed;
      case CombiningQueue::kRetry:
        return Outcome::kRetry;
      case CombiningQueue::kFailed:
        return Outcome::kFailed;
      default:
        break;  // kLeader
    }
    presence.Enter();
  }
  return Lead(ch, &node, item, deadline, presence);
}

void ClientImpl::WakeOwner(ThreadState& ts) {
  if (ts.park.Notify() && !ts.woken.exchange(true, std::memory_order_acq_rel)) {
    woken_.fetch_add(1, std::memory_order_acq_rel);
  }
}

Outcome ClientImpl::SendLocked(Channel& ch, Item& item, Clock::time_point deadline, Presence& presence) {
  // Spin for the channel's lock. A present thread polls while it spins (the holder may be
  // waiting for a credit grant that only a poller can deliver) and steps out after a while.
  const auto until = Clock::now() + opts_.spin;
  for (uint32_t i = 0; !ch.send_lock.try_lock(); ++i) {
    if (presence.in() && (i & 7) == 7) {
      TryPoll();
      if (Clock::now() >= until) presence.Leave();
    }
    kLockBackoff.Pause(i);
  }
  SpinGuard g(ch.send_lock, std::adopt_lock);
  return Lead(ch, nullptr, item, deadline, presence);
}

void ClientImpl::HelpWhileWaiting(Presence& presence, int round) {
  if (presence.in()) TryPoll();
  kHelpBackoff.Pause(static_cast<uint32_t>(round));
}

}  // namespace rdmq::rpc::internal
