// rpc::Server: handshake, request dispatch, coalesced responses, credits and the channel
// scheduler. See server.h for the model and docs/rpc.md for the protocol.
#include "rdmq/rpc/server.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rdmq/common/log.h"
#include "rpc/credit.h"
#include "rpc/handshake.h"
#include "rpc/ring.h"
#include "rpc/ring_consumer.h"
#include "rpc/scheduling.h"
#include "rpc/transport.h"
#include "rpc/wait.h"
#include "rpc/wire.h"

namespace rdmq::rpc {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace)
using fabric::Opcode;
using fabric::WorkRequest;

// Receives kept posted per channel: renewals (one in flight) and, on tcp/verbs, one doorbell per
// message, of which credits allow at most 1.5 C in flight.
constexpr uint32_t kRecvsPerChannel = 64;

// A response waiting to be written (its bytes owned).
struct OutResponse {
  EntryMeta meta;
  std::string data;
};

struct SChannel {
  uint64_t client_id = 0;
  uint32_t index = 0;
  std::string peer;
  // Declaration order = reverse destruction order (see client.cc).
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

  // Under mu: the response side, credits, the endpoint's send queue.
  SpinLock mu;
  std::unique_ptr<SendQueue> sq;
  std::unique_ptr<RingProducer> prod;
  CreditGranter credit;
  uint32_t last_credit_seq = 0;
  bool control_pending = false;  // a credit answer or state change still to be written
  bool answer_pending = false;   // ... and it answers a renewal
  std::deque<OutResponse> backlog;
  std::atomic<bool> has_backlog{false};
  uint64_t canary_state = 0;
  uint32_t recvs_to_post = 0;
  Clock::time_point last_head_read{};

  std::byte* scratch() const { return staging->data() + resp_ring; }
};

struct Conn {
  uint64_t id = 0;
  uint64_t token = 0;
  uint32_t nchannels = 0;
  std::string peer;
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
    std::lock_guard<std::mutex> g(reg_mu_);
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

  // Response side (all under ch.mu).
  enum class WriteResult { kOk, kNoRoom, kError };
  Status SendResponses(SChannel& ch, OutResponse* r, size_t n);
  WriteResult WriteMessage(SChannel& ch, OutResponse* r, size_t n, bool control, bool answer, Status* err);
  bool ReserveResponse(SChannel& ch, uint64_t len, RingProducer::Placement* pl, Status* err);
  Status FlushBacklog(SChannel& ch);
  Status WriteControl(SChannel& ch, bool answer);

  // Scheduler.
  void SchedulerLoop();
  void Redistribute();
  void CheckLiveness();
  std::shared_ptr<SChannel> ByEndpoint(uint64_t ep_id);

  // Workers.
  void WorkerLoop();

  void CloseConn(uint64_t client_id, const std::string& why, bool protocol_error);
  void WakeDispatcher() { WakeLocal(*wake_region_); }

  fabric::Fabric& fabric_;
  ServerOptions opts_;
  std::atomic<uint32_t> max_aqp_;
  std::unique_ptr<fabric::Region> wake_region_;
  std::unique_ptr<fabric::CompletionQueue> recv_cq_;
  std::unordered_map<uint16_t, HandlerEntry> handlers_;
  bool has_pool_handlers_ = false;
  std::function<void(uint64_t)> on_disconnect_;

  mutable std::mutex reg_mu_;
  std::map<uint64_t, std::shared_ptr<Conn>> conns_;
  std::unordered_map<uint64_t, std::shared_ptr<SChannel>> by_ep_;
  std::atomic<uint64_t> version_{1};
  uint64_t next_client_id_ = 1;

  // Dispatcher-owned.
  std::vector<std::shared_ptr<SChannel>> snap_;
  uint64_t snap_version_ = 0;
  std::vector<OutResponse> out_;  // reused between messages
  size_t out_n_ = 0;
  std::string handler_buf_;
  ResponseBuffer rb_;

  std::mutex wq_mu_;
  std::condition_variable wq_cv_;
  std::deque<Task> wq_;

  // Set when a response woke a parked client poller; the dispatcher then yields its core once
  // (the woken thread is often placed on it). Only meaningful on the dispatcher thread.
  static thread_local bool woke_client_;

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

Status ServerImpl::Init() {
  RDMQ_ASSIGN_OR_RETURN(
      wake_region_,
      fabric_.Allocate(kWakeRegionBytes, fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteAtomic));
  // Every channel keeps kRecvsPerChannel receives posted (renewals, and doorbells on tcp/verbs).
  RDMQ_ASSIGN_OR_RETURN(
      recv_cq_, fabric_.CreateCompletionQueue(static_cast<size_t>(opts_.max_channels) * kRecvsPerChannel));
  return Status();
}

Status ServerImpl::RegisterHandler(uint16_t id, Handler fn, RunOn where) {
  if (started_.load())
    return Status(Errc::kFailedPrecondition, "rpc: register handlers before Server::Start");
  if (!fn) return Status(Errc::kInvalidArgument, "rpc: empty handler for id " + std::to_string(id));
  if (!handlers_.emplace(id, HandlerEntry{std::move(fn), where}).second) {
    return Status(Errc::kAlreadyExists, "rpc: handler id " + std::to_string(id) + " is already registered");
  }
  if (where == RunOn::kWorkerPool) has_pool_handlers_ = true;
  return Status();
}

Status ServerImpl::Start() {
  if (started_.exchange(true)) return Status(Errc::kFailedPrecondition, "rpc: server already started");
  if (has_pool_handlers_) {
    for (uint32_t i = 0; i < std::max<uint32_t>(1, opts_.worker_threads); ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
  }
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  scheduler_ = std::thread([this] { SchedulerLoop(); });
  acceptor_ = std::thread([this] { AcceptLoop(); });
  RDMQ_LOG(kInfo, "rpc", "server started").kv("address", fabric_.address()).kv("handlers", handlers_.size());
  return Status();
}

void ServerImpl::Stop() {
  if (stop_.exchange(true)) return;
  if (wake_region_) WakeDispatcher();
  wq_cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  if (dispatcher_.joinable()) dispatcher_.join();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& w : workers_) w.join();
  workers_.clear();
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    for (const auto& [id, c] : conns_) ids.push_back(id);
  }
  for (uint64_t id : ids) CloseConn(id, "server stopping", false);
  snap_.clear();
}

// ---------------------------------------------------------------------------------- acceptor

void ServerImpl::AcceptLoop() {
  std::unique_ptr<fabric::CompletionQueue> cq;
  while (!stop_.load(std::memory_order_acquire)) {
    if (!cq) {
      auto c = fabric_.CreateCompletionQueue(opts_.max_send_wr * 2);
      if (!c.ok()) {
        RDMQ_LOG(kError, "rpc", "cannot create a completion queue for new channels").kv("status", c.status());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      cq = std::move(c).value();
    }
    fabric::EndpointOptions eo;
    eo.send_cq = cq.get();
    eo.recv_cq = recv_cq_.get();
    eo.max_send_wr = opts_.max_send_wr;
    eo.max_recv_wr = opts_.max_recv_wr;
    auto ep = fabric_.Accept(eo, std::chrono::milliseconds(100));
    if (!ep.ok()) {
      if (!ep.status().is(Errc::kTimeout) && !stop_.load()) {
        RDMQ_LOG(kWarn, "rpc", "accept failed").kv("status", ep.status());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    Handshake(std::move(ep).value(), std::move(cq));
  }
}

Status ServerImpl::Refuse(fabric::Endpoint& ep, const Status& why) {
  RDMQ_LOG(kWarn, "rpc", "refusing a channel").kv("peer", ep.peer()).kv("why", why);
  Welcome w;
  w.error = WireErrc(why);
  w.message = why.ToString();
  (void)ep.SendControl(coding::AsBytes(EncodeWelcome(w)));
  ep.Close();
  return why;
}

void ServerImpl::Handshake(std::unique_ptr<fabric::Endpoint> ep,
                           std::unique_ptr<fabric::CompletionQueue> cq) {
  auto msg = ep->RecvControl(opts_.handshake_timeout);
  if (!msg.ok()) {
    RDMQ_LOG(kWarn, "rpc", "no handshake from a new connection")
        .kv("peer", ep->peer())
        .kv("status", msg.status());
    ep->Close();
    return;
  }
  auto hello_r = DecodeHello(*msg);
  if (!hello_r.ok()) {
    n_.protocol_errors.fetch_add(1);
    (void)Refuse(*ep, hello_r.status());
    return;
  }
  const Hello& hello = *hello_r;
  const std::string where =
      "channel " + std::to_string(hello.channel) + " of " + std::to_string(hello.channels);
  if (hello.channels == 0 || hello.channels > kMaxChannelsPerClient || hello.channel >= hello.channels) {
    (void)Refuse(*ep, Status(RpcErrc::kHandshake, where + ": bad channel numbers"));
    return;
  }
  if (hello.response_ring < kMinRingBytes || hello.response_ring % kMessageAlign != 0 ||
      hello.response_ring > opts_.max_ring_bytes ||
      hello.response_region.length < kControlPage + hello.response_ring ||
      hello.request_ring < kMinRingBytes) {
    (void)Refuse(*ep, Status(RpcErrc::kHandshake, where + ": bad ring sizes (request " +
                                                      std::to_string(hello.request_ring) + ", response " +
                                                      std::to_string(hello.response_ring) + ")"));
    return;
  }
  {
    size_t n = 0;
    std::lock_guard<std::mutex> g(reg_mu_);
    n = by_ep_.size();
    if (n >= opts_.max_channels) {
      (void)Refuse(
          *ep, Status(Errc::kResourceExhausted, where + ": the server already serves " + std::to_string(n) +
                                                    " channels (ServerOptions::max_channels)"));
      return;
    }
  }
  std::shared_ptr<Conn> conn;
  if (hello.kind == HelloKind::kNew) {
    if (hello.channel != 0) {
      (void)Refuse(*ep, Status(RpcErrc::kHandshake, where + ": a new connection starts with channel 0"));
      return;
    }
    conn = std::make_shared<Conn>();
    conn->token = RandomSeed();
    conn->nchannels = hello.channels;
    conn->peer = ep->peer();
    conn->channels.resize(hello.channels);
    std::vector<uint32_t> functioning;
    std::lock_guard<std::mutex> g(reg_mu_);
    conn->id = next_client_id_++;
    for (const auto& [id, c] : conns_) {
      if (c->last_utilization > 0) functioning.push_back(c->allotment);
    }
    conn->allotment = ChannelsForNewClient(functioning, hello.channels, max_aqp_.load());
  } else {
    std::lock_guard<std::mutex> g(reg_mu_);
    auto it = conns_.find(hello.client_id);
    if (it == conns_.end() || it->second->token != hello.token || it->second->nchannels != hello.channels ||
        it->second->channels[hello.channel] != nullptr) {
      (void)Refuse(*ep,
                   Status(RpcErrc::kHandshake, where + ": no such client " + std::to_string(hello.client_id) +
                                                   " waiting for this channel (or a wrong token)"));
      return;
    }
    conn = it->second;
  }

  auto ch = std::make_shared<SChannel>();
  ch->client_id = conn->id;
  ch->index = hello.channel;
  ch->peer = ep->peer();
  ch->req_ring = std::min<uint64_t>(AlignUp(hello.request_ring, 4096), AlignUp(opts_.max_ring_bytes, 4096));
  ch->resp_ring = hello.response_ring;
  ch->send_cq = std::move(cq);
  auto fail = [&](const Status& s) {
    (void)Refuse(*ep, s.WithContext("rpc: setting up " + where + " of client " + std::to_string(conn->id)));
  };
  auto req = fabric_.Allocate(kControlPage + ch->req_ring,
                              fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteWrite);
  if (!req.ok()) return fail(req.status());
  ch->req_region = std::move(req).value();
  auto stg = fabric_.Allocate(ch->resp_ring + kControlPage, fabric::kLocalWrite);
  if (!stg.ok()) return fail(stg.status());
  ch->staging = std::move(stg).value();
  auto rr = ep->Attach(hello.response_region);
  if (!rr.ok()) return fail(rr.status());
  auto wr = ep->Attach(hello.wake_region);
  if (!wr.ok()) return fail(wr.status());
  auto req_desc = ch->req_region->Descriptor(fabric::kRemoteRead | fabric::kRemoteWrite);
  if (!req_desc.ok()) return fail(req_desc.status());
  auto wake_desc = wake_region_->Descriptor(fabric::kRemoteRead | fabric::kRemoteAtomic);
  if (!wake_desc.ok()) return fail(wake_desc.status());
  std::vector<fabric::RecvRequest> recvs(std::min(opts_.max_recv_wr, kRecvsPerChannel));
  if (Status s = ep->PostRecv(recvs); !s.ok()) return fail(s);
  ch->ep_id = ep->id();
  ch->ep = std::move(ep);
  ch->resp_remote = std::move(rr).value();
  ch->client_wake = std::move(wr).value();
  ch->reader.emplace(ch->req_region->data() + kControlPage, ch->req_ring, false,
                     opts_.incomplete_message_timeout);
  ch->sq = std::make_unique<SendQueue>(ch->ep.get(), ch->send_cq.get(), opts_.max_send_wr);
  ch->prod = std::make_unique<RingProducer>(ch->resp_ring);
  const bool active = hello.channel < conn->allotment;
  ch->credit = CreditGranter(opts_.credits, active);
  ch->canary_state = RandomSeed();

  Welcome w;
  w.client_id = conn->id;
  w.token = conn->token;
  w.credits = opts_.credits;
  w.active = active;
  w.credit_limit = ch->credit.limit();
  w.request_ring = ch->req_ring;
  w.request_region = *req_desc;
  w.wake_region = *wake_desc;
  // Register before answering: the client may renew credits the moment it has the welcome.
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    if (conn->channels[hello.channel] != nullptr) {
      (void)Refuse(*ch->ep, Status(RpcErrc::kHandshake, where + ": joined twice"));
      return;
    }
    if (hello.kind == HelloKind::kNew) conns_[conn->id] = conn;
    conn->channels[hello.channel] = ch;
    by_ep_[ch->ep_id] = ch;
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  Status sent;
  {
    std::lock_guard<SpinLock> g(ch->mu);
    sent = ch->ep->SendControl(coding::AsBytes(EncodeWelcome(w)));
  }
  if (!sent.ok()) {
    CloseConn(conn->id, "sending the welcome failed: " + sent.ToString(), false);
    return;
  }
  if (hello.kind == HelloKind::kNew) {
    n_.connections_accepted.fetch_add(1);
    RDMQ_LOG(kInfo, "rpc", "client connected")
        .kv("client_id", conn->id)
        .kv("peer", conn->peer)
        .kv("channels", conn->nchannels)
        .kv("active", conn->allotment);
  }
}

// -------------------------------------------------------------------------------- dispatcher

void ServerImpl::RefreshSnapshot() {
  const uint64_t v = version_.load(std::memory_order_acquire);
  if (v == snap_version_) return;
  std::lock_guard<std::mutex> g(reg_mu_);
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
      std::lock_guard<SpinLock> g(ch.mu);
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
      std::lock_guard<SpinLock> g(ch.mu);
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
      std::lock_guard<SpinLock> g(ch.mu);
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
      std::lock_guard<std::mutex> g(wq_mu_);
      wq_.push_back(std::move(t));
    }
    wq_cv_.notify_one();
    return;
  }
  RequestContext ctx{ch.client_id, ch.index, e.meta.thread, e.meta.seq, e.meta.handler, ch.peer};
  rb_.Clear();
  const Status s = it->second.fn(ctx, e.data, rb_);
  MakeResponse(e.meta, s, &rb_.str(), MaxEntryData(ch.prod->max_message()), &out_[out_n_++]);
}

// ---------------------------------------------------------------------------- response side

bool ServerImpl::ReserveResponse(SChannel& ch, uint64_t len, RingProducer::Placement* pl, Status* err) {
  if (auto p = ch.prod->Reserve(len)) {
    *pl = *p;
    return true;
  }
  // The cached head says full: READ the client's head word, at most every 20 us.
  const auto now = Clock::now();
  if (now - ch.last_head_read < std::chrono::microseconds(20)) return false;
  ch.last_head_read = now;
  WorkRequest rd;
  rd.opcode = Opcode::kRead;
  rd.local = {ch.scratch() + kScratchHead, 8, ch.staging.get()};
  rd.remote = ch.resp_remote.get();
  rd.remote_offset = kHeadOffset;
  *err = ch.sq->ReadSync(rd, now + std::chrono::seconds(5));
  if (!err->ok()) return false;
  if (!ch.prod->UpdateHead(coding::LoadLE<uint64_t>(ch.scratch() + kScratchHead))) {
    *err =
        Status(RpcErrc::kCorruptMessage, "the client's response-ring head is beyond what the server wrote");
    return false;
  }
  if (auto p = ch.prod->Reserve(len)) {
    *pl = *p;
    return true;
  }
  return false;
}

ServerImpl::WriteResult ServerImpl::WriteMessage(SChannel& ch, OutResponse* r, size_t n, bool control,
                                                 bool answer, Status* err) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; ++i) bytes += EntryBytes(r[i].data.size());
  const uint64_t len = MessageLength(bytes);
  RingProducer::Placement pl;
  if (!ReserveResponse(ch, len, &pl, err)) return err->ok() ? WriteResult::kNoRoom : WriteResult::kError;
  std::byte* stage = ch.staging->data();
  MessageBuilder mb(stage + pl.offset, static_cast<uint32_t>(len));
  for (size_t i = 0; i < n; ++i) {
    r[i].meta.size = static_cast<uint32_t>(r[i].data.size());
    mb.Add(r[i].meta, std::as_bytes(std::span(r[i].data.data(), r[i].data.size())));
  }
  MessageHeader h;
  h.canary = NextCanary(&ch.canary_state);
  h.flags = static_cast<uint8_t>(kFlagResponse | (ch.credit.active() ? kFlagActive : 0) |
                                 (answer ? kFlagCredit : 0));
  h.position = pl.position;
  h.credit_seq = ch.last_credit_seq;
  h.peer_head = ch.head_pub.load(std::memory_order_acquire);
  h.credit_limit = ch.credit.limit();
  mb.Finish(h);
  if (pl.pad_length > 0) {
    BuildPad(stage + pl.pad_position % ch.resp_ring, pl.pad_length, pl.pad_position,
             NextCanary(&ch.canary_state), kFlagResponse);
  }
  const bool imm = ch.client_wake->mapped() == nullptr;
  WorkRequest wrs[4];
  const size_t nw = MessageWrites(pl, ch.resp_ring, mb.used(), static_cast<uint32_t>(len), *ch.staging,
                                  *ch.resp_remote, kControlPage, imm, wrs);
  *err = ch.sq->Post(std::span<WorkRequest>(wrs, nw));
  if (err->ok() && !imm) {
    bool woke = false;
    *err = RingDoorbellIfParked(*ch.sq, *ch.client_wake, *ch.staging, ch.scratch() + kScratchAtomic, &woke);
    if (woke) woke_client_ = true;
  }
  if (!err->ok()) return WriteResult::kError;
  if (control) {
    ch.control_pending = false;
    ch.answer_pending = false;
  }
  n_.response_messages.fetch_add(1, std::memory_order_relaxed);
  return WriteResult::kOk;
}

Status ServerImpl::SendResponses(SChannel& ch, OutResponse* r, size_t n) {
  if (ch.closed.load(std::memory_order_acquire)) return Status();
  if (ch.has_backlog.load(std::memory_order_relaxed)) {
    for (size_t i = 0; i < n; ++i) ch.backlog.push_back(std::move(r[i]));
    return FlushBacklog(ch);
  }
  const uint64_t max_msg = ch.prod->max_message();
  size_t i = 0;
  while (i < n) {
    uint64_t bytes = 0;
    size_t j = i;
    while (j < n && MessageLength(bytes + EntryBytes(r[j].data.size())) <= max_msg)
      bytes += EntryBytes(r[j++].data.size());
    Status err;
    // A pending credit answer rides on this message.
    const bool answer = ch.answer_pending;
    switch (WriteMessage(ch, r + i, j - i, ch.control_pending, answer, &err)) {
      case WriteResult::kOk:
        i = j;
        break;
      case WriteResult::kNoRoom:
        for (; i < n; ++i) ch.backlog.push_back(std::move(r[i]));
        ch.has_backlog.store(true, std::memory_order_release);
        return Status();
      case WriteResult::kError:
        return err;
    }
  }
  return Status();
}

Status ServerImpl::FlushBacklog(SChannel& ch) {
  if (ch.closed.load(std::memory_order_acquire)) return Status();
  const uint64_t max_msg = ch.prod->max_message();
  while (!ch.backlog.empty()) {
    uint64_t bytes = 0;
    size_t j = 0;
    while (j < ch.backlog.size() && MessageLength(bytes + EntryBytes(ch.backlog[j].data.size())) <= max_msg) {
      bytes += EntryBytes(ch.backlog[j++].data.size());
    }
    std::vector<OutResponse> batch;
    batch.reserve(j);
    for (size_t k = 0; k < j; ++k) batch.push_back(std::move(ch.backlog[k]));
    Status err;
    const WriteResult w =
        WriteMessage(ch, batch.data(), batch.size(), ch.control_pending, ch.answer_pending, &err);
    if (w == WriteResult::kError) return err;
    if (w == WriteResult::kNoRoom) {
      for (size_t k = 0; k < j; ++k) ch.backlog[k] = std::move(batch[k]);
      return Status();
    }
    ch.backlog.erase(ch.backlog.begin(), ch.backlog.begin() + static_cast<std::ptrdiff_t>(j));
  }
  if (ch.control_pending) {
    Status err;
    if (WriteMessage(ch, nullptr, 0, true, ch.answer_pending, &err) == WriteResult::kError) return err;
  }
  if (ch.backlog.empty() && !ch.control_pending) ch.has_backlog.store(false, std::memory_order_release);
  return Status();
}

Status ServerImpl::WriteControl(SChannel& ch, bool answer) {
  ch.control_pending = true;
  ch.answer_pending = ch.answer_pending || answer;
  if (ch.closed.load(std::memory_order_acquire)) return Status();
  if (ch.has_backlog.load(std::memory_order_relaxed)) return FlushBacklog(ch);
  Status err;
  switch (WriteMessage(ch, nullptr, 0, true, ch.answer_pending, &err)) {
    case WriteResult::kOk:
      return Status();
    case WriteResult::kNoRoom:
      ch.has_backlog.store(true, std::memory_order_release);
      WakeDispatcher();  // it flushes backlogs
      return Status();
    case WriteResult::kError:
      return err;
  }
  return Status();
}

// --------------------------------------------------------------------------------- scheduler

std::shared_ptr<SChannel> ServerImpl::ByEndpoint(uint64_t ep_id) {
  std::lock_guard<std::mutex> g(reg_mu_);
  auto it = by_ep_.find(ep_id);
  return it == by_ep_.end() ? nullptr : it->second;
}

void ServerImpl::SchedulerLoop() {
  auto next_tick = Clock::now() + opts_.schedule_interval;
  std::vector<fabric::Completion> cs(256);
  std::vector<std::shared_ptr<SChannel>> touched;
  while (!stop_.load(std::memory_order_acquire)) {
    const auto now = Clock::now();
    const auto wait = next_tick > now ? next_tick - now : Clock::duration::zero();
    (void)recv_cq_->Wait(std::chrono::duration_cast<std::chrono::nanoseconds>(wait));
    bool doorbell = false;
    size_t got;
    while ((got = recv_cq_->Poll(cs)) > 0) {
      for (size_t i = 0; i < got; ++i) {
        const fabric::Completion& c = cs[i];
        auto ch = ByEndpoint(c.endpoint_id);
        if (!ch) continue;
        if (c.status) {
          if (!ch->closed.load()) {
            CloseConn(
                ch->client_id,
                "receive on channel " + std::to_string(ch->index) + " failed: " + Status(c.status).ToString(),
                false);
          }
          continue;
        }
        Imm imm;
        if (!c.has_imm || !DecodeImm(c.imm, &imm)) {
          CloseConn(ch->client_id,
                    "channel " + std::to_string(ch->index) + ": unexpected receive without a valid immediate",
                    true);
          continue;
        }
        if (std::find(touched.begin(), touched.end(), ch) == touched.end()) touched.push_back(ch);
        std::lock_guard<SpinLock> g(ch->mu);
        ++ch->recvs_to_post;
        if (imm.kind == ImmKind::kDoorbell) {
          doorbell = true;
          continue;
        }
        const auto d = ch->credit.OnRenewal(imm.seq, imm.value);
        ch->last_credit_seq = imm.seq;
        (d.granted ? n_.renewals_granted : n_.renewals_refused).fetch_add(1, std::memory_order_relaxed);
        Status st = WriteControl(*ch, true);
        if (!st.ok()) ch->closed.store(true);  // closed properly below
      }
      if (got < cs.size()) break;
    }
    for (auto& ch : touched) {
      bool failed = false;
      {
        std::lock_guard<SpinLock> g(ch->mu);
        if (ch->recvs_to_post > 0 && !ch->closed.load()) {
          std::vector<fabric::RecvRequest> rr(ch->recvs_to_post);
          failed = !ch->ep->PostRecv(rr).ok();
          ch->recvs_to_post = 0;
        }
        failed |= ch->closed.load();
      }
      if (failed)
        CloseConn(ch->client_id, "channel " + std::to_string(ch->index) + ": posting receives failed", false);
    }
    touched.clear();
    // Dekker with the parking dispatcher: the message landed before its immediate arrived.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (doorbell && LoadAcquire64(wake_region_->data() + kParkedOffset) != 0) WakeDispatcher();
    if (Clock::now() >= next_tick) {
      Redistribute();
      CheckLiveness();
      next_tick = Clock::now() + opts_.schedule_interval;
    }
  }
}

void ServerImpl::Redistribute() {
  std::vector<std::shared_ptr<Conn>> conns;
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    for (const auto& [id, c] : conns_) conns.push_back(c);
  }
  if (conns.empty()) return;
  std::vector<ClientUsage> usage(conns.size());
  std::vector<std::vector<bool>> masks(conns.size());
  for (size_t i = 0; i < conns.size(); ++i) {
    Conn& c = *conns[i];
    uint64_t u = 0;
    for (const auto& ch : c.channels) {
      masks[i].push_back(false);
      if (!ch) continue;
      std::lock_guard<SpinLock> g(ch->mu);
      u += ch->credit.TakeUsage().utilization_x16;
      masks[i].back() = ch->credit.active();
    }
    usage[i] = ClientUsage{c.nchannels, u, c.joined_this_interval, c.allotment};
    c.last_utilization = u;
  }
  const auto targets = DistributeActiveChannels(usage, max_aqp_.load());
  // Activations first, so that a client never has fewer active channels than it will keep.
  for (int pass = 0; pass < 2; ++pass) {
    const bool activate = pass == 0;
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      const auto want = SelectActiveChannels(masks[i], targets[i]);
      c.allotment = targets[i];
      c.joined_this_interval = false;
      for (size_t k = 0; k < c.channels.size(); ++k) {
        const auto& ch = c.channels[k];
        if (!ch || want[k] == masks[i][k] || want[k] != activate) continue;
        Status st;
        {
          std::lock_guard<SpinLock> g(ch->mu);
          ch->credit.SetActive(activate);
          st = WriteControl(*ch, false);
        }
        (activate ? n_.activations : n_.deactivations).fetch_add(1, std::memory_order_relaxed);
        if (!st.ok()) CloseConn(c.id, "writing a channel state change failed: " + st.ToString(), false);
      }
    }
  }
  n_.redistributions.fetch_add(1, std::memory_order_relaxed);
}

void ServerImpl::CheckLiveness() {
  std::vector<std::pair<uint64_t, std::string>> gone;
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    for (const auto& [id, c] : conns_) {
      for (const auto& ch : c->channels) {
        if (ch && (!ch->ep->connected() || ch->closed.load())) {
          gone.emplace_back(id, "channel " + std::to_string(ch->index) + ": the client went away");
          break;
        }
      }
    }
  }
  for (const auto& [id, why] : gone) CloseConn(id, why, false);
}

void ServerImpl::CloseConn(uint64_t client_id, const std::string& why, bool protocol_error) {
  std::shared_ptr<Conn> conn;
  {
    std::lock_guard<std::mutex> g(reg_mu_);
    auto it = conns_.find(client_id);
    if (it == conns_.end()) return;
    conn = it->second;
    conns_.erase(it);
    for (const auto& ch : conn->channels) {
      if (ch) by_ep_.erase(ch->ep_id);
    }
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  // Count and log first: the peer may observe the close right away.
  n_.connections_closed.fetch_add(1);
  if (protocol_error) {
    n_.protocol_errors.fetch_add(1);
    RDMQ_LOG(kError, "rpc", "closing a connection that broke the protocol")
        .kv("client_id", client_id)
        .kv("peer", conn->peer)
        .kv("why", why);
  } else {
    RDMQ_LOG(kInfo, "rpc", "connection closed")
        .kv("client_id", client_id)
        .kv("peer", conn->peer)
        .kv("why", why);
  }
  for (const auto& ch : conn->channels) {
    if (!ch) continue;
    ch->closed.store(true, std::memory_order_release);
    std::lock_guard<SpinLock> g(ch->mu);
    ch->ep->Close();
  }
  if (on_disconnect_) on_disconnect_(client_id);
}

// ------------------------------------------------------------------------------------ workers

void ServerImpl::WorkerLoop() {
  ResponseBuffer rb;
  for (;;) {
    Task t;
    {
      std::unique_lock<std::mutex> g(wq_mu_);
      wq_cv_.wait(g, [&] { return stop_.load() || !wq_.empty(); });
      if (wq_.empty()) return;  // stopping
      t = std::move(wq_.front());
      wq_.pop_front();
    }
    if (t.ch->closed.load(std::memory_order_acquire)) continue;
    RequestContext ctx{t.ch->client_id, t.ch->index, t.meta.thread, t.meta.seq, t.meta.handler, t.ch->peer};
    rb.Clear();
    const Status s = t.handler->fn(ctx, coding::AsBytes(t.request), rb);
    OutResponse out;
    MakeResponse(t.meta, s, &rb.str(), MaxEntryData(t.ch->prod->max_message()), &out);
    Status st;
    {
      std::lock_guard<SpinLock> g(t.ch->mu);
      st = SendResponses(*t.ch, &out, 1);
    }
    if (!st.ok()) CloseConn(t.ch->client_id, "writing a response failed: " + st.ToString(), false);
  }
}

thread_local bool ServerImpl::woke_client_ = false;

Server::Stats ServerImpl::stats() const {
  Stats s;
  s.messages = n_.messages.load();
  s.requests = n_.requests.load();
  s.response_messages = n_.response_messages.load();
  s.renewals_granted = n_.renewals_granted.load();
  s.renewals_refused = n_.renewals_refused.load();
  s.redistributions = n_.redistributions.load();
  s.activations = n_.activations.load();
  s.deactivations = n_.deactivations.load();
  s.connections_accepted = n_.connections_accepted.load();
  s.connections_closed = n_.connections_closed.load();
  s.protocol_errors = n_.protocol_errors.load();
  s.unknown_handler = n_.unknown_handler.load();
  s.parks = n_.parks.load();
  return s;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Create(fabric::Fabric& fabric, ServerOptions options) {
  if (options.credits < 2) return Status(Errc::kInvalidArgument, "rpc: at least 2 credits per channel");
  if (options.max_active_channels == 0) options.max_active_channels = 1;
  auto impl = std::make_unique<ServerImpl>(fabric, options);
  RDMQ_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Server>(std::move(impl));
}

}  // namespace rdmq::rpc
