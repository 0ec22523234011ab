// The server's acceptor thread and the connect handshake: a channel's regions, rings and
// receives are set up and registered before the welcome goes out; a bad hello is refused.
#include <string>
#include <thread>
#include <vector>

#include "rdmq/common/log.h"
#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

void ServerImpl::AcceptLoop() {
  std::unique_ptr<fabric::CompletionQueue> cq;
  while (!stop_.load(std::memory_order_acquire)) {
    if (!cq) {
      auto c = fabric_.CreateCompletionQueue(static_cast<size_t>(opts_.max_send_wr) * 2);
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
    MutexLock g(reg_mu_);
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
    conn->peer_identity = ep->peer_identity();
    conn->channels.resize(hello.channels);
    std::vector<uint32_t> functioning;
    MutexLock g(reg_mu_);
    conn->id = next_client_id_++;
    for (const auto& [id, c] : conns_) {
      if (c->last_utilization > 0) functioning.push_back(c->allotment);
    }
    conn->allotment = ChannelsForNewClient(functioning, hello.channels, max_aqp_.load());
  } else {
    MutexLock g(reg_mu_);
    auto it = conns_.find(hello.client_id);
    if (it == conns_.end() || it->second->token != hello.token || it->second->nchannels != hello.channels ||
        it->second->channels[hello.channel] != nullptr || it->second->peer_identity != ep->peer_identity()) {
      (void)Refuse(*ep,
                   Status(RpcErrc::kHandshake, where + ": no such client " + std::to_string(hello.client_id) +
                                                   " waiting for this channel (or a wrong token or "
                                                   "certificate)"));
      return;
    }
    conn = it->second;
  }

  auto ch = std::make_shared<SChannel>();
  ch->client_id = conn->id;
  ch->index = hello.channel;
  ch->peer = ep->peer();
  ch->peer_identity = conn->peer_identity;
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
  uint32_t allotment = 0;
  {
    MutexLock g(reg_mu_);
    allotment = conn->allotment;
  }
  const bool active = hello.channel < allotment;
  uint64_t credit_limit = 0;
  {
    SpinGuard g(ch->mu);  // nobody else sees the channel yet; the lock is for the analysis
    ch->prod = std::make_unique<RingProducer>(ch->resp_ring);
    ch->max_response_entry = MaxEntryData(ch->prod->max_message());
    ch->credit = CreditGranter(opts_.credits, active);
    ch->canary_state = RandomSeed();
    credit_limit = ch->credit.limit();
  }

  Welcome w;
  w.client_id = conn->id;
  w.token = conn->token;
  w.credits = opts_.credits;
  w.active = active;
  w.credit_limit = credit_limit;
  w.request_ring = ch->req_ring;
  w.request_region = *req_desc;
  w.wake_region = *wake_desc;
  // Register before answering: the client may renew credits the moment it has the welcome.
  {
    MutexLock g(reg_mu_);
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
    SpinGuard g(ch->mu);
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
        .kv("active", allotment);
  }
}

}  // namespace rdmq::rpc::internal
