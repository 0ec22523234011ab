// The client's thread scheduler (Algorithm 1, run every interval and on channel changes) and
// the calling thread's side of it: which channel its next request goes to.
#include <vector>

#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

void ClientImpl::SchedulerLoop() {
  while (!stop_.load(std::memory_order_acquire)) {
    const uint32_t seen = sched_event_.Read();
    const bool busy = RunSchedule();
    // Nothing sent since the last run: look again less often (a channel change wakes us).
    sched_event_.Wait(seen, busy ? opts_.schedule_interval : 10 * opts_.schedule_interval);
  }
}

bool ClientImpl::RunSchedule() {
  std::vector<uint32_t> active;
  for (const auto& c : ch_) {
    if (c->active.load(std::memory_order_acquire)) active.push_back(c->index);
  }
  if (active.empty()) return true;
  const uint32_t n = nthreads_.load(std::memory_order_acquire);
  std::vector<ThreadLoad> loads(n);
  std::vector<ThreadState*> tss(n);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadState* ts = threads_[i].load(std::memory_order_acquire);
    tss[i] = ts;
    if (ts == nullptr) continue;
    SpinGuard g(ts->stats_mu);
    loads[i].median_size = ts->sizes.Median();
    loads[i].requests = ts->requests;
    loads[i].bytes = ts->bytes;
    loads[i].current = ts->assigned.load(std::memory_order_relaxed);
    ts->sizes.Clear();
    ts->requests = 0;
    ts->bytes = 0;
  }
  // Algorithm 1 when the active set changed or the placement is lopsided; otherwise threads
  // stay where they are (a move costs a drain of the thread's outstanding responses).
  bool busy = false;
  for (const auto& l : loads) busy |= l.requests > 0;
  if (active == last_active_ && PlacementBalanced(loads, active, 1.5)) return busy;
  last_active_ = active;
  const auto out = AssignThreads(loads, active);
  for (uint32_t i = 0; i < n; ++i) {
    if (tss[i] != nullptr) tss[i]->assigned.store(out[i], std::memory_order_release);
  }
  n_.schedules.fetch_add(1, std::memory_order_relaxed);
  return busy;
}

uint32_t ClientImpl::PickChannel(ThreadState& ts, const PendingCall* call, Presence& presence) {
  const uint32_t n = channels();
  uint32_t cur = ts.current.load(std::memory_order_relaxed);
  uint32_t want = opts_.placement == ClientOptions::Placement::kPinned
                      ? ts.id % n
                      : ts.assigned.load(std::memory_order_acquire);
  if (want >= n) want = cur;
  for (int round = 0;; ++round) {
    if (ch_[want]->active.load(std::memory_order_acquire)) break;
    // The scheduler has not moved us yet: any active channel will do meanwhile.
    sched_event_.Notify();
    bool found = false;
    for (uint32_t k = 1; k <= n; ++k) {
      const uint32_t cand = (want + k) % n;
      if (ch_[cand]->active.load(std::memory_order_acquire)) {
        want = cand;
        found = true;
        break;
      }
    }
    if (found || broken_.load(std::memory_order_acquire)) break;
    HelpWhileWaiting(presence, round);  // no channel active at all (a transient of redistribution)
  }
  if (want == cur) return cur;
  // A thread moves only once its responses on the old channel have all arrived.
  for (int round = 0;; ++round) {
    bool busy = false;
    {
      MutexLock g(ts.mu);
      for (const PendingCall* p : ts.pending) busy |= p != call && p->channel == cur;
    }
    if (!busy || broken_.load(std::memory_order_acquire)) break;
    HelpWhileWaiting(presence, round);
  }
  ts.current.store(want, std::memory_order_relaxed);
  n_.migrations.fetch_add(1, std::memory_order_relaxed);
  return want;
}

}  // namespace rdmq::rpc::internal
