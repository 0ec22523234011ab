// Entry points of the providers, used by Fabric::Open.
#pragma once

#include <memory>

#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

Result<std::unique_ptr<Fabric>> OpenShm(const FabricOptions& options);
Result<std::unique_ptr<Fabric>> OpenTcp(const FabricOptions& options);
Result<std::unique_ptr<Fabric>> OpenVerbs(const FabricOptions& options);

}  // namespace rdmq::fabric::internal
