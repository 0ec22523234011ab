// The leader's send path: credits, the combining window, gathering followers, room in the
// server's request ring, building the message in the staging mirror and posting its WRITEs.
#include <algorithm>
#include <string>
#include <thread>

#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

Outcome ClientImpl::Lead(Channel& ch, CombiningQueue::Node* me, Item& my_item, Clock::time_point deadline,
                         Presence& presence) {
  CombiningQueue::Node* batch[kMaxBatch];
  auto finish = [&](size_t n, uint32_t outcome) {
    if (me != nullptr) ch.tcq.Finish(batch, n, outcome);
  };
  auto reject_all = [&](uint32_t outcome) {
    size_t n = 1;
    if (me != nullptr)
      n = ch.tcq.Gather(
          me, kMaxBatch, [](CombiningQueue::Node*) { return true; }, batch);
    finish(n, outcome);
  };
  // 1. At least one credit, on an active channel.
  uint64_t avail = 0;
  for (int round = 0;; ++round) {
    if (broken_.load(std::memory_order_acquire)) {
      reject_all(CombiningQueue::kFailed);
      return Outcome::kFailed;
    }
    const uint32_t seen = ch.credit_event.Read();
    bool active;
    {
      SpinGuard g(ch.credit_mu);
      active = ch.credit.active();
      avail = ch.credit.available();
    }
    if (!active) {
      // Deactivated: everyone queued here goes elsewhere.
      reject_all(CombiningQueue::kRetry);
      return Outcome::kRetry;
    }
    if (avail > 0) break;
    if (round == 0) n_.credit_waits.fetch_add(1, std::memory_order_relaxed);
    // Out of credit with no renewal in flight (e.g. just reactivated): ask now.
    WorkRequest rwr;
    if (RenewalDue(ch, &rwr)) {
      Status st;
      {
        SpinGuard g(ch.post_mu);
        st = ch.sq->Post(std::span<WorkRequest>(&rwr, 1));
      }
      if (!st.ok()) {
        Break(st.WithContext("rpc: requesting credits on channel " + std::to_string(ch.index)));
        continue;
      }
      n_.renewals.fetch_add(1, std::memory_order_relaxed);
    }
    if (Clock::now() >= deadline) {
      // Give up our own call; the first follower leads on.
      batch[0] = me;
      finish(1, CombiningQueue::kWaiting);
      return Outcome::kTimedOut;
    }
    if (presence.in() && round < 2000) {
      TryPoll();  // the grant arrives in the response ring
      if (presence.pure()) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    } else {
      presence.Leave();
      ch.credit_event.Wait(seen, opts_.park_timeout);
      presence.Enter();
    }
  }
  // 1b. Combining window: callers that a completion just woke are runnable but, with fewer cores
  // than threads, have not had a core yet to queue their next request. Stepping aside for
  // them (a bounded number of yields) lets them queue behind us, so one message carries their
  // requests too, instead of each becoming a leader with a queue of one. (Yielding whenever
  // callers outnumber cores raised the coalescing degree to 4-12 but cost more in context
  // switches than it saved: measured, see docs/benchmarks.md.)
  if (me != nullptr && opts_.max_coalesce > 1 && opts_.combining_window.count() > 0 &&
      woken_.load(std::memory_order_acquire) > 0) {
    const auto window_end = Clock::now() + opts_.combining_window;
    for (int i = 0; i < 32 && woken_.load(std::memory_order_acquire) > 0 && Clock::now() < window_end; ++i) {
      std::this_thread::yield();
    }
    n_.windows.fetch_add(1, std::memory_order_relaxed);
  }
  // 2. Gather followers: bounded by max_coalesce, the credits left and the largest message.
  const uint64_t max_msg = ch.prod->max_message();
  uint64_t bytes = EntryBytes(my_item.data.size());
  const size_t max_n = static_cast<size_t>(std::min<uint64_t>({opts_.max_coalesce, avail, kMaxBatch}));
  size_t n = 1;
  if (me != nullptr) {
    n = ch.tcq.Gather(
        me, max_n,
        [&](CombiningQueue::Node* x) {
          const uint64_t b = EntryBytes(static_cast<Item*>(x->item)->data.size());
          if (MessageLength(bytes + b) > max_msg) return false;
          bytes += b;
          return true;
        },
        batch);
  }
  uint32_t taken;
  {
    SpinGuard g(ch.credit_mu);
    taken = ch.credit.Take(static_cast<uint32_t>(n));
  }
  if (taken != n) {
    // Deactivated between the check and the take (nothing was taken then).
    reject_all(CombiningQueue::kRetry);
    return Outcome::kRetry;
  }
  // 3. Room in the server's ring.
  const uint64_t len = MessageLength(bytes);
  auto pl = ReserveRing(ch, len, presence);
  if (!pl) {
    finish(n, CombiningQueue::kFailed);
    return Outcome::kFailed;
  }
  // 4. Build the message in the staging mirror, at the offset it will occupy remotely.
  std::byte* stage = ch.staging->data();
  MessageBuilder mb(stage + pl->offset, static_cast<uint32_t>(len));
  for (size_t i = 0; i < n; ++i) {
    const Item& it = me != nullptr ? *static_cast<Item*>(batch[i]->item) : my_item;
    mb.Add({static_cast<uint32_t>(it.data.size()), it.handler, 0, it.thread, it.seq}, it.data);
  }
  MessageHeader h;
  h.canary = NextCanary(&ch.canary_state);
  h.position = pl->position;
  h.peer_head = ch.resp_head.load(std::memory_order_acquire);
  mb.Finish(h);
  if (pl->pad_length > 0) {
    BuildPad(stage + pl->pad_position % ch.req_ring, pl->pad_length, pl->pad_position,
             NextCanary(&ch.canary_state), 0);
  }
  WorkRequest wrs[5];
  size_t nw = MessageWrites(*pl, ch.req_ring, mb.used(), static_cast<uint32_t>(len), *ch.staging,
                            *ch.req_remote, kControlPage, imm_mode_, wrs);
  // 5. Post (one doorbell), wake the server if it sleeps, ask for credits when due.
  const bool renewal = RenewalDue(ch, &wrs[nw]);
  if (renewal) ++nw;
  Status st;
  bool woke = false;
  {
    SpinGuard g(ch.post_mu);
    st = ch.sq->Post(std::span<WorkRequest>(wrs, nw));
    if (st.ok() && !imm_mode_) {
      st = RingDoorbellIfParked(*ch.sq, *ch.server_wake, *ch.staging, ch.scratch() + kScratchAtomic, &woke);
    }
  }
  if (!st.ok()) {
    Break(st.WithContext("rpc: sending on channel " + std::to_string(ch.index)));
    finish(n, CombiningQueue::kFailed);
    return Outcome::kFailed;
  }
  if (renewal) n_.renewals.fetch_add(1, std::memory_order_relaxed);
  n_.messages.fetch_add(1, std::memory_order_relaxed);
  n_.requests.fetch_add(n, std::memory_order_relaxed);
  finish(n, CombiningQueue::kServed);
  if (woke) std::this_thread::yield();  // let the server's dispatcher have this core if it landed here
  return Outcome::kServed;
}

std::optional<RingProducer::Placement> ClientImpl::ReserveRing(Channel& ch, uint64_t len,
                                                               Presence& presence) {
  for (int round = 0;; ++round) {
    if (broken_.load(std::memory_order_acquire)) return std::nullopt;
    if (!ch.prod->UpdateHead(ch.server_head.load(std::memory_order_acquire))) {
      Break(
          Status(RpcErrc::kCorruptMessage, "rpc: channel " + std::to_string(ch.index) +
                                               ": the server reported a request-ring head beyond our tail"));
      return std::nullopt;
    }
    if (auto pl = ch.prod->Reserve(len)) return pl;
    // The cached head says full: READ the server's head word (thesis 3.3.1).
    n_.head_reads.fetch_add(1, std::memory_order_relaxed);
    WorkRequest rd;
    rd.opcode = Opcode::kRead;
    rd.local = {ch.scratch() + kScratchHead, 8, ch.staging.get()};
    rd.remote = ch.req_remote.get();
    rd.remote_offset = kHeadOffset;
    Status st;
    {
      SpinGuard g(ch.post_mu);
      st = ch.sq->ReadSync(rd, Clock::now() + opts_.connect_timeout);
    }
    if (!st.ok()) {
      Break(st.WithContext("rpc: reading the request-ring head of channel " + std::to_string(ch.index)));
      return std::nullopt;
    }
    if (!ch.prod->UpdateHead(coding::LoadLE<uint64_t>(ch.scratch() + kScratchHead))) {
      Break(Status(RpcErrc::kCorruptMessage, "rpc: channel " + std::to_string(ch.index) +
                                                 ": the server's request-ring head is beyond our tail"));
      return std::nullopt;
    }
    if (auto pl = ch.prod->Reserve(len)) return pl;
    // Really full: the server has not caught up. Keep our own responses flowing meanwhile.
    HelpWhileWaiting(presence, round);
  }
}

}  // namespace rdmq::rpc::internal
