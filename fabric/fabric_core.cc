#include "fabric_core.h"

namespace rdmq::fabric::internal {

FabricCore::FabricCore(Provider provider, std::string agent_name)
    : agent(std::move(agent_name)), provider_(provider) {}

FabricCore::~FabricCore() { agent.Stop(); }

void FabricCore::Listen(UniqueFd listen_fd, std::string bootstrap_address) {
  address = std::move(bootstrap_address);
  listener_ = Listener::Start(agent, std::move(listen_fd), [this](UniqueFd fd, std::string peer) {
    accepts.OnAccept(std::move(fd), std::move(peer));
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
