// The process's own resource use in the names every Prometheus client library exports
// (process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds), read from /proc/self.
#pragma once

#include "rdmq/metrics/exposition.h"

namespace rdmq::metrics {

// Appends the process_* families. A value /proc does not give is left out, not made up.
void WriteProcessMetrics(Exposition& e);

}  // namespace rdmq::metrics
