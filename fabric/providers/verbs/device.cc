#include "device.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "cm.h"
#include "fabric/address.h"
#include "fabric/socket.h"

namespace rdmq::fabric::internal {

VerbsCore::~VerbsCore() {
  agent.Stop();
  MutexLock l(cm_mu);
  for (auto& [token, id] : stashed_requests) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
  }
}

Status VerbsCore::Init(const FabricOptions& o) {
  RDMQ_RETURN_IF_ERROR(OpenDevice(o.device));
  if (o.listen.empty()) return Status::Ok();
  RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(DropScheme(o.listen, "verbs")));
  ip = hp.host.empty() ? DeviceIpv4() : hp.host;
  if (ip.empty()) {
    return Status(FabricErrc::kNoDevice, "device " + device_name + " port " + std::to_string(port) +
                                             " has no IPv4 GID; give FabricOptions.listen an address");
  }
  std::string bound;
  RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ListenTcp(ip, hp.port, &bound));
  Listen(std::move(fd), "verbs:" + bound);
  return ListenCm();
}

Status VerbsCore::OpenDevice(const std::string& wanted_device) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  const std::string wanted =
      wanted_device.empty() ? "any device with an active port" : "device '" + wanted_device + "'";
  if (list == nullptr || n == 0) {
    return Status(FabricErrc::kNoDevice,
                  "ibv_get_device_list found no RDMA device (looked for " + wanted +
                      "; load rdma_rxe and run deploy/softroce.sh, or use fabric=shm|tcp)");
  }
  int nctx = 0;
  devices.reset(rdma_get_devices(&nctx));
  if (!devices || nctx == 0) {
    return Status(FabricErrc::kNoDevice, "rdma_get_devices found no device (" + wanted + ")");
  }
  for (int i = 0; i < nctx && ctx == nullptr; ++i) {
    ibv_context* c = devices.get()[i];
    const std::string name = ibv_get_device_name(c->device);
    if (!wanted_device.empty() && name != wanted_device) continue;
    ibv_device_attr a{};
    if (ibv_query_device(c, &a) != 0) continue;
    for (uint8_t p = 1; p <= a.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (ibv_query_port(c, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
        ctx = c;
        port = p;
        attr = a;
        device_name = name;
        break;
      }
    }
  }
  if (ctx == nullptr) {
    return Status(FabricErrc::kNoDevice, "no " + wanted + " among " + std::to_string(nctx) + " RDMA devices");
  }
  pd.reset(ibv_alloc_pd(ctx));
  if (!pd) return CmError("ibv_alloc_pd on " + device_name);
  has_mw = (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0 ||
           (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A) != 0;
  return Status::Ok();
}

Status VerbsCore::ListenCm() {
  RDMQ_ASSIGN_OR_RETURN(listen_id, CreateCmId(listen_channel));
  rdma_cm_id* id = listen_id.get();
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ip.c_str(), &sin.sin_addr) != 1) {
    return Status(Errc::kInvalidArgument, "verbs listen address '" + ip + "' is not an IPv4 address");
  }
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&sin)) != 0) return CmError("rdma_bind_addr " + ip);
  if (rdma_listen(id, 64) != 0) return CmError("rdma_listen on " + ip);
  cm_port = ntohs(rdma_get_src_port(id));
  if (id->verbs != nullptr && id->verbs != ctx) {
    return Status(FabricErrc::kNoDevice, ip + " belongs to device " + ibv_get_device_name(id->verbs->device) +
                                             ", not " + device_name);
  }
  return Status::Ok();
}

std::string VerbsCore::DeviceIpv4() const {
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa) != 0) return "";
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid gid{};
    if (ibv_query_gid(ctx, port, i, &gid) != 0) continue;
    static const uint8_t kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(gid.raw, kV4Prefix, 12) == 0) {
      char b[INET_ADDRSTRLEN];
      ::inet_ntop(AF_INET, gid.raw + 12, b, sizeof b);
      return b;
    }
  }
  return "";
}

}  // namespace rdmq::fabric::internal
