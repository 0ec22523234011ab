// Internals of partition inspection, exposed for the fuzz target and tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "rdmq/cli/inspect.h"

namespace rdmq::cli {

// Inspects one segment file's bytes (the whole file) named `name` with base offset `base`,
// appending a SegmentDump and any problems and notes to `dump`. Uses the slot fields already in
// `dump` to find the active segment's committed end.
void InspectSegmentBytes(std::span<const std::byte> file, const std::string& name, int64_t base,
                         const InspectOptions& options, PartitionDump* dump);

}  // namespace rdmq::cli
