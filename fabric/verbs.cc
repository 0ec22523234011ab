#include "providers.h"

namespace rdmq::fabric::internal {
Result<std::unique_ptr<Fabric>> OpenVerbs(const FabricOptions&) {
  return Status(FabricErrc::kNoDevice, "verbs provider not built yet");
}
}  // namespace rdmq::fabric::internal
