#include "fabric_core.h"

#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

FabricCore::FabricCore(Provider provider, std::string agent_name)
    : agent(std::move(agent_name)), provider_(provider) {}

FabricCore::~FabricCore() { agent.Stop(); }

void FabricCore::Listen(UniqueFd listen_fd, std::string bootstrap_address) {
  address = std::move(bootstrap_address);
  listener_ = Listener::Start(agent, std::move(listen_fd), [this](UniqueFd fd, std::string peer) {
    std::unique_ptr<TlsSession> session;
    if (tls) {
      auto s = tls->NewServer();
      if (!s.ok()) {
        RDMQ_LOG(kError, "fabric", "no TLS session for a new connection; closing it")
            .kv("peer", peer)
            .kv("error", s.status());
        return;
      }
      session = std::move(s).value();
    }
    accepts.OnAccept(std::move(fd), std::move(peer), std::move(session));
  });
}

Result<AcceptQueue::Incoming> FabricCore::NextIncoming(std::chrono::nanoseconds timeout) {
  const std::string name(ProviderName(provider_));
  if (!listener_)
    return Status(Errc::kFailedPrecondition, "Accept on a " + name + " fabric that does not listen");
  auto in = accepts.Next(timeout);
  if (!in) return Status(Errc::kTimeout, "no incoming " + name + " connection on " + address);
  return std::move(*in);
}

}  // namespace rdmq::fabric::internal
