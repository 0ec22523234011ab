// rpc::Client connection setup: one fabric endpoint and handshake per channel, the rings and
// the threads; and shutdown.
#include <string>
#include <vector>

#include "rdmq/common/log.h"
#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

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
    RDMQ_ASSIGN_OR_RETURN(ch->send_cq,
                          fabric_.CreateCompletionQueue(static_cast<size_t>(opts_.max_send_wr) * 2));
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
    {
      SpinGuard g(ch->credit_mu);
      ch->credit = CreditSender(w.credits);
      ch->credit.OnServerState(w.credit_limit, w.active, false, 0);
    }
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

void ClientImpl::Shutdown() {
  if (stop_.exchange(true)) return;
  {
    MutexLock g(broken_mu_);
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

}  // namespace rdmq::rpc::internal
