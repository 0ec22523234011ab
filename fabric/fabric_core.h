// What every provider's fabric state shares: the agent thread, the bootstrap listener, the queue
// of accepted connections waiting for Accept, and the fabric's bootstrap address.
//
// Threading: thread-safe after Listen. A provider's core derives from FabricCore and stops the
// agent first thing in its destructor (agent callbacks use the derived members).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "agent.h"
#include "conn.h"
#include "listener.h"
#include "posix.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "tls.h"

namespace rdmq::fabric::internal {

class FabricCore {
 public:
  FabricCore(Provider provider, std::string agent_name);
  ~FabricCore();  // stops the agent (again: the derived core already did)
  FabricCore(const FabricCore&) = delete;
  FabricCore& operator=(const FabricCore&) = delete;

  // Serves `listen_fd` on the agent: accepted connections wait in the accept queue. `address`
  // becomes this fabric's bootstrap address. Call once, from the core's Init.
  void Listen(UniqueFd listen_fd, std::string address);
  // The next accepted connection whose hello arrived, waiting up to `timeout`:
  // kFailedPrecondition when the fabric does not listen, kTimeout when none came.
  Result<AcceptQueue::Incoming> NextIncoming(std::chrono::nanoseconds timeout);

  Provider provider() const noexcept { return provider_; }

  Agent agent;
  AcceptQueue accepts{agent};
  std::string address;  // "unix:<path>", "tcp:host:port", "verbs:ip:port", or "" if not listening
  // TLS on every connection (tcp with TlsOptions.enabled; set by Init before Listen), else null.
  std::shared_ptr<const TlsContext> tls;

 private:
  const Provider provider_;
  std::shared_ptr<Listener> listener_;
};

}  // namespace rdmq::fabric::internal
