#include "publisher.h"

#include <vector>

#include "rdmq/common/log.h"
#include "rdmq/protocol/data_plane.h"
#include "session.h"

namespace rdmq::broker::internal {

void Publisher::Publish(Partition& p) {
  if (p.slot_region() == nullptr) return;
  p.RaiseHighWatermark();  // a replicated partition's leader: what the replicas hold is readable
  if (wake_slot_) p.slot_region()->Wake(0);
  for (auto& w : p.TakeCommitWaiters()) w();
  std::vector<Watch>& watches = p.watches();
  if (watches.empty()) return;
  const uint64_t gen = p.SlotGeneration();
  std::vector<Watch> keep;
  for (auto& w : watches) {
    if (w.generation == gen) {
      keep.push_back(w);
      continue;
    }
    auto s = w.session.lock();
    if (!s) continue;
    const uint32_t slot = cursor_.fetch_add(1, std::memory_order_relaxed) % slots_;
    std::byte* buf = staging_->data() + offset_ + uint64_t{slot} * kNotificationBytes;
    protocol::EncodeNotification({p.topic_id(), p.index(), gen}, buf);
    fabric::WorkRequest wr;
    wr.opcode = fabric::Opcode::kSend;
    wr.signaled = false;
    wr.local = {buf, protocol::kNotificationSize, staging_};
    MutexLock slock(s->mu);
    if (!s->usable()) continue;
    if (Status st = s->ep->Post({&wr, 1}); !st.ok()) {
      RDMQ_LOG(kDebug, "broker", "notification not sent").kv("client", s->client_id).kv("error", st);
      continue;
    }
    Counters::Add(n_.notifications);
  }
  watches = std::move(keep);
}

}  // namespace rdmq::broker::internal
