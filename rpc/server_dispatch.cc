// The server's dispatcher thread (receive path): polls every request ring, checks credits, runs
// kDispatcher handlers inline (kWorkerPool ones are queued), coalesces their responses, parks.
#include <string>
#include <thread>

#include "rdmq/common/log.h"
#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

void ServerImpl::RefreshSnapshot() {
  const uint64_t v = version_.load(std::memory_order_acquire);
  if (v == snap_version_) return;
  MutexLock g(reg_mu_);
  snap_.clear();
  for (const auto& [id, c] : conns_) {
    for (const auto& ch : c->channels) {
      if (ch) snap_.push_back(ch);
    }
  }
  snap_version_ = version_.load(std::memory_order_acquire);
}

bool ServerImpl::AnyReady() {
  for (const auto& ch : snap_) {
    if (ch->closed.load(std::memory_order_relaxed)) continue;
    if (ch->reader->HasWork()) return true;
  }
  return false;
}

void ServerImpl::DispatchLoop() {
  auto last_work = Clock::now();
  while (!stop_.load(std::memory_order_acquire)) {
    RefreshSnapshot();
    size_t work = 0;
    for (const auto& ch : snap_) {
      if (ch->closed.load(std::memory_order_acquire)) continue;
      work += ServeChannel(*ch, ch);
    }
    if (woke_client_) {
      woke_client_ = false;
      std::this_thread::yield();
    }
    if (work > 0) {
      last_work = Clock::now();
      continue;
    }
    // Spin, then spin with yields (a client thread sharing this core gets it at once), then park.
    const IdleStep step =
        NextIdleStep(Clock::now() - last_work, std::chrono::microseconds(5), opts_.spin_before_park);
    if (step == IdleStep::kSpin) {
      CpuRelax();
      continue;
    }
    if (step == IdleStep::kYield) {
      std::this_thread::yield();
      continue;
    }
    // Park (Dekker): publish "parked", fence, recheck every ring, sleep on the doorbell.
    const uint64_t d = Doorbell(*wake_region_);
    SetParked(*wake_region_, 1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!AnyReady() && version_.load() == snap_version_ && !stop_.load()) {
      n_.parks.fetch_add(1, std::memory_order_relaxed);
      // Long idle: sleep longer between safety-net checks (a doorbell wakes us anyway).
      const auto nap = Clock::now() - last_work > std::chrono::milliseconds(100) ? 10 * opts_.park_timeout
                                                                                 : opts_.park_timeout;
      (void)wake_region_->WaitWhileEqual(kDoorbellOffset, d, nap);
    }
    SetParked(*wake_region_, 0);
  }
}

size_t ServerImpl::ServeChannel(SChannel& ch, const std::shared_ptr<SChannel>& owner) {
  if (ch.has_backlog.load(std::memory_order_acquire)) {
    Status st;
    bool still;
    {
      SpinGuard g(ch.mu);
      st = FlushBacklog(ch);
      still = ch.has_backlog.load(std::memory_order_relaxed);
    }
    if (!st.ok()) {
      CloseConn(ch.client_id, "writing responses failed: " + st.ToString(), false);
      return 0;
    }
    if (still) return 0;  // back-pressure: no new requests until the client makes room
  }
  out_n_ = 0;
  size_t messages = 0;
  std::string error;
  bool protocol_error = false;
  for (int k = 0; k < 16; ++k) {
    const RingConsumer::Next pr = ch.reader->Poll();
    if (pr.state == RingConsumer::State::kEmpty || pr.state == RingConsumer::State::kWaiting) break;
    if (pr.state == RingConsumer::State::kStuck) {
      error =
          std::string(pr.probe == ProbeState::kBadHeader ? "bytes that are not a message header"
                                                         : "a message whose trailing canary never arrived") +
          " at request-ring position " + std::to_string(ch.reader->head()) + " for over " +
          std::to_string(opts_.incomplete_message_timeout.count()) + " ms";
      protocol_error = true;
      break;
    }
    auto v = ch.reader->Parse(pr.length);
    if (!v.ok()) {
      error = v.status().ToString();
      protocol_error = true;
      break;
    }
    const MessageHeader& h = v->header();
    bool credit_ok, head_ok;
    uint64_t limit;
    {
      SpinGuard g(ch.mu);
      credit_ok = ch.credit.OnRequests(h.count);
      limit = ch.credit.limit();
      head_ok = ch.prod->UpdateHead(h.peer_head);
    }
    if (!credit_ok) {
      error = Status(RpcErrc::kCreditViolation, std::to_string(h.count) + " requests at position " +
                                                    std::to_string(h.position) +
                                                    " exceed the granted limit " + std::to_string(limit))
                  .ToString();
      protocol_error = true;
      break;
    }
    if (!head_ok) {
      error = "the message at position " + std::to_string(h.position) + " reports response-ring head " +
              std::to_string(h.peer_head) + ", beyond what the server wrote";
      protocol_error = true;
      break;
    }
    auto cur = v->entries();
    for (Entry e; cur.Next(&e);) RunRequest(ch, owner, e);
    ch.reader->Release(pr.length);
    ++messages;
    n_.messages.fetch_add(1, std::memory_order_relaxed);
    n_.requests.fetch_add(h.count, std::memory_order_relaxed);
  }
  if (messages > 0) {
    const uint64_t head = ch.reader->head();
    StoreRelease64(ch.req_region->data() + kHeadOffset, head);
    ch.head_pub.store(head, std::memory_order_release);
  }
  if (out_n_ > 0) {
    Status st;
    {
      SpinGuard g(ch.mu);
      st = SendResponses(ch, out_.data(), out_n_);
    }
    out_n_ = 0;
    if (!st.ok() && error.empty()) error = "writing responses failed: " + st.ToString();
  }
  if (!error.empty())
    CloseConn(ch.client_id, "channel " + std::to_string(ch.index) + ": " + error, protocol_error);
  return messages;
}

void ServerImpl::MakeResponse(const EntryMeta& req, const Status& s, std::string* body, uint64_t max_entry,
                              OutResponse* out) {
  out->meta = EntryMeta{0, req.handler, 0, req.thread, req.seq};
  if (!s.ok()) {
    out->meta.status = WireErrc(s);
    out->data = s.ToString();
    if (out->data.size() > 4096) out->data.resize(4096);
  } else if (body->size() > max_entry) {
    RDMQ_LOG(kWarn, "rpc", "handler response too large for the client's response ring")
        .kv("handler", req.handler)
        .kv("bytes", body->size())
        .kv("max", max_entry);
    out->meta.status = static_cast<uint16_t>(WireStatus::kResponseTooLarge);
    out->data.clear();
  } else {
    out->data.swap(*body);  // the handler's buffer and the slot trade storage
  }
  out->meta.size = static_cast<uint32_t>(out->data.size());
}

void ServerImpl::RunRequest(SChannel& ch, const std::shared_ptr<SChannel>& owner, const Entry& e) {
  auto it = handlers_.find(e.meta.handler);
  if (out_n_ == out_.size()) out_.emplace_back();
  if (it == handlers_.end()) {
    n_.unknown_handler.fetch_add(1, std::memory_order_relaxed);
    RDMQ_LOG(kWarn, "rpc", "request for an unknown handler")
        .kv("client_id", ch.client_id)
        .kv("channel", ch.index)
        .kv("handler", e.meta.handler);
    OutResponse& o = out_[out_n_++];
    o.meta = EntryMeta{0, e.meta.handler, static_cast<uint16_t>(WireStatus::kUnknownHandler), e.meta.thread,
                       e.meta.seq};
    o.data.clear();
    return;
  }
  if (it->second.where == RunOn::kWorkerPool) {
    Task t{owner, e.meta, std::string(reinterpret_cast<const char*>(e.data.data()), e.data.size()),
           &it->second};
    {
      MutexLock g(wq_mu_);
      wq_.push_back(std::move(t));
    }
    wq_cv_.NotifyOne();
    return;
  }
  RequestContext ctx{ch.client_id,   ch.index, e.meta.thread,   e.meta.seq,
                     e.meta.handler, ch.peer,  ch.peer_identity};
  rb_.Clear();
  const Status s = it->second.fn(ctx, e.data, rb_);
  MakeResponse(e.meta, s, &rb_.str(), ch.max_response_entry, &out_[out_n_++]);
}

}  // namespace rdmq::rpc::internal
