// rpc::Client: the public entry points and a call's life (register, send, await, time out).
// The other concerns live in client_*.cc (client_impl.h lists them).
#include "rdmq/rpc/client.h"

#include <algorithm>
#include <future>
#include <memory>
#include <string>

#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

namespace {
std::atomic<uint64_t> g_client_serial{1};
}  // namespace

uint64_t ClientImpl::NextSerial() { return g_client_serial.fetch_add(1); }

ThreadState* ClientImpl::Self() {
  struct CacheEntry {
    uint64_t serial = 0;
    ThreadState* ts = nullptr;
  };
  thread_local CacheEntry cache[4];
  for (auto& e : cache) {
    if (e.serial == serial_) return e.ts;
  }
  MutexLock g(threads_mu_);
  ThreadState*& slot = by_os_thread_[std::this_thread::get_id()];
  if (slot == nullptr) {
    const uint32_t id = nthreads_.load(std::memory_order_relaxed);
    if (id >= opts_.max_threads) {
      by_os_thread_.erase(std::this_thread::get_id());
      return nullptr;
    }
    auto ts = std::make_unique<ThreadState>();
    ts->id = id;
    uint32_t c = id % channels();
    if (opts_.placement == ClientOptions::Placement::kScheduler) {
      // A new thread has no statistics yet: a random active channel (thesis 3.4.2).
      std::vector<uint32_t> act;
      for (const auto& chp : ch_) {
        if (chp->active.load()) act.push_back(chp->index);
      }
      if (!act.empty()) c = act[assign_rng_() % act.size()];
    }
    ts->assigned.store(c);
    ts->current.store(c);
    slot = ts.get();
    threads_[id].store(ts.get(), std::memory_order_release);
    thread_storage_.push_back(std::move(ts));
    nthreads_.store(id + 1, std::memory_order_release);
  }
  // Replace the oldest cache entry.
  for (int i = 3; i > 0; --i) cache[i] = cache[i - 1];
  cache[0] = {serial_, slot};
  return slot;
}

Result<std::string> ClientImpl::Call(uint16_t handler, std::span<const std::byte> request,
                                     std::chrono::nanoseconds timeout) {
  if (broken_.load(std::memory_order_acquire)) return broken_status();
  if (request.size() > max_request_bytes_) {
    return Status(RpcErrc::kMessageTooLarge,
                  "request of " + std::to_string(request.size()) + " bytes for handler " +
                      std::to_string(handler) + "; this connection takes at most " +
                      std::to_string(max_request_bytes_) + " (half the request ring, less headers)");
  }
  ThreadState* ts = Self();
  if (ts == nullptr) {
    return Status(RpcErrc::kTooManyThreads, "more than " + std::to_string(opts_.max_threads) + " threads");
  }
  n_.calls.fetch_add(1, std::memory_order_relaxed);
  CallerCount counted(&callers_);
  PendingCall call;
  call.seq = ts->next_seq++;
  call.handler = handler;
  call.deadline = Clock::now() + timeout;
  const SyncCallScope scope(this, ts, &call);  // destroyed before `call`: see PendingCall
  Presence presence(this);
  bool taken = false;
  Status st = Submit(*ts, call, request, presence, &taken);
  Result<std::string> r = st.ok() ? Await(*ts, call, presence) : Result<std::string>(st);
  // (taken: FailAll completed the call under the thread's lock; its status is `st` as well.)
  if (ts->woken.exchange(false, std::memory_order_acq_rel)) woken_.fetch_sub(1, std::memory_order_acq_rel);
  return r;
}

Status ClientImpl::CallAsync(uint16_t handler, std::span<const std::byte> request,
                             std::chrono::nanoseconds timeout, Callback done) {
  if (broken_.load(std::memory_order_acquire)) return broken_status();
  if (request.size() > max_request_bytes_) {
    return Status(RpcErrc::kMessageTooLarge, "request of " + std::to_string(request.size()) +
                                                 " bytes; this connection takes at most " +
                                                 std::to_string(max_request_bytes_));
  }
  ThreadState* ts = Self();
  if (ts == nullptr) {
    return Status(RpcErrc::kTooManyThreads, "more than " + std::to_string(opts_.max_threads) + " threads");
  }
  n_.calls.fetch_add(1, std::memory_order_relaxed);
  CallerCount counted(&callers_);
  auto* call = new PendingCall();
  call->async = true;
  call->seq = ts->next_seq++;
  call->handler = handler;
  call->deadline = Clock::now() + timeout;
  call->callback = std::move(done);
  Presence presence(this);
  bool taken = false;
  Status st = Submit(*ts, *call, request, presence, &taken);
  if (!st.ok() && !taken) {
    delete call;  // never sent and nobody else holds it: the caller gets the error, not `done`
    return st;
  }
  return Status();  // `done` runs exactly once (with the failure, if FailAll took the call)
}

bool ClientImpl::Unregister(ThreadState& ts, PendingCall& call) {
  MutexLock g(ts.mu);
  auto it = std::find(ts.pending.begin(), ts.pending.end(), &call);
  if (it == ts.pending.end()) return false;
  *it = ts.pending.back();
  ts.pending.pop_back();
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  return true;
}

SyncCallScope::~SyncCallScope() { c_->Retire(*ts_, *call_); }

void ClientImpl::Retire(ThreadState& ts, PendingCall& call) {
  // Every path out of Call has unregistered the call or seen a completer take it; what matters
  // is the lock: a completer writes the record (status, payload, done) only while holding it, so
  // once we hold it nobody else is inside the record, and it is not in `pending` for anyone to
  // find later. The removal is a safety net for a path that forgot to unregister.
  MutexLock g(ts.mu);
  auto it = std::find(ts.pending.begin(), ts.pending.end(), &call);
  if (it == ts.pending.end()) return;
  *it = ts.pending.back();
  ts.pending.pop_back();
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);
}

Status ClientImpl::Submit(ThreadState& ts, PendingCall& call, std::span<const std::byte> request,
                          Presence& presence, bool* taken) {
  // Once registered, an async call belongs to whichever thread completes it (a response, a
  // break, its deadline), which deletes it: what is needed of it is read now, and it is only
  // written again under the thread's lock while it is still pending.
  const uint16_t handler = call.handler;
  const auto seq = call.seq;
  const Clock::time_point deadline = call.deadline;
  const bool async = call.async;
  bool registered = false;
  *taken = false;
  for (int attempt = 0;; ++attempt) {
    if (broken_.load(std::memory_order_acquire)) {
      if (registered) *taken = !Unregister(ts, call);
      return broken_status();
    }
    const uint32_t c = PickChannel(ts, &call, presence);
    Channel& ch = *ch_[c];
    {
      MutexLock g(ts.mu);
      if (!registered) {
        call.channel = c;
        ts.pending.push_back(&call);
        outstanding_.fetch_add(1, std::memory_order_acq_rel);
        registered = true;
      } else if (std::find(ts.pending.begin(), ts.pending.end(), &call) != ts.pending.end()) {
        call.channel = c;
      } else {
        *taken = true;  // completed meanwhile (a break, or an async deadline): not ours to touch
        return broken_status();
      }
    }
    Item item{handler, ts.id, seq, request};
    const Outcome o = opts_.sharing == ClientOptions::Sharing::kSpinlock
                          ? SendLocked(ch, item, deadline, presence)
                          : SendCoalesced(ch, item, ts, !async, deadline, presence);
    switch (o) {
      case Outcome::kServed: {
        SpinGuard g(ts.stats_mu);
        ts.sizes.Add(static_cast<uint32_t>(request.size()));
        ++ts.requests;
        ts.bytes += request.size();
        return Status();
      }
      case Outcome::kRetry:
        if (attempt > 2) HelpWhileWaiting(presence, attempt);
        continue;
      case Outcome::kFailed:
        *taken = !Unregister(ts, call);
        return broken_status();
      case Outcome::kTimedOut:
        *taken = !Unregister(ts, call);
        if (*taken) return broken_status();
        n_.timeouts.fetch_add(1, std::memory_order_relaxed);
        return Status(RpcErrc::kTimedOut, "handler " + std::to_string(handler) + ": no credit on channel " +
                                              std::to_string(c) + " before the deadline");
    }
  }
}

Result<std::string> ClientImpl::Await(ThreadState& ts, PendingCall& call, Presence& presence) {
  auto take = [&]() -> Result<std::string> {
    if (call.status.ok()) return std::move(call.payload);
    return call.status;
  };
  if (WaitFor(
          ts, presence, [&] { return call.done.load(std::memory_order_acquire) != 0; }, call.deadline)) {
    return take();
  }
  {
    MutexLock g(ts.mu);
    auto it = std::find(ts.pending.begin(), ts.pending.end(), &call);
    if (it == ts.pending.end()) {
      // A completer took it first; it finished it under this lock, so it is final now.
      return take();
    }
    *it = ts.pending.back();
    ts.pending.pop_back();
  }
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  n_.timeouts.fetch_add(1, std::memory_order_relaxed);
  return Status(RpcErrc::kTimedOut, "handler " + std::to_string(call.handler) + " on channel " +
                                        std::to_string(call.channel) + ": no response before the deadline");
}

Client::Stats ClientImpl::stats() const {
  Stats s;
  s.calls = n_.calls.load();
  s.messages = n_.messages.load();
  s.requests = n_.requests.load();
  s.responses = n_.responses.load();
  s.response_messages = n_.response_messages.load();
  s.renewals = n_.renewals.load();
  s.refusals = n_.refusals.load();
  s.activations = n_.activations.load();
  s.head_reads = n_.head_reads.load();
  s.credit_waits = n_.credit_waits.load();
  s.migrations = n_.migrations.load();
  s.schedules = n_.schedules.load();
  s.timeouts = n_.timeouts.load();
  s.late_responses = n_.late_responses.load();
  return s;
}

}  // namespace rdmq::rpc::internal

namespace rdmq::rpc {

std::future<Result<std::string>> Client::CallAsync(uint16_t handler, std::span<const std::byte> request,
                                                   std::chrono::nanoseconds timeout) {
  auto promise = std::make_shared<std::promise<Result<std::string>>>();
  auto fut = promise->get_future();
  Status st = CallAsync(handler, request, timeout,
                        [promise](Result<std::string> r) { promise->set_value(std::move(r)); });
  if (!st.ok()) promise->set_value(st);
  return fut;
}

Result<std::unique_ptr<Client>> Client::Connect(fabric::Fabric& fabric, std::string_view address,
                                                ClientOptions options) {
  if (options.channels == 0 || options.channels > internal::kMaxChannelsPerClient) {
    return Status(Errc::kInvalidArgument, "rpc: channels must be 1.." +
                                              std::to_string(internal::kMaxChannelsPerClient) + ", not " +
                                              std::to_string(options.channels));
  }
  for (uint64_t* r : {&options.request_ring_bytes, &options.response_ring_bytes}) {
    if (*r < internal::kMinRingBytes) {
      return Status(Errc::kInvalidArgument, "rpc: rings must have at least " +
                                                std::to_string(internal::kMinRingBytes) + " bytes, not " +
                                                std::to_string(*r));
    }
    *r = AlignUp(*r, 4096);
  }
  if (options.max_coalesce == 0) options.max_coalesce = 1;
  if (options.max_threads == 0) options.max_threads = 1;
  auto impl = std::make_unique<internal::ClientImpl>(fabric, options);
  RDMQ_RETURN_IF_ERROR(impl->Open(address));
  return std::unique_ptr<Client>(std::move(impl));
}

}  // namespace rdmq::rpc
