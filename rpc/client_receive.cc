// The client's receive path: polling the response rings (one poller at a time) and routing each
// response to its caller by thread id and sequence id.
#include <algorithm>
#include <string>

#include "rdmq/common/log.h"
#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

size_t ClientImpl::TryPoll(size_t* woke) {
  if (poll_lock_.load(std::memory_order_relaxed) || poll_lock_.exchange(true, std::memory_order_acquire))
    return 0;
  std::vector<PendingCall*> async_done;
  std::vector<ThreadState*> to_wake;
  const size_t n = PollOnce(&async_done, &to_wake);
  poll_lock_.store(false, std::memory_order_release);
  for (ThreadState* ts : to_wake) WakeOwner(*ts);
  for (PendingCall* p : async_done) RunCallback(p);
  if (woke != nullptr) *woke = to_wake.size();
  return n;
}

void ClientImpl::RunCallback(PendingCall* p) {
  if (p->callback) {
    if (p->status.ok()) {
      p->callback(std::move(p->payload));
    } else {
      p->callback(p->status);
    }
  }
  delete p;
}

size_t ClientImpl::PollOnce(std::vector<PendingCall*>* async_done, std::vector<ThreadState*>* to_wake) {
  size_t messages = 0;
  for (auto& chp : ch_) {
    Channel& ch = *chp;
    for (int k = 0; k < 8; ++k) {
      const RingConsumer::Next pr = ch.reader->Poll();
      if (pr.state == RingConsumer::State::kEmpty || pr.state == RingConsumer::State::kWaiting) break;
      if (pr.state == RingConsumer::State::kStuck) {
        Break(Status(RpcErrc::kCorruptMessage,
                     "rpc: channel " + std::to_string(ch.index) + ": the response ring at position " +
                         std::to_string(ch.reader->head()) + " has held " +
                         (pr.probe == ProbeState::kBadHeader ? "bytes that are not a message header"
                                                             : "a message without its trailing canary") +
                         " for over " + std::to_string(opts_.incomplete_message_timeout.count()) + " ms"));
        return messages;
      }
      auto v = ch.reader->Parse(pr.length);
      if (!v.ok()) {
        Break(v.status().WithContext("rpc: channel " + std::to_string(ch.index) + " response ring"));
        return messages;
      }
      const MessageHeader& h = v->header();
      uint64_t sh = ch.server_head.load(std::memory_order_relaxed);
      while (h.peer_head > sh &&
             !ch.server_head.compare_exchange_weak(sh, h.peer_head, std::memory_order_acq_rel)) {
      }
      if ((h.flags & kFlagPad) == 0) OnServerState(ch, h);  // a pad carries no channel state
      auto cur = v->entries();
      for (Entry e; cur.Next(&e);) Complete(e, async_done, to_wake);
      ch.reader->Release(pr.length);
      const uint64_t head = ch.reader->head();
      StoreRelease64(ch.resp_region->data() + kHeadOffset, head);
      ch.resp_head.store(head, std::memory_order_release);
      n_.response_messages.fetch_add(1, std::memory_order_relaxed);
      ++messages;
    }
  }
  if (imm_mode_) {
    fabric::Completion cs[32];
    size_t got;
    while ((got = recv_cq_->Poll(cs)) > 0) {
      for (size_t i = 0; i < got; ++i) {
        for (auto& chp : ch_) {
          if (chp->ep_id == cs[i].endpoint_id) ++chp->recvs_consumed;
        }
        if (cs[i].status) {
          Break(Status(cs[i].status, "rpc: receive on a channel failed (server gone?)"));
          return messages;
        }
      }
      if (got < std::size(cs)) break;
    }
    for (auto& chp : ch_) {
      if (chp->recvs_consumed >= 16) {
        std::vector<fabric::RecvRequest> rr(chp->recvs_consumed);
        SpinGuard g(chp->post_mu);
        if (chp->ep->PostRecv(rr).ok()) chp->recvs_consumed = 0;
      }
    }
  }
  return messages;
}

void ClientImpl::Complete(const Entry& e, std::vector<PendingCall*>* async_done,
                          std::vector<ThreadState*>* to_wake) {
  n_.responses.fetch_add(1, std::memory_order_relaxed);
  if (e.meta.thread >= nthreads_.load(std::memory_order_acquire)) {
    n_.late_responses.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadState* ts = threads_[e.meta.thread].load(std::memory_order_acquire);
  if (ts == nullptr) return;
  UniqueLock g(ts->mu);
  auto it = std::find_if(ts->pending.begin(), ts->pending.end(),
                         [&](PendingCall* p) { return p->seq == e.meta.seq; });
  if (it == ts->pending.end()) {
    g.Unlock();
    n_.late_responses.fetch_add(1, std::memory_order_relaxed);
    RDMQ_LOG(kDebug, "rpc", "response for a call that is no longer waiting (timed out)")
        .kv("client_id", client_id_)
        .kv("thread", e.meta.thread)
        .kv("seq", e.meta.seq);
    return;
  }
  PendingCall* p = *it;
  *it = ts->pending.back();
  ts->pending.pop_back();
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  switch (e.meta.status) {
    case static_cast<uint16_t>(WireStatus::kOk):
      p->status = Status();
      p->payload.assign(reinterpret_cast<const char*>(e.data.data()), e.data.size());
      break;
    case static_cast<uint16_t>(WireStatus::kUnknownHandler):
      p->status =
          Status(RpcErrc::kUnknownHandler, "the server has no handler " + std::to_string(e.meta.handler));
      break;
    case static_cast<uint16_t>(WireStatus::kResponseTooLarge):
      p->status =
          Status(RpcErrc::kMessageTooLarge, "the response of handler " + std::to_string(e.meta.handler) +
                                                " did not fit the response ring");
      break;
    default:
      if (e.meta.status >= static_cast<uint16_t>(Errc::kInvalidArgument) &&
          e.meta.status <= static_cast<uint16_t>(Errc::kInternal)) {
        p->status =
            Status(static_cast<Errc>(e.meta.status),
                   "server: " + std::string(reinterpret_cast<const char*>(e.data.data()), e.data.size()));
      } else {
        p->status =
            Status(RpcErrc::kCorruptMessage, "unknown response status " + std::to_string(e.meta.status));
      }
  }
  if (p->async) {
    g.Unlock();
    async_done->push_back(p);
  } else {
    p->done.store(1, std::memory_order_release);  // under the lock: see Await's timeout path
    g.Unlock();
    if (std::find(to_wake->begin(), to_wake->end(), ts) == to_wake->end()) to_wake->push_back(ts);
  }
}

}  // namespace rdmq::rpc::internal
