// rpc::Client: connection handle, FLOCK synchronisation, response routing, credits, and the
// thread scheduler. See client.h for the model and docs/rpc.md for the protocol.
#include "rdmq/rpc/client.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "rdmq/common/log.h"
#include "rpc/combining_queue.h"
#include "rpc/credit.h"
#include "rpc/handshake.h"
#include "rpc/ring.h"
#include "rpc/ring_consumer.h"
#include "rpc/scheduling.h"
#include "rpc/transport.h"
#include "rpc/wait.h"
#include "rpc/wire.h"

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

namespace {

using namespace internal;  // NOLINT(google-build-using-namespace)
using fabric::Opcode;
using fabric::WorkRequest;

constexpr size_t kMaxBatch = 64;
// How long a waiter spins with pause instructions before it spins with sched_yield.
constexpr auto kPureSpin = std::chrono::microseconds(3);
// A thread that waits for ring room, a channel or its old channel's responses helps poll, then
// backs off; one that spins for a channel's send lock (Sharing::kSpinlock) spins, then yields.
constexpr Backoff kHelpBackoff{50, 200, std::chrono::microseconds(50)};
constexpr Backoff kLockBackoff{256, 0, std::chrono::microseconds(0)};
std::atomic<uint64_t> g_client_serial{1};

struct ThreadState;

struct PendingCall {
  uint32_t seq = 0;
  uint32_t channel = 0;
  uint16_t handler = 0;
  bool async = false;
  Clock::time_point deadline;
  std::atomic<uint32_t> done{0};  // 1 once status/payload are final (set under the owner's mu)
  Status status;
  std::string payload;
  Client::Callback callback;
};

// One calling thread's state within one client.
struct ThreadState {
  uint32_t id = 0;
  std::atomic<uint32_t> assigned{0};  // written by the thread scheduler
  std::atomic<uint32_t> current{0};   // written by the owner thread only
  uint32_t next_seq = 1;              // owner only
  EventCount park;                    // every wake-up meant for this thread goes through it
  std::atomic<bool> woken{false};     // woken by a completion, not yet back in Call
  std::mutex mu;                      // guards pending
  std::vector<PendingCall*> pending;
  SpinLock stats_mu;  // guards the load statistics below
  SampleWindow sizes;
  uint64_t requests = 0;
  uint64_t bytes = 0;
};

// A request a leader combines into a message.
struct Item {
  uint16_t handler = 0;
  uint32_t thread = 0;
  uint32_t seq = 0;
  std::span<const std::byte> data;
};

struct Channel {
  uint32_t index = 0;
  // Declaration order = reverse destruction order: the CQ and regions outlive the endpoint,
  // and remote regions die before it.
  std::unique_ptr<fabric::CompletionQueue> send_cq;
  std::unique_ptr<fabric::Region> resp_region;  // control page + response ring
  std::unique_ptr<fabric::Region> staging;      // request ring mirror + scratch page
  std::unique_ptr<fabric::Endpoint> ep;
  std::unique_ptr<fabric::RemoteRegion> req_remote;
  std::unique_ptr<fabric::RemoteRegion> server_wake;
  uint64_t req_ring = 0;
  uint64_t resp_ring = 0;
  uint64_t ep_id = 0;

  // Sending: owned by the leader (or the spinlock holder).
  SpinLock post_mu;  // Post (leader) vs PostRecv (poller) on the endpoint
  std::unique_ptr<SendQueue> sq;
  CombiningQueue tcq;
  SpinLock send_lock;  // Sharing::kSpinlock
  std::unique_ptr<RingProducer> prod;
  uint64_t canary_state = 0;
  std::atomic<uint64_t> server_head{0};  // newest request-ring head piggybacked on a response

  // Credits: the leader takes, the poller updates.
  SpinLock credit_mu;
  CreditSender credit;
  EventCount credit_event;
  std::atomic<bool> active{true};

  // Receiving: owned by the poll-lock holder.
  std::optional<RingConsumer> reader;
  std::atomic<uint64_t> resp_head{0};  // consumed head, piggybacked on requests
  uint32_t recvs_consumed = 0;

  std::byte* scratch() const { return staging->data() + req_ring; }
};

enum class Outcome { kServed, kRetry, kFailed, kTimedOut };

class ClientImpl;

// A thread's presence among the response pollers. While any thread is present, the client's
// wake word says "not parked", so the server does not pay for futex wake-ups; the last one to
// leave says "parked" again and rechecks the rings (the Dekker protocol of docs/rpc.md).
// At most one present thread per spare core spins with pause instructions ("pure"); the others
// spin with sched_yield, which gives way to any runnable thread, before they sleep.
// Counts the threads inside Call/CallAsync.
class CallerCount {
 public:
  explicit CallerCount(std::atomic<uint32_t>* n) : n_(n) { n_->fetch_add(1, std::memory_order_acq_rel); }
  ~CallerCount() { n_->fetch_sub(1, std::memory_order_acq_rel); }
  CallerCount(const CallerCount&) = delete;
  CallerCount& operator=(const CallerCount&) = delete;

 private:
  std::atomic<uint32_t>* n_;
};

class Presence {
 public:
  explicit Presence(ClientImpl* c) : c_(c) { Enter(); }
  ~Presence() { Leave(); }
  Presence(const Presence&) = delete;
  Presence& operator=(const Presence&) = delete;
  bool in() const { return in_; }
  bool pure() const { return pure_; }
  void Enter();
  void Leave();

 private:
  ClientImpl* c_;
  bool in_ = false;
  bool pure_ = false;
};

class ClientImpl final : public Client {
 public:
  ClientImpl(fabric::Fabric& fabric, const ClientOptions& o) : fabric_(fabric), opts_(o) {
    max_spinners_ =
        std::max(1u, std::thread::hardware_concurrency() > 1 ? std::thread::hardware_concurrency() - 1 : 1u);
    threads_ = std::make_unique<std::atomic<ThreadState*>[]>(o.max_threads);
    for (uint32_t i = 0; i < o.max_threads; ++i) threads_[i].store(nullptr, std::memory_order_relaxed);
  }
  ~ClientImpl() override { Shutdown(); }

  Status Open(std::string_view address);

  Result<std::string> Call(uint16_t handler, std::span<const std::byte> request,
                           std::chrono::nanoseconds timeout) override;
  Status CallAsync(uint16_t handler, std::span<const std::byte> request, std::chrono::nanoseconds timeout,
                   Callback done) override;
  uint64_t client_id() const override { return client_id_; }
  uint32_t channels() const override { return static_cast<uint32_t>(ch_.size()); }
  uint64_t max_request_bytes() const override { return max_request_bytes_; }
  bool connected() const override { return !broken_.load(std::memory_order_acquire); }
  Status broken_status() const override {
    std::lock_guard<std::mutex> g(broken_mu_);
    return broken_status_;
  }
  std::vector<bool> active_channels() const override {
    std::vector<bool> v;
    for (const auto& c : ch_) v.push_back(c->active.load(std::memory_order_acquire));
    return v;
  }
  Stats stats() const override;

  // Used by Presence.
  std::atomic<uint32_t> poll_spinners_{0};
  std::atomic<uint32_t> spinners_{0};
  std::atomic<uint32_t> callers_{0};  // threads inside Call/CallAsync
  uint32_t max_spinners_ = 1;
  bool imm_mode_ = false;
  void PublishParked(uint64_t v) {
    if (!imm_mode_) SetParked(*wake_region_, v);
  }
  // Polls the response rings if nobody else is; returns messages consumed, and through `woke`
  // how many sleeping callers were woken.
  size_t TryPoll(size_t* woke = nullptr);
  void WakeDispatcher() { WakeLocal(*wake_region_); }

 private:
  ThreadState* Self();
  // Registers and sends the call. On error the call is no longer pending; *taken says whether a
  // completer (FailAll) took it meanwhile and will complete it (async: run its callback).
  Status Submit(ThreadState& ts, PendingCall& call, std::span<const std::byte> request, Presence& presence,
                bool* taken);
  Result<std::string> Await(ThreadState& ts, PendingCall& call, Presence& presence);
  // Spins while present (polling responses), then sleeps on the thread's park word, until
  // `ready()` or `deadline`. Returns whether ready.
  template <class Ready>
  bool WaitFor(ThreadState& ts, Presence& presence, Ready ready, Clock::time_point deadline);
  // A completion is about to wake `ts` (notify after the call is final).
  void WakeOwner(ThreadState& ts);
  // The channel for the thread's next request (`call`, which is not waited for when draining).
  uint32_t PickChannel(ThreadState& ts, const PendingCall* call, Presence& presence);
  Outcome SendCoalesced(Channel& ch, Item& item, ThreadState& ts, bool quiet, Clock::time_point deadline,
                        Presence& presence);
  Outcome SendLocked(Channel& ch, Item& item, Clock::time_point deadline, Presence& presence);
  // The leader's turn: `me` is its queue node (nullptr under Sharing::kSpinlock).
  Outcome Lead(Channel& ch, CombiningQueue::Node* me, Item& my_item, Clock::time_point deadline,
               Presence& presence);
  std::optional<RingProducer::Placement> ReserveRing(Channel& ch, uint64_t len, Presence& presence);
  // Leader only: fills `wr` with a credit-renewal WRITE_WITH_IMM when one is due.
  bool RenewalDue(Channel& ch, WorkRequest* wr);
  bool Unregister(ThreadState& ts, PendingCall& call);
  void HelpWhileWaiting(Presence& presence, int round);

  size_t PollOnce(std::vector<PendingCall*>* async_done, std::vector<ThreadState*>* to_wake);
  void Complete(const Entry& e, std::vector<PendingCall*>* async_done, std::vector<ThreadState*>* to_wake);
  static void RunCallback(PendingCall* p);
  void Break(Status why);
  void FailAll(const Status& why);

  void DispatcherLoop();
  void SchedulerLoop();
  bool RunSchedule();  // false when no thread sent anything since the previous run
  void Housekeeping();
  bool AnyReady();
  void Shutdown();

  fabric::Fabric& fabric_;
  ClientOptions opts_;
  uint64_t serial_ = g_client_serial.fetch_add(1);
  std::unique_ptr<fabric::Region> wake_region_;
  std::unique_ptr<fabric::CompletionQueue> recv_cq_;
  std::vector<std::unique_ptr<Channel>> ch_;
  uint64_t client_id_ = 0;
  uint64_t max_request_bytes_ = 0;
  uint64_t max_response_bytes_ = 0;
  uint32_t credits_ = kDefaultCredits;

  std::mutex threads_mu_;
  std::unordered_map<std::thread::id, ThreadState*> by_os_thread_;
  std::vector<std::unique_ptr<ThreadState>> thread_storage_;
  std::unique_ptr<std::atomic<ThreadState*>[]> threads_;
  std::atomic<uint32_t> nthreads_{0};
  std::mt19937_64 assign_rng_{RandomSeed()};

  std::atomic<bool> poll_lock_{false};
  std::atomic<int64_t> outstanding_{0};
  std::atomic<int32_t> woken_{0};  // callers woken by completions and not yet back (combining window)

  mutable std::mutex broken_mu_;
  Status broken_status_;
  std::atomic<bool> broken_{false};
  std::atomic<bool> stop_{false};
  std::thread dispatcher_;
  std::thread scheduler_;
  EventCount sched_event_;
  std::vector<uint32_t> last_active_;  // scheduler thread only

  struct Counters {
    std::atomic<uint64_t> calls{0}, messages{0}, requests{0}, responses{0}, response_messages{0}, renewals{0},
        refusals{0}, activations{0}, head_reads{0}, credit_waits{0}, migrations{0}, schedules{0}, timeouts{0},
        late_responses{0}, windows{0};
  };
  mutable Counters n_;
};

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

Status ClientImpl::Open(std::string_view address) {
  const uint32_t access_ring = fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteWrite;
  RDMQ_ASSIGN_OR_RETURN(
      wake_region_,
      fabric_.Allocate(kWakeRegionBytes, fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteAtomic));
  RDMQ_ASSIGN_OR_RETURN(
      recv_cq_, fabric_.CreateCompletionQueue(static_cast<size_t>(opts_.channels) * opts_.max_recv_wr));
  RDMQ_ASSIGN_OR_RETURN(auto wake_desc,
                        wake_region_->Descriptor(fabric::kRemoteRead | fabric::kRemoteAtomic));
  uint64_t token = 0;
  for (uint32_t i = 0; i < opts_.channels; ++i) {
    auto ch = std::make_unique<Channel>();
    ch->index = i;
    ch->resp_ring = opts_.response_ring_bytes;
    RDMQ_ASSIGN_OR_RETURN(ch->send_cq, fabric_.CreateCompletionQueue(opts_.max_send_wr * 2));
    RDMQ_ASSIGN_OR_RETURN(ch->resp_region, fabric_.Allocate(kControlPage + ch->resp_ring, access_ring));
    fabric::EndpointOptions eo;
    eo.send_cq = ch->send_cq.get();
    eo.recv_cq = recv_cq_.get();
    eo.max_send_wr = opts_.max_send_wr;
    eo.max_recv_wr = opts_.max_recv_wr;
    eo.connect_timeout = opts_.connect_timeout;
    auto ep = fabric_.Connect(address, eo);
    if (!ep.ok())
      return ep.status().WithContext("rpc: connecting channel " + std::to_string(i) + " to " +
                                     std::string(address));
    ch->ep = std::move(ep).value();
    ch->ep_id = ch->ep->id();
    Hello hello;
    hello.kind = i == 0 ? HelloKind::kNew : HelloKind::kJoin;
    hello.channel = static_cast<uint16_t>(i);
    hello.channels = opts_.channels;
    hello.client_id = client_id_;
    hello.token = token;
    hello.request_ring = opts_.request_ring_bytes;
    hello.response_ring = ch->resp_ring;
    RDMQ_ASSIGN_OR_RETURN(hello.response_region,
                          ch->resp_region->Descriptor(fabric::kRemoteRead | fabric::kRemoteWrite));
    hello.wake_region = wake_desc;
    RDMQ_RETURN_IF_ERROR(ch->ep->SendControl(coding::AsBytes(EncodeHello(hello))));
    auto reply = ch->ep->RecvControl(opts_.connect_timeout);
    if (!reply.ok())
      return reply.status().WithContext("rpc: waiting for the server's welcome on channel " +
                                        std::to_string(i));
    RDMQ_ASSIGN_OR_RETURN(Welcome w, DecodeWelcome(*reply));
    if (w.error != 0) {
      return Status(static_cast<Errc>(w.error),
                    "rpc: the server refused channel " + std::to_string(i) + ": " + w.message);
    }
    if (i == 0) {
      client_id_ = w.client_id;
      token = w.token;
      credits_ = w.credits;
    } else if (w.client_id != client_id_) {
      return Status(RpcErrc::kHandshake, "rpc: channel " + std::to_string(i) + " joined client " +
                                             std::to_string(w.client_id) + ", not " +
                                             std::to_string(client_id_));
    }
    if (w.request_ring < kMinRingBytes || w.request_ring % kMessageAlign != 0 ||
        w.request_region.length < kControlPage + w.request_ring) {
      return Status(RpcErrc::kHandshake, "rpc: the server's request ring of " +
                                             std::to_string(w.request_ring) + " bytes in a region of " +
                                             std::to_string(w.request_region.length) + " bytes is unusable");
    }
    ch->req_ring = w.request_ring;
    RDMQ_ASSIGN_OR_RETURN(ch->staging, fabric_.Allocate(ch->req_ring + kControlPage, fabric::kLocalWrite));
    RDMQ_ASSIGN_OR_RETURN(ch->req_remote, ch->ep->Attach(w.request_region));
    RDMQ_ASSIGN_OR_RETURN(ch->server_wake, ch->ep->Attach(w.wake_region));
    ch->sq = std::make_unique<SendQueue>(ch->ep.get(), ch->send_cq.get(), opts_.max_send_wr);
    ch->prod = std::make_unique<RingProducer>(ch->req_ring);
    ch->reader.emplace(ch->resp_region->data() + kControlPage, ch->resp_ring, true,
                       opts_.incomplete_message_timeout);
    ch->canary_state = RandomSeed() ^ (static_cast<uint64_t>(i) << 48);
    ch->credit = CreditSender(w.credits);
    ch->credit.OnServerState(w.credit_limit, w.active, false, 0);
    ch->active.store(w.active);
    // Receives for the server's WRITE_WITH_IMM doorbells (tcp/verbs).
    std::vector<fabric::RecvRequest> rr(opts_.max_recv_wr / 2);
    RDMQ_RETURN_IF_ERROR(ch->ep->PostRecv(rr));
    ch_.push_back(std::move(ch));
  }
  imm_mode_ = ch_[0]->server_wake->mapped() == nullptr;
  max_request_bytes_ = MaxEntryData(ch_[0]->prod->max_message());
  max_response_bytes_ = MaxEntryData(ch_[0]->reader->max_message());
  for (const auto& c : ch_) {
    max_request_bytes_ = std::min(max_request_bytes_, MaxEntryData(c->prod->max_message()));
    max_response_bytes_ = std::min(max_response_bytes_, MaxEntryData(c->reader->max_message()));
  }
  dispatcher_ = std::thread([this] { DispatcherLoop(); });
  if (opts_.placement == ClientOptions::Placement::kScheduler)
    scheduler_ = std::thread([this] { SchedulerLoop(); });
  RDMQ_LOG(kDebug, "rpc", "client connected")
      .kv("client_id", client_id_)
      .kv("channels", opts_.channels)
      .kv("server", address)
      .kv("wake", imm_mode_ ? "write_with_imm" : "futex");
  return Status();
}

ThreadState* ClientImpl::Self() {
  struct CacheEntry {
    uint64_t serial = 0;
    ThreadState* ts = nullptr;
  };
  thread_local CacheEntry cache[4];
  for (auto& e : cache) {
    if (e.serial == serial_) return e.ts;
  }
  std::lock_guard<std::mutex> g(threads_mu_);
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
  std::lock_guard<std::mutex> g(ts.mu);
  auto it = std::find(ts.pending.begin(), ts.pending.end(), &call);
  if (it == ts.pending.end()) return false;
  *it = ts.pending.back();
  ts.pending.pop_back();
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  return true;
}

Status ClientImpl::Submit(ThreadState& ts, PendingCall& call, std::span<const std::byte> request,
                          Presence& presence, bool* taken) {
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
      std::lock_guard<std::mutex> g(ts.mu);
      call.channel = c;
      if (!registered) {
        ts.pending.push_back(&call);
        outstanding_.fetch_add(1, std::memory_order_acq_rel);
        registered = true;
      }
    }
    Item item{call.handler, ts.id, call.seq, request};
    const Outcome o = opts_.sharing == ClientOptions::Sharing::kSpinlock
                          ? SendLocked(ch, item, call.deadline, presence)
                          : SendCoalesced(ch, item, ts, !call.async, call.deadline, presence);
    switch (o) {
      case Outcome::kServed: {
        std::lock_guard<SpinLock> g(ts.stats_mu);
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
        return Status(RpcErrc::kTimedOut, "handler " + std::to_string(call.handler) +
                                              ": no credit on channel " + std::to_string(c) +
                                              " before the deadline");
    }
  }
}

void ClientImpl::HelpWhileWaiting(Presence& presence, int round) {
  if (presence.in()) TryPoll();
  kHelpBackoff.Pause(static_cast<uint32_t>(round));
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
      std::lock_guard<std::mutex> g(ts.mu);
      for (const PendingCall* p : ts.pending) busy |= p != call && p->channel == cur;
    }
    if (!busy || broken_.load(std::memory_order_acquire)) break;
    HelpWhileWaiting(presence, round);
  }
  ts.current.store(want, std::memory_order_relaxed);
  n_.migrations.fetch_add(1, std::memory_order_relaxed);
  return want;
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

template <class Ready>
bool ClientImpl::WaitFor(ThreadState& ts, Presence& presence, Ready ready, Clock::time_point deadline) {
  if (presence.in()) {
    // Spin briefly, then spin with yields: if the peer we wait for shares our core (the machine
    // is busy), a pure spin would hold the core until the scheduler's next tick.
    const auto start = Clock::now();
    const auto until = std::min(deadline, start + opts_.spin);
    const auto pure_until = presence.pure() ? start + kPureSpin : start;
    bool yielding = !presence.pure();
    for (uint32_t i = 0;; ++i) {
      if (ready()) return true;
      if ((i & 7) == 7) {
        TryPoll();  // a present thread must poll, or responses would wait for nobody
        const auto now = Clock::now();
        if (now >= until) break;
        yielding = now >= pure_until;
      }
      if (yielding) {
        std::this_thread::yield();
      } else {
        CpuRelax();
      }
    }
  }
  presence.Leave();
  for (;;) {
    const uint32_t seen = ts.park.Read();
    if (ready()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto slice =
        deadline - now < opts_.park_timeout ? deadline - now : Clock::duration(opts_.park_timeout);
    ts.park.Wait(seen, std::chrono::duration_cast<std::chrono::nanoseconds>(slice));
  }
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
  std::lock_guard<SpinLock> g(ch.send_lock, std::adopt_lock);
  return Lead(ch, nullptr, item, deadline, presence);
}

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
      std::lock_guard<SpinLock> g(ch.credit_mu);
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
        std::lock_guard<SpinLock> g(ch.post_mu);
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
    std::lock_guard<SpinLock> g(ch.credit_mu);
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
    std::lock_guard<SpinLock> g(ch.post_mu);
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

bool ClientImpl::RenewalDue(Channel& ch, WorkRequest* wr) {
  std::optional<Renewal> renewal;
  uint64_t sent = 0;
  {
    std::lock_guard<SpinLock> g(ch.credit_mu);
    renewal = ch.credit.MaybeRenew();
    sent = ch.credit.sent();
  }
  if (!renewal) return false;
  coding::StoreLE<uint64_t>(ch.scratch() + kScratchRenewal, sent);
  *wr = WorkRequest{};
  wr->opcode = Opcode::kWriteImm;
  wr->tag = kTagOther;
  wr->signaled = false;
  wr->local = {ch.scratch() + kScratchRenewal, 8, ch.staging.get()};
  wr->remote = ch.req_remote.get();
  wr->remote_offset = kRenewalOffset;
  wr->imm = EncodeImm({ImmKind::kCreditRenewal, renewal->seq, renewal->degree_x16});
  return true;
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
      std::lock_guard<SpinLock> g(ch.post_mu);
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
    std::lock_guard<std::mutex> g(ts.mu);
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
      bool was_active = true, now_active = true;
      uint64_t before = 0, after = 0;
      if ((h.flags & kFlagPad) == 0) {  // a pad carries no channel state
        std::lock_guard<SpinLock> g(ch.credit_mu);
        was_active = ch.credit.active();
        before = ch.credit.limit();
        ch.credit.OnServerState(h.credit_limit, (h.flags & kFlagActive) != 0, (h.flags & kFlagCredit) != 0,
                                h.credit_seq);
        now_active = ch.credit.active();
        after = ch.credit.limit();
      }
      if (was_active != now_active || after != before) {
        ch.active.store(now_active, std::memory_order_release);
        ch.credit_event.Notify();
        if (was_active != now_active) {
          if (now_active) {
            n_.activations.fetch_add(1, std::memory_order_relaxed);
          } else {
            n_.refusals.fetch_add(1, std::memory_order_relaxed);
          }
          sched_event_.Notify();
        }
      }
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
        std::lock_guard<SpinLock> g(chp->post_mu);
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
  std::unique_lock<std::mutex> g(ts->mu);
  auto it = std::find_if(ts->pending.begin(), ts->pending.end(),
                         [&](PendingCall* p) { return p->seq == e.meta.seq; });
  if (it == ts->pending.end()) {
    g.unlock();
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
    g.unlock();
    async_done->push_back(p);
  } else {
    p->done.store(1, std::memory_order_release);  // under the lock: see Await's timeout path
    g.unlock();
    if (std::find(to_wake->begin(), to_wake->end(), ts) == to_wake->end()) to_wake->push_back(ts);
  }
}

void ClientImpl::Break(Status why) {
  {
    std::lock_guard<std::mutex> g(broken_mu_);
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
    std::vector<PendingCall*> taken;
    {
      std::lock_guard<std::mutex> g(ts->mu);
      taken.swap(ts->pending);
      outstanding_.fetch_sub(static_cast<int64_t>(taken.size()), std::memory_order_acq_rel);
      for (PendingCall* p : taken) {
        p->status = why;
        if (!p->async) p->done.store(1, std::memory_order_release);
      }
    }
    ts->park.Notify();
    for (PendingCall* p : taken) {
      if (p->async) RunCallback(p);
    }
  }
  for (auto& c : ch_) c->credit_event.Notify();
  sched_event_.Notify();
  if (wake_region_) WakeDispatcher();
}

bool ClientImpl::AnyReady() {
  for (auto& c : ch_) {
    if (c->reader->HasWork()) return true;
  }
  return false;
}

void ClientImpl::Housekeeping() {
  if (!broken_.load(std::memory_order_acquire)) {
    for (auto& c : ch_) {
      if (!c->ep->connected()) {
        Break(Status(fabric::FabricErrc::kPeerGone, "rpc: channel " + std::to_string(c->index) + " to " +
                                                        c->ep->peer() + ": the server went away"));
        break;
      }
    }
  }
  // Deadlines of async calls (sync callers watch their own).
  const auto now = Clock::now();
  const uint32_t n = nthreads_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadState* ts = threads_[i].load(std::memory_order_acquire);
    if (ts == nullptr) continue;
    std::vector<PendingCall*> expired;
    {
      std::lock_guard<std::mutex> g(ts->mu);
      for (size_t k = 0; k < ts->pending.size();) {
        PendingCall* p = ts->pending[k];
        if (p->async && p->deadline <= now) {
          expired.push_back(p);
          ts->pending[k] = ts->pending.back();
          ts->pending.pop_back();
        } else {
          ++k;
        }
      }
    }
    for (PendingCall* p : expired) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      n_.timeouts.fetch_add(1, std::memory_order_relaxed);
      p->status = Status(RpcErrc::kTimedOut,
                         "handler " + std::to_string(p->handler) + ": no response before the deadline");
      RunCallback(p);
    }
  }
}

void ClientImpl::DispatcherLoop() {
  auto last_work = Clock::now();
  auto next_housekeeping = last_work;
  while (!stop_.load(std::memory_order_acquire)) {
    auto now = Clock::now();
    if (now >= next_housekeeping) {
      Housekeeping();
      next_housekeeping = now + std::chrono::milliseconds(1);
    }
    if (broken_.load(std::memory_order_acquire) || poll_spinners_.load(std::memory_order_acquire) > 0) {
      // Nothing to do, or callers poll for themselves: stay out of their way.
      (void)wake_region_->WaitWhileEqual(kDoorbellOffset, Doorbell(*wake_region_), opts_.park_timeout);
      continue;
    }
    size_t woke = 0;
    if (TryPoll(&woke) > 0) {
      last_work = Clock::now();
      // Callers we just woke need a core more than we need to spin.
      if (woke > 0) std::this_thread::yield();
      continue;
    }
    if (outstanding_.load(std::memory_order_acquire) > 0 && now - last_work < opts_.dispatcher_spin) {
      CpuRelax();
      continue;
    }
    if (imm_mode_) {
      // The server sends every response message with WRITE_WITH_IMM: sleep on the receive CQ.
      if (!poll_lock_.exchange(true, std::memory_order_acquire)) {
        (void)recv_cq_->Wait(opts_.park_timeout);
        poll_lock_.store(false, std::memory_order_release);
      }
      continue;
    }
    // Park (Dekker): publish "parked", fence, recheck, sleep on the doorbell. With no call
    // outstanding there are no deadlines to watch: sleep longer between safety-net checks.
    const uint64_t d = Doorbell(*wake_region_);
    SetParked(*wake_region_, 1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (poll_spinners_.load(std::memory_order_seq_cst) == 0 && !AnyReady()) {
      const auto nap =
          outstanding_.load(std::memory_order_acquire) > 0 ? opts_.park_timeout : 10 * opts_.park_timeout;
      (void)wake_region_->WaitWhileEqual(kDoorbellOffset, d, nap);
    }
    if (poll_spinners_.load(std::memory_order_acquire) == 0) SetParked(*wake_region_, 0);
    last_work = Clock::now();
  }
}

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
    std::lock_guard<SpinLock> g(ts->stats_mu);
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

void ClientImpl::Shutdown() {
  if (stop_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> g(broken_mu_);
    if (!broken_.load()) {
      broken_status_ =
          Status(RpcErrc::kShutdown, "rpc client " + std::to_string(client_id_) + " is shutting down");
      broken_.store(true, std::memory_order_release);
    }
  }
  if (wake_region_) {
    FailAll(Status(RpcErrc::kShutdown, "rpc client is shutting down"));
    WakeDispatcher();
  }
  sched_event_.Notify();
  if (dispatcher_.joinable()) dispatcher_.join();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& c : ch_) {
    if (c->ep) c->ep->Close();
  }
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

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(fabric::Fabric& fabric, std::string_view address,
                                                ClientOptions options) {
  if (options.channels == 0 || options.channels > kMaxChannelsPerClient) {
    return Status(Errc::kInvalidArgument, "rpc: channels must be 1.." +
                                              std::to_string(kMaxChannelsPerClient) + ", not " +
                                              std::to_string(options.channels));
  }
  for (uint64_t* r : {&options.request_ring_bytes, &options.response_ring_bytes}) {
    if (*r < kMinRingBytes) {
      return Status(Errc::kInvalidArgument, "rpc: rings must have at least " + std::to_string(kMinRingBytes) +
                                                " bytes, not " + std::to_string(*r));
    }
    *r = AlignUp(*r, 4096);
  }
  if (options.max_coalesce == 0) options.max_coalesce = 1;
  if (options.max_threads == 0) options.max_threads = 1;
  auto impl = std::make_unique<ClientImpl>(fabric, options);
  RDMQ_RETURN_IF_ERROR(impl->Open(address));
  return std::unique_ptr<Client>(std::move(impl));
}

}  // namespace rdmq::rpc
