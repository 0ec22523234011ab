// Internal: rpc::Server's implementation, shared by the files that each hold one concern of it:
//   server.cc            Create, handler registration, Start/Stop, the worker pool, stats
//   server_handshake.cc  the acceptor thread and the connect handshake (connection setup)
//   server_dispatch.cc   the dispatcher thread: request rings in, handlers run, responses out
//   server_respond.cc    the response side: coalesced response messages, backlog, control messages
//   server_credit.cc     the receive CQ: credit renewals granted or refused, doorbells
//   server_scheduler.cc  the channel scheduler thread (Equation 3.1 every interval)
//   server_failure.cc    liveness checks and closing a connection handle
// See server.h for the model and docs/rpc.md for the protocol.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/rpc/server.h"
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

// Receives kept posted per channel: renewals (one in flight) and, on tcp/verbs, one doorbell per
// message, of which credits allow at most 1.5 C in flight.
inline constexpr uint32_t kRecvsPerChannel = 64;

// A response waiting to be written (its bytes owned).
struct OutResponse {
  EntryMeta meta;
  std::string data;
};

struct SChannel {
  uint64_t client_id = 0;
  uint32_t index = 0;
  std::string peer;
  std::string peer_identity;  // the CN of the client's verified TLS certificate, or ""
  // Declaration order = reverse destruction order (see client_impl.h).
  std::unique_ptr<fabric::CompletionQueue> send_cq;
  std::unique_ptr<fabric::Region> req_region;  // control page + request ring
  std::unique_ptr<fabric::Region> staging;     // response ring mirror + scratch page
  std::unique_ptr<fabric::Endpoint> ep;
  std::unique_ptr<fabric::RemoteRegion> resp_remote;
  std::unique_ptr<fabric::RemoteRegion> client_wake;
  uint64_t ep_id = 0;
  uint64_t req_ring = 0;
  uint64_t resp_ring = 0;
  std::atomic<bool> closed{false};

  // Dispatcher-owned.
  std::optional<RingConsumer> reader;
  std::atomic<uint64_t> head_pub{0};

  // The response side, credits, the endpoint's send queue (dispatcher, workers, scheduler).
  SpinLock mu;
  std::unique_ptr<SendQueue> sq PT_GUARDED_BY(mu);
  std::unique_ptr<RingProducer> prod PT_GUARDED_BY(mu);
  uint64_t max_response_entry = 0;  // MaxEntryData of the response ring (set at the handshake)
  CreditGranter credit GUARDED_BY(mu);
  uint32_t last_credit_seq GUARDED_BY(mu) = 0;
  bool control_pending GUARDED_BY(mu) = false;  // a credit answer or state change still to be written
  bool answer_pending GUARDED_BY(mu) = false;   // ... and it answers a renewal
  std::deque<OutResponse> backlog GUARDED_BY(mu);
  std::atomic<bool> has_backlog{false};
  uint64_t canary_state GUARDED_BY(mu) = 0;
  uint32_t recvs_to_post GUARDED_BY(mu) = 0;
  Clock::time_point last_head_read GUARDED_BY(mu){};

  std::byte* scratch() const { return staging->data() + resp_ring; }
};

// A connection handle. id, token, nchannels and peer are fixed once it is registered; channels,
// allotment, last_utilization and joined_this_interval are read and written under
// ServerImpl::reg_mu_ only (channels[k] is set once, when channel k joins; the scheduler copies
// them out under the lock and writes its decisions back under it).
struct Conn {
  uint64_t id = 0;
  uint64_t token = 0;
  uint32_t nchannels = 0;
  std::string peer;
  std::string peer_identity;  // channel 0's; every channel that joins must present the same
  std::vector<std::shared_ptr<SChannel>> channels;  // null until joined
  bool joined_this_interval = true;
  uint32_t allotment = 1;
  uint64_t last_utilization = 0;
};

struct HandlerEntry {
  Handler fn;
  RunOn where = RunOn::kDispatcher;
};

struct Task {
  std::shared_ptr<SChannel> ch;
  EntryMeta meta;
  std::string request;
  const HandlerEntry* handler = nullptr;
};

class ServerImpl final : public Server {
 public:
  ServerImpl(fabric::Fabric& fabric, const ServerOptions& o)
      : fabric_(fabric), opts_(o), max_aqp_(o.max_active_channels) {}
  ~ServerImpl() override { Stop(); }

  Status Init();
  Status RegisterHandler(uint16_t id, Handler fn, RunOn where) override;
  Status Start() override;
  void Stop() override;
  void OnDisconnect(std::function<void(uint64_t)> fn) override { on_disconnect_ = std::move(fn); }
  void Disconnect(uint64_t client_id) override {
    CloseConn(client_id, "closed by the server's owner", false);
  }
  void SetMaxActiveChannels(uint32_t n) override { max_aqp_.store(std::max<uint32_t>(1, n)); }
  Stats stats() const override;
  size_t clients() const override {
    MutexLock g(reg_mu_);
    return conns_.size();
  }

 private:
  // Acceptor.
  void AcceptLoop();
  void Handshake(std::unique_ptr<fabric::Endpoint> ep, std::unique_ptr<fabric::CompletionQueue> cq);
  Status Refuse(fabric::Endpoint& ep, const Status& why);

  // Dispatcher.
  void DispatchLoop();
  void RefreshSnapshot();
  size_t ServeChannel(SChannel& ch, const std::shared_ptr<SChannel>& owner);
  void RunRequest(SChannel& ch, const std::shared_ptr<SChannel>& owner, const Entry& e);
  void MakeResponse(const EntryMeta& req, const Status& s, std::string* body, uint64_t max_entry,
                    OutResponse* out);
  bool AnyReady();

  // Response side.
  enum class WriteResult { kOk, kNoRoom, kError };
  Status SendResponses(SChannel& ch, OutResponse* r, size_t n) REQUIRES(ch.mu);
  WriteResult WriteMessage(SChannel& ch, OutResponse* r, size_t n, bool control, bool answer, Status* err)
      REQUIRES(ch.mu);
  bool ReserveResponse(SChannel& ch, uint64_t len, RingProducer::Placement* pl, Status* err) REQUIRES(ch.mu);
  Status FlushBacklog(SChannel& ch) REQUIRES(ch.mu);
  Status WriteControl(SChannel& ch, bool answer) REQUIRES(ch.mu);

  // Scheduler.
  void SchedulerLoop();
  void DrainReceives(std::vector<fabric::Completion>& cs, std::vector<std::shared_ptr<SChannel>>& touched);
  void Redistribute();
  void CheckLiveness();
  std::shared_ptr<SChannel> ByEndpoint(uint64_t ep_id);

  // Workers.
  void WorkerLoop();

  void CloseConn(uint64_t client_id, const std::string& why, bool protocol_error) EXCLUDES(reg_mu_);
  void WakeDispatcher() { WakeLocal(*wake_region_); }

  fabric::Fabric& fabric_;
  ServerOptions opts_;
  std::atomic<uint32_t> max_aqp_;
  std::unique_ptr<fabric::Region> wake_region_;
  std::unique_ptr<fabric::CompletionQueue> recv_cq_;
  std::unordered_map<uint16_t, HandlerEntry> handlers_;
  bool has_pool_handlers_ = false;
  std::function<void(uint64_t)> on_disconnect_;

  // The registry: every connection handle and channel; version_ bumps on every change so that
  // the dispatcher refreshes its snapshot.
  mutable Mutex reg_mu_;
  std::map<uint64_t, std::shared_ptr<Conn>> conns_ GUARDED_BY(reg_mu_);
  std::unordered_map<uint64_t, std::shared_ptr<SChannel>> by_ep_ GUARDED_BY(reg_mu_);
  std::atomic<uint64_t> version_{1};
  uint64_t next_client_id_ GUARDED_BY(reg_mu_) = 1;

  // Dispatcher-owned.
  std::vector<std::shared_ptr<SChannel>> snap_;
  uint64_t snap_version_ = 0;
  std::vector<OutResponse> out_;  // reused between messages
  size_t out_n_ = 0;
  std::string handler_buf_;
  ResponseBuffer rb_;

  Mutex wq_mu_;
  CondVar wq_cv_;
  std::deque<Task> wq_ GUARDED_BY(wq_mu_);

  // Set when a response woke a parked client poller; the dispatcher then yields its core once
  // (the woken thread is often placed on it). Only meaningful on the dispatcher thread.
  static inline thread_local bool woke_client_ = false;

  std::atomic<bool> started_{false};
  std::atomic<bool> stop_{false};
  std::thread acceptor_, dispatcher_, scheduler_;
  std::vector<std::thread> workers_;

  struct Counters {
    std::atomic<uint64_t> messages{0}, requests{0}, response_messages{0}, renewals_granted{0},
        renewals_refused{0}, redistributions{0}, activations{0}, deactivations{0}, connections_accepted{0},
        connections_closed{0}, protocol_errors{0}, unknown_handler{0}, parks{0};
  };
  mutable Counters n_;
};

}  // namespace rdmq::rpc::internal
