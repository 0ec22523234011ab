#include "endpoint_base.h"

#include "rdmq/common/coding.h"

namespace rdmq::fabric::internal {

uint64_t NextEndpointId() noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

EndpointCore::EndpointCore(Provider provider, const EndpointOptions& o)
    : id_(NextEndpointId()),
      provider_(provider),
      timeout_(o.connect_timeout),
      max_send_(o.max_send_wr),
      max_recv_(o.max_recv_wr) {}

void EndpointCore::StartConn(Agent& agent, UniqueFd fd, std::string peer, std::shared_ptr<ConnHandler> self,
                             std::unique_ptr<TlsSession> tls) {
  peer_node_ = peer;
  conn_ = Conn::Create(agent, std::move(fd), std::move(peer), std::move(tls));
  conn_->Start(std::move(self));
}

bool EndpointCore::TakeOverConn(std::shared_ptr<ConnHandler> self) {
  peer_identity_ = conn_->peer_identity();  // (the hello came after the TLS handshake)
  conn_->SetHandler(std::move(self));
  return !conn_->closed();
}

wire::Hello EndpointCore::MakeHello(const std::string& node) const {
  wire::Hello h;
  h.endpoint_id = id_;
  h.node = node;
  return h;
}

Status EndpointCore::SendHello(uint8_t frame_type, const wire::Hello& h, std::span<const int> fds) {
  const std::string hello = wire::EncodeHello(h);
  iovec v{const_cast<char*>(hello.data()), hello.size()};
  return conn_->Send(frame_type, 0, std::span<const iovec>(&v, 1), fds);
}

Result<wire::Hello> EndpointCore::AwaitHelloAck(std::vector<UniqueFd>* fds) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  UniqueLock l(mu_);
  while (!handshake_done_ && handshake_.ok() && alive()) {
    if (!cv_.WaitUntil(l, deadline)) break;
  }
  if (!handshake_.ok()) return handshake_;
  if (!handshake_done_) {
    const std::string name(ProviderName(provider_));
    if (!alive() && gone_reason_.is(FabricErrc::kTls)) return gone_reason_.WithContext(name + " connect");
    if (!alive()) return Status(FabricErrc::kPeerGone, name + " connect: the acceptor closed the connection");
    return Status(Errc::kTimeout, name + " connect: no answer (is anyone calling Accept?)");
  }
  if (fds != nullptr) *fds = std::move(hello_fds_);
  peer_identity_ = conn_->peer_identity();
  return hello_;
}

bool EndpointCore::OnCommonFrame(uint8_t type, std::span<const std::byte> payload,
                                 std::vector<UniqueFd>& fds) {
  switch (type) {
    case wire::kFrameControl: {
      MutexLock l(mu_);
      control_.emplace_back(coding::AsChars(payload));
      cv_.NotifyAll();
      return true;
    }
    case wire::kFrameHelloAck: {
      MutexLock l(mu_);
      auto h = wire::DecodeHello(payload);
      if (h.ok()) {
        hello_ = std::move(h).value();
        hello_fds_ = std::move(fds);
        handshake_done_ = true;
      } else {
        handshake_ = h.status();
      }
      cv_.NotifyAll();
      return true;
    }
    default:
      return false;
  }
}

Status EndpointCore::SendControl(std::span<const std::byte> message) {
  if (message.size() > (1u << 20)) return Status(Errc::kInvalidArgument, "control message longer than 1 MiB");
  if (!alive()) return Gone();
  return conn_->Send(wire::kFrameControl, 0, message);
}

Result<std::string> EndpointCore::RecvControl(std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  UniqueLock l(mu_);
  while (control_.empty() && alive()) {
    if (!cv_.WaitUntil(l, deadline)) break;
  }
  if (!control_.empty()) {
    std::string m = std::move(control_.front());
    control_.pop_front();
    return m;
  }
  if (!alive()) return Gone();
  return Status(Errc::kTimeout, "no control message from " + peer_node_);
}

void EndpointCore::MarkGone(const Status& why) {
  if (!Retire()) return;
  {
    MutexLock l(mu_);
    gone_reason_ = why;
    cv_.NotifyAll();
  }
  AfterGone();
}

void EndpointCore::Close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  if (conn_) {
    conn_->ClearHandler();
    conn_->Close();
  }
  MarkGone(Status(FabricErrc::kPeerGone, "endpoint closed locally"));
  AfterClose();
}

Status EndpointCore::CheckAttachable(const RegionDescriptor& d) const {
  if (d.provider == provider_) return Status::Ok();
  return Status(FabricErrc::kWrongProvider, "descriptor of provider " +
                                                std::string(ProviderName(d.provider)) + " on a " +
                                                std::string(ProviderName(provider_)) + " endpoint");
}

Status EndpointCore::Gone() const {
  return Status(FabricErrc::kPeerGone, std::string(ProviderName(provider_)) + " endpoint to " + peer_node_);
}

}  // namespace rdmq::fabric::internal
