// Internal: rpc::Client's implementation, shared by the files that each hold one concern of it:
//   client.cc            the public entry points: Connect, Call, CallAsync, a call's life
//   client_connect.cc    connection setup (the handshake of every channel) and shutdown
//   client_combine.cc    how threads share a channel: presence, the combining queue, the spinlock
//   client_send.cc       the leader's send path: gather, credits, ring room, build, post
//   client_credit.cc     credit renewals and the channel state the server piggybacks
//   client_receive.cc    the response rings: polling and routing responses to their callers
//   client_failure.cc    breaking the connection: failing every outstanding call
//   client_dispatcher.cc the dispatcher thread: polls when nobody spins, parks, housekeeping
//   client_scheduler.cc  the thread scheduler (Algorithm 1) and a thread's channel choice
// See client.h for the model and docs/rpc.md for the protocol.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/rpc/client.h"
#include "rpc/combining_queue.h"
#include "rpc/credit.h"
#include "rpc/handshake.h"
#include "rpc/ring.h"
#include "rpc/ring_consumer.h"
#include "rpc/scheduling.h"
#include "rpc/transport.h"
#include "rpc/wait.h"
#include "rpc/wire.h"

namespace rdmq::rpc::internal {

using fabric::Opcode;
using fabric::WorkRequest;

inline constexpr size_t kMaxBatch = 64;
// How long a waiter spins with pause instructions before it spins with sched_yield.
inline constexpr auto kPureSpin = std::chrono::microseconds(3);
// A thread that waits for ring room, a channel or its old channel's responses helps poll, then
// backs off; one that spins for a channel's send lock (Sharing::kSpinlock) spins, then yields.
inline constexpr Backoff kHelpBackoff{50, 200, std::chrono::microseconds(50)};
inline constexpr Backoff kLockBackoff{256, 0, std::chrono::microseconds(0)};

struct ThreadState;

// A call's record. Ownership (docs/rpc.md, "Failure handling"): while it is in its thread's
// `pending` list any completer (a response, FailAll, an async deadline) may take it, and every
// completer writes it only under ThreadState::mu. A synchronous record lives on its caller's
// stack: the caller leaves Call only through a SyncCallScope, which takes that lock once more, so
// the record is unreachable from `pending` and no completer is still inside it when it dies. An
// async record belongs to whoever takes it from `pending`, which runs the callback and deletes it.
struct PendingCall {
  uint32_t seq = 0;
  uint32_t channel = 0;
  uint16_t handler = 0;
  bool async = false;
  Clock::time_point deadline;
  std::atomic<uint32_t> done{0};  // 1 once status/payload are final (stored under the thread's mu)
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
  Mutex mu;
  std::vector<PendingCall*> pending GUARDED_BY(mu);  // the thread's outstanding calls
  SpinLock stats_mu;  // the load statistics the thread scheduler reads and resets
  SampleWindow sizes GUARDED_BY(stats_mu);
  uint64_t requests GUARDED_BY(stats_mu) = 0;
  uint64_t bytes GUARDED_BY(stats_mu) = 0;
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

  // Sending: owned by the leader of the combining queue (or the holder of send_lock under
  // Sharing::kSpinlock): prod, canary_state and the staging mirror. Leadership is not a lock
  // the analysis sees, so those members carry no annotation.
  SpinLock post_mu;  // Post (leader) vs PostRecv (poller) on ep
  std::unique_ptr<SendQueue> sq PT_GUARDED_BY(post_mu);
  CombiningQueue tcq;
  SpinLock send_lock;  // Sharing::kSpinlock
  std::unique_ptr<RingProducer> prod;
  uint64_t canary_state = 0;
  std::atomic<uint64_t> server_head{0};  // newest request-ring head piggybacked on a response

  // Credits: the leader takes, the poller updates.
  SpinLock credit_mu;
  CreditSender credit GUARDED_BY(credit_mu);
  EventCount credit_event;
  std::atomic<bool> active{true};

  // Receiving: owned by the holder of ClientImpl::poll_lock_ (a try-lock flag, not annotated).
  std::optional<RingConsumer> reader;
  std::atomic<uint64_t> resp_head{0};  // consumed head, piggybacked on requests
  uint32_t recvs_consumed = 0;

  std::byte* scratch() const { return staging->data() + req_ring; }
};

enum class Outcome { kServed, kRetry, kFailed, kTimedOut };

class ClientImpl;

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

// A thread's presence among the response pollers. While any thread is present, the client's
// wake word says "not parked", so the server does not pay for futex wake-ups; the last one to
// leave says "parked" again and rechecks the rings (the Dekker protocol of docs/rpc.md).
// At most one present thread per spare core spins with pause instructions ("pure"); the others
// spin with sched_yield, which gives way to any runnable thread, before they sleep.
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

// Declared after a synchronous call's PendingCall, so that it runs before the record dies, on
// every way out of Call.
class SyncCallScope {
 public:
  SyncCallScope(ClientImpl* c, ThreadState* ts, PendingCall* call) : c_(c), ts_(ts), call_(call) {}
  ~SyncCallScope();
  SyncCallScope(const SyncCallScope&) = delete;
  SyncCallScope& operator=(const SyncCallScope&) = delete;

 private:
  ClientImpl* c_;
  ThreadState* ts_;
  PendingCall* call_;
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
    MutexLock g(broken_mu_);
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
  std::optional<RingProducer::Placement> ReserveRing(Channel& ch, uint64_t len, Presence& presence)
      EXCLUDES(ch.post_mu);
  // Leader only: fills `wr` with a credit-renewal WRITE_WITH_IMM when one is due.
  bool RenewalDue(Channel& ch, WorkRequest* wr) EXCLUDES(ch.credit_mu);
  // Poller only: applies the credit limit and active flag a response message carries.
  void OnServerState(Channel& ch, const MessageHeader& h) EXCLUDES(ch.credit_mu);
  bool Unregister(ThreadState& ts, PendingCall& call) EXCLUDES(ts.mu);
  // The last step of a synchronous call (SyncCallScope): under the thread's lock, takes the call
  // out of `pending` if it is still there, so no completer can reach it any more, and waits out
  // a completer that took it and may still be writing it.
  void Retire(ThreadState& ts, PendingCall& call) EXCLUDES(ts.mu);
  friend class SyncCallScope;
  void HelpWhileWaiting(Presence& presence, int round);

  size_t PollOnce(std::vector<PendingCall*>* async_done, std::vector<ThreadState*>* to_wake);
  void Complete(const Entry& e, std::vector<PendingCall*>* async_done, std::vector<ThreadState*>* to_wake);
  static void RunCallback(PendingCall* p);
  void Break(const Status& why) EXCLUDES(broken_mu_);
  void FailAll(const Status& why);

  void DispatcherLoop();
  void SchedulerLoop();
  bool RunSchedule();  // false when no thread sent anything since the previous run
  void Housekeeping();
  bool AnyReady();
  void Shutdown();
  static uint64_t NextSerial();

  fabric::Fabric& fabric_;
  ClientOptions opts_;
  uint64_t serial_ = NextSerial();
  std::unique_ptr<fabric::Region> wake_region_;
  std::unique_ptr<fabric::CompletionQueue> recv_cq_;
  std::vector<std::unique_ptr<Channel>> ch_;
  uint64_t client_id_ = 0;
  uint64_t max_request_bytes_ = 0;
  uint64_t max_response_bytes_ = 0;
  uint32_t credits_ = kDefaultCredits;

  // Calling threads: registered under threads_mu_ (Self), then found lock-free by id through
  // threads_ (slots 0 .. nthreads_-1 are published with release stores and never change).
  Mutex threads_mu_;
  std::unordered_map<std::thread::id, ThreadState*> by_os_thread_ GUARDED_BY(threads_mu_);
  std::vector<std::unique_ptr<ThreadState>> thread_storage_ GUARDED_BY(threads_mu_);
  std::unique_ptr<std::atomic<ThreadState*>[]> threads_;
  std::atomic<uint32_t> nthreads_{0};
  std::mt19937_64 assign_rng_ GUARDED_BY(threads_mu_){RandomSeed()};

  std::atomic<bool> poll_lock_{false};
  std::atomic<int64_t> outstanding_{0};
  std::atomic<int32_t> woken_{0};  // callers woken by completions and not yet back (combining window)

  mutable Mutex broken_mu_;
  Status broken_status_ GUARDED_BY(broken_mu_);
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

}  // namespace rdmq::rpc::internal
