// Breaking a connection: the first failure wins, and every outstanding call fails with it.
#include <vector>

#include "rdmq/common/log.h"
#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

void ClientImpl::Break(const Status& why) {
  {
    MutexLock g(broken_mu_);
    if (broken_.load(std::memory_order_relaxed)) return;
    broken_status_ = Status(RpcErrc::kDisconnected, why.ToString());
    broken_.store(true, std::memory_order_release);
  }
  if (!stop_.load()) {
    RDMQ_LOG(kError, "rpc", "connection broken; failing every outstanding call")
        .kv("client_id", client_id_)
        .kv("why", why);
  }
  FailAll(broken_status());
}

void ClientImpl::FailAll(const Status& why) {
  const uint32_t n = nthreads_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadState* ts = threads_[i].load(std::memory_order_acquire);
    if (ts == nullptr) continue;
    std::vector<PendingCall*> taken, async_taken;
    {
      MutexLock g(ts->mu);
      taken.swap(ts->pending);
      outstanding_.fetch_sub(static_cast<int64_t>(taken.size()), std::memory_order_acq_rel);
      for (PendingCall* p : taken) {
        p->status = why;
        if (p->async) {
          async_taken.push_back(p);
        } else {
          // Final: a synchronous call lives on its caller's stack and may be gone the moment
          // `done` is seen, so nothing of it is read after this store.
          p->done.store(1, std::memory_order_release);
        }
      }
    }
    ts->park.Notify();
    for (PendingCall* p : async_taken) RunCallback(p);
  }
  for (auto& c : ch_) c->credit_event.Notify();
  sched_event_.Notify();
  if (wake_region_) WakeDispatcher();
}

}  // namespace rdmq::rpc::internal
