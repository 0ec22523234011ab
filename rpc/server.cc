// rpc::Server: creation, handler registration, Start/Stop, the worker pool and the statistics.
// The other concerns live in server_*.cc (server_impl.h lists them).
#include "rdmq/rpc/server.h"

#include <memory>
#include <string>

#include "rdmq/common/log.h"
#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

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
  {
    // A worker checks stop_ under wq_mu_ before it waits: taking the lock here means it either
    // sees stop_ or is already waiting when the notification comes (no lost wake-up).
    MutexLock g(wq_mu_);
  }
  wq_cv_.NotifyAll();
  if (acceptor_.joinable()) acceptor_.join();
  if (dispatcher_.joinable()) dispatcher_.join();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& w : workers_) w.join();
  workers_.clear();
  std::vector<uint64_t> ids;
  {
    MutexLock g(reg_mu_);
    for (const auto& [id, c] : conns_) ids.push_back(id);
  }
  for (uint64_t id : ids) CloseConn(id, "server stopping", false);
  snap_.clear();
}

void ServerImpl::WorkerLoop() {
  ResponseBuffer rb;
  for (;;) {
    Task t;
    {
      UniqueLock g(wq_mu_);
      while (!stop_.load() && wq_.empty()) wq_cv_.Wait(g);
      if (wq_.empty()) return;  // stopping
      t = std::move(wq_.front());
      wq_.pop_front();
    }
    if (t.ch->closed.load(std::memory_order_acquire)) continue;
    RequestContext ctx{t.ch->client_id, t.ch->index, t.meta.thread,      t.meta.seq,
                       t.meta.handler,  t.ch->peer,  t.ch->peer_identity};
    rb.Clear();
    const Status s = t.handler->fn(ctx, coding::AsBytes(t.request), rb);
    OutResponse out;
    MakeResponse(t.meta, s, &rb.str(), t.ch->max_response_entry, &out);
    Status st;
    {
      SpinGuard g(t.ch->mu);
      st = SendResponses(*t.ch, &out, 1);
    }
    if (!st.ok()) CloseConn(t.ch->client_id, "writing a response failed: " + st.ToString(), false);
  }
}

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

}  // namespace rdmq::rpc::internal

namespace rdmq::rpc {

Result<std::unique_ptr<Server>> Server::Create(fabric::Fabric& fabric, ServerOptions options) {
  if (options.credits < 2) return Status(Errc::kInvalidArgument, "rpc: at least 2 credits per channel");
  if (options.max_active_channels == 0) options.max_active_channels = 1;
  auto impl = std::make_unique<internal::ServerImpl>(fabric, options);
  RDMQ_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Server>(std::move(impl));
}

}  // namespace rdmq::rpc
