#include "core.h"

#include <string>
#include <string_view>

#include "fabric/address.h"
#include "fabric/socket.h"

namespace rdmq::fabric::internal {

Status TcpCore::Init(const FabricOptions& o) {
  if (o.tls.enabled) {
    RDMQ_ASSIGN_OR_RETURN(tls, TlsContext::Create(o.tls, !o.listen.empty()));
  }
  if (o.listen.empty()) return Status::Ok();
  RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(DropScheme(o.listen, "tcp")));
  std::string bound;
  RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ListenTcp(hp.host, hp.port, &bound));
  Listen(std::move(fd), "tcp:" + bound);
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
