// The tcp provider's Fabric (docs/fabric.md, "tcp"): a software NIC on hosts without RDMA.
#include <string>

#include "core.h"
#include "endpoint.h"
#include "fabric/fabric_base.h"
#include "fabric/providers.h"

namespace rdmq::fabric::internal {
namespace {

class TcpFabric final : public MemoryFabric<TcpCore, TcpCq, TcpEpCore, TcpRegion> {
 public:
  using MemoryFabric::MemoryFabric;

  Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t) override {
    return std::unique_ptr<CompletionQueue>(new TcpCq(core_));
  }

  Result<std::unique_ptr<Endpoint>> Connect(std::string_view address, const EndpointOptions& opts) override {
    std::string host;
    RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<TcpEpCore> ep, DialTcp(address, opts, &host));
    Status s = ep->SendHello(wire::kFrameHello, ep->MakeHello(core_->address));
    // A connection whose TLS handshake failed before the hello went out says why there.
    if (s.ok() || s.is(FabricErrc::kPeerGone)) s = ep->AwaitHelloAck().status();
    return Connected(ep, s, address);
  }

  Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                           std::chrono::nanoseconds timeout) override {
    return AcceptEach(opts, timeout, [this](Accepting& a) {
      TcpEpCore& ep = *a.ep;
      ep.set_peer_node("tcp:" + a.in.conn->peer());
      if (!ep.TakeOverConn(a.ep)) ep.MarkGone(Status(FabricErrc::kPeerGone, "peer left before accept"));
      if (ep.SendHello(wire::kFrameHelloAck, ep.MakeHello(core_->address)).ok()) return true;
      ep.Close();
      return false;
    });
  }
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenTcp(const FabricOptions& options) {
  return TcpFabric::Open<TcpFabric>(options);
}

}  // namespace rdmq::fabric::internal
