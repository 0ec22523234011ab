#include "providers.h"

namespace rdmq::fabric::internal {
Result<std::unique_ptr<Fabric>> OpenTcp(const FabricOptions&) {
  return Status(Errc::kUnsupported, "tcp provider not built yet");
}
}  // namespace rdmq::fabric::internal
