// What the providers' Fabric classes share: the fabric core (`Core`, a FabricCore with Init),
// the address and provider, the check of EndpointOptions against the provider's completion
// queues (`Cq`), region initialisation, and handing a connected endpoint core (`EpCore`, with
// Register and Close) to the application.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "address.h"
#include "checks.h"
#include "endpoint_base.h"
#include "listener.h"
#include "posix.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "socket.h"

namespace rdmq::fabric::internal {

template <class Core, class Cq, class EpCore>
class ProviderFabric : public Fabric {
 public:
  explicit ProviderFabric(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  Provider provider() const noexcept final { return core_->provider(); }
  std::string address() const final { return core_->address; }

  // A `Derived` fabric on a core initialised from `options` (the provider's Open function).
  template <class Derived>
  static Result<std::unique_ptr<Fabric>> Open(const FabricOptions& options) {
    auto core = std::make_shared<Core>();
    RDMQ_RETURN_IF_ERROR(core->Init(options));
    return std::unique_ptr<Fabric>(new Derived(std::move(core)));
  }

 protected:
  using Handle = EndpointHandle<EpCore, Core>;

  Status CheckOptions(const EndpointOptions& o) const {
    return CheckEndpointCqs<Cq>(o, ProviderName(core_->provider()).data());
  }
  // Registers a new region (its Init) and hands it out.
  template <class R>
  static Result<std::unique_ptr<Region>> Init(std::unique_ptr<R> r) {
    RDMQ_RETURN_IF_ERROR(r->Init());
    return std::unique_ptr<Region>(std::move(r));
  }
  // The start of each round of Accept: the next accepted connection whose hello arrived (up to
  // `timeout`) and a new endpoint core on it.
  struct Accepting {
    AcceptQueue::Incoming in;
    std::shared_ptr<EpCore> ep;
  };
  Result<Accepting> NextAccepting(const EndpointOptions& opts, std::chrono::nanoseconds timeout) const {
    RDMQ_ASSIGN_OR_RETURN(AcceptQueue::Incoming in, core_->NextIncoming(timeout));
    auto ep = std::make_shared<EpCore>(*core_, opts);
    ep->set_conn(in.conn);
    return Accepting{std::move(in), std::move(ep)};
  }
  // Accept as shm and tcp do it: each connection whose hello arrived within `timeout` gets
  // `admit(accepting)`; true hands the endpoint out, false (it closed the endpoint) waits for the
  // next one.
  template <class Admit>
  Result<std::unique_ptr<Endpoint>> AcceptEach(const EndpointOptions& opts, std::chrono::nanoseconds timeout,
                                               Admit&& admit) const {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    for (;;) {
      RDMQ_ASSIGN_OR_RETURN(Accepting a, NextAccepting(opts, timeout));
      if (admit(a)) return Accepted(a.ep);
    }
  }
  // The start of Connect on a TCP bootstrap (tcp, verbs): a new endpoint core whose bootstrap
  // connection to `address` ("<provider>:host:port") is open and read (inside TLS when the
  // fabric has it, verifying the server against the host); the host goes to `host`.
  Result<std::shared_ptr<EpCore>> DialTcp(std::string_view address, const EndpointOptions& opts,
                                          std::string* host) const {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    RDMQ_ASSIGN_OR_RETURN(std::string_view rest, StripScheme(address, ProviderName(core_->provider())));
    RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(rest));
    std::unique_ptr<TlsSession> tls;
    if (core_->tls) {
      RDMQ_ASSIGN_OR_RETURN(tls, core_->tls->NewClient(hp.host));
    }
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(hp.host, hp.port, opts.connect_timeout));
    auto ep = std::make_shared<EpCore>(*core_, opts);
    ep->StartConn(core_->agent, std::move(fd), std::string(address), ep, std::move(tls));
    *host = std::move(hp.host);
    return ep;
  }
  // The end of Connect: with `s` OK the endpoint registers with its queues and is handed out
  // (its peer named `address`); otherwise it closes and `s` is returned with context.
  Result<std::unique_ptr<Endpoint>> Connected(const std::shared_ptr<EpCore>& ep, const Status& s,
                                              std::string_view address) const {
    if (!s.ok()) {
      ep->Close();
      return s.WithContext(std::string(ProviderName(core_->provider())) + " connect to " +
                           std::string(address));
    }
    ep->Register();
    return std::unique_ptr<Endpoint>(new Handle(core_, ep, std::string(address)));
  }
  // The end of Accept: the endpoint registers with its queues and is handed out.
  std::unique_ptr<Endpoint> Accepted(const std::shared_ptr<EpCore>& ep) const {
    ep->Register();
    return std::unique_ptr<Endpoint>(new Handle(core_, ep, ep->peer_node()));
  }

  const std::shared_ptr<Core> core_;
};

// A ProviderFabric whose regions (`R`) are plain memory (tcp, verbs): Allocate maps anonymous
// pages, Register takes the caller's range. `R` is constructed from (core, owned mapping, data,
// size, access, the file's fd or -1).
template <class Core, class Cq, class EpCore, class R>
class MemoryFabric : public ProviderFabric<Core, Cq, EpCore> {
 public:
  using ProviderFabric<Core, Cq, EpCore>::ProviderFabric;

  Result<std::unique_ptr<Region>> Allocate(size_t size, uint32_t access) final {
    if (size == 0) return Status(Errc::kInvalidArgument, "Allocate of 0 bytes");
    RDMQ_ASSIGN_OR_RETURN(Mapping m, MapAnonymous(RoundUp(size, PageSize())));
    std::byte* data = m.data();
    return this->Init(std::make_unique<R>(this->core_, std::move(m), data, size, access, -1));
  }
  Result<std::unique_ptr<Region>> Register(void* addr, size_t size, int fd, uint64_t, uint32_t access) final {
    if (addr == nullptr || size == 0) return Status(Errc::kInvalidArgument, "Register: empty range");
    return this->Init(
        std::make_unique<R>(this->core_, Mapping(), static_cast<std::byte*>(addr), size, access, fd));
  }
};

}  // namespace rdmq::fabric::internal
