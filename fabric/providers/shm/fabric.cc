// The shm provider's Fabric (docs/fabric.md, "shm"): regions are memfds or files, endpoints are
// Unix-socket bootstrap connections with a mailbox per direction.
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "core.h"
#include "endpoint.h"
#include "fabric/address.h"
#include "fabric/fabric_base.h"
#include "fabric/providers.h"
#include "fabric/socket.h"
#include "rdmq/common/log.h"
#include "region.h"

namespace rdmq::fabric::internal {
namespace {

class ShmFabric final : public ProviderFabric<ShmCore, ShmCq, ShmEpCore> {
 public:
  using ProviderFabric::ProviderFabric;

  Result<std::unique_ptr<Region>> Allocate(size_t size, uint32_t access) override {
    if (size == 0) return Status(Errc::kInvalidArgument, "Allocate of 0 bytes");
    const size_t bytes = RoundUp(size, PageSize());
    auto fds = std::make_shared<RegionFds>();
    RDMQ_ASSIGN_OR_RETURN(fds->rw, CreateMemfd("rdmq-shm-region", bytes));
    RDMQ_ASSIGN_OR_RETURN(Mapping m, MapShared(fds->rw.get(), bytes, 0, true, "shm region"));
    std::byte* data = m.data();
    return Init(std::make_unique<ShmRegion>(core_, std::move(fds), std::move(m), data, size, 0, access));
  }

  Result<std::unique_ptr<Region>> Register(void* addr, size_t size, int fd, uint64_t file_offset,
                                           uint32_t access) override {
    if (addr == nullptr || size == 0) return Status(Errc::kInvalidArgument, "Register: empty range");
    if (fd < 0) {
      return Status(FabricErrc::kRegistration,
                    "shm regions must be file- or memfd-backed: Register needs the fd that `addr` maps");
    }
    if (file_offset % PageSize() != reinterpret_cast<uintptr_t>(addr) % PageSize()) {
      return Status(Errc::kInvalidArgument, "Register: address and file offset differ within the page");
    }
    auto fds = std::make_shared<RegionFds>();
    fds->rw.Reset(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!fds->rw.valid()) return Status::FromErrno(errno, "dup the region fd");
    const int flags = ::fcntl(fds->rw.get(), F_GETFL);
    if (flags < 0) return Status::FromErrno(errno, "read the region fd's flags");
    if ((flags & O_ACCMODE) == O_WRONLY) {
      return Status(FabricErrc::kRegistration,
                    "Register: the fd is write-only; peers must be able to map it for reading");
    }
    fds->rw_is_read_only = (flags & O_ACCMODE) == O_RDONLY;  // no reopen needed for read-only keys
    if (fds->rw_is_read_only && (access & (kRemoteWrite | kRemoteAtomic)) != 0) {
      // Refused here, not when a peer attaches the region and finds it cannot map it writable.
      return Status(FabricErrc::kRegistration,
                    "Register: the fd is read-only but the region grants remote write or atomic access");
    }
    struct stat st;
    if (::fstat(fds->rw.get(), &st) != 0) return Status::FromErrno(errno, "fstat the region fd");
    if (file_offset + size > static_cast<uint64_t>(st.st_size)) {
      return Status(FabricErrc::kOutOfBounds,
                    "Register: range ends beyond the file (" + std::to_string(st.st_size) + " bytes)");
    }
    return Init(std::make_unique<ShmRegion>(core_, std::move(fds), Mapping(), static_cast<std::byte*>(addr),
                                            size, file_offset, access));
  }

  Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t) override {
    RDMQ_ASSIGN_OR_RETURN(auto cq, ShmCq::Create(core_));
    return std::unique_ptr<CompletionQueue>(std::move(cq));
  }

  Result<std::unique_ptr<Endpoint>> Connect(std::string_view address, const EndpointOptions& opts) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    RDMQ_ASSIGN_OR_RETURN(std::string_view path, StripScheme(address, "unix"));
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ConnectUnix(std::string(path), opts.connect_timeout));
    auto ep = std::make_shared<ShmEpCore>(*core_, opts);
    ep->set_peer_node(std::string(address));
    RDMQ_RETURN_IF_ERROR(ep->InitInbound());
    ep->StartConn(core_->agent, std::move(fd), std::string(address), ep);
    Status s = ep->SendShmHello(wire::kFrameHello, RecvBellFd(opts));
    if (s.ok()) s = ep->AwaitPeer();
    return Connected(ep, s, address);
  }

  Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                           std::chrono::nanoseconds timeout) override {
    return AcceptEach(opts, timeout, [&opts](Accepting& a) {
      ShmEpCore& ep = *a.ep;
      Status s = ep.InitInbound();
      if (s.ok()) s = ep.AdoptPeer(a.in.hello, a.in.fds);
      if (!s.ok()) {
        RDMQ_LOG(kWarn, "fabric", "rejecting shm connection").kv("error", s);
        a.in.conn->Close();
        ep.Close();
        return false;
      }
      if (ep.peer_node().empty()) ep.set_peer_node("unix-peer#" + std::to_string(ep.peer_id()));
      if (!ep.TakeOverConn(a.ep)) ep.MarkGone(Status(FabricErrc::kPeerGone, "peer left before accept"));
      if (ep.SendShmHello(wire::kFrameHelloAck, RecvBellFd(opts)).ok()) return true;
      ep.Close();
      return false;
    });
  }

 private:
  static int RecvBellFd(const EndpointOptions& o) {
    return o.recv_cq != nullptr ? static_cast<ShmCq*>(o.recv_cq)->bell_fd() : -1;
  }
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenShm(const FabricOptions& options) {
  return ShmFabric::Open<ShmFabric>(options);
}

}  // namespace rdmq::fabric::internal
