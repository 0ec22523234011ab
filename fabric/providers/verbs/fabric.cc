// The verbs provider's Fabric (docs/fabric.md, "verbs"): rdma-core RC queue pairs set up with
// librdmacm, MRs, type-2 memory windows for grants.
#include <algorithm>
#include <string>

#include "cq.h"
#include "device.h"
#include "endpoint.h"
#include "fabric/fabric_base.h"
#include "fabric/providers.h"
#include "memory.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {
namespace {

class VerbsFabric final : public MemoryFabric<VerbsCore, VerbsCq, VerbsEpCore, VerbsRegion> {
 public:
  using MemoryFabric::MemoryFabric;

  Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t depth) override {
    RDMQ_ASSIGN_OR_RETURN(auto q, VerbsCq::Create(core_, depth));
    return std::unique_ptr<CompletionQueue>(std::move(q));
  }

  Result<std::unique_ptr<Endpoint>> Connect(std::string_view address, const EndpointOptions& opts) override {
    std::string host;
    RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<VerbsEpCore> ep, DialTcp(address, opts, &host));
    return Connected(ep, ep->ConnectQp(host), address);
  }

  Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                           std::chrono::nanoseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(std::max<int64_t>(0, timeout.count()));
    for (;;) {
      const uint64_t now = MonoNanos();
      RDMQ_ASSIGN_OR_RETURN(
          Accepting a, NextAccepting(opts, std::chrono::nanoseconds(deadline > now ? deadline - now : 0)));
      const std::shared_ptr<VerbsEpCore>& ep = a.ep;
      ep->set_peer_node("verbs:" + a.in.conn->peer());
      if (!ep->TakeOverConn(ep)) {
        ep->Close();
        continue;
      }
      Status s = ep->AcceptQp(opts.connect_timeout);
      if (s.ok()) return Accepted(ep);
      RDMQ_LOG(kWarn, "fabric", "verbs accept failed").kv("peer", ep->peer_node()).kv("error", s);
      ep->Close();
      if (MonoNanos() >= deadline) return s;
    }
  }
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenVerbs(const FabricOptions& options) {
  return VerbsFabric::Open<VerbsFabric>(options);
}

}  // namespace rdmq::fabric::internal
