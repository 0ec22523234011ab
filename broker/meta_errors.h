// MetadataToWire: a metadata store error as the RPC protocol's wire error (docs/protocol.md,
// section 2), with the store's message; anything unexpected is STORAGE_ERROR.
#pragma once

#include "rdmq/common/status.h"

namespace rdmq::broker::internal {

Status MetadataToWire(const Status& s);

}  // namespace rdmq::broker::internal
