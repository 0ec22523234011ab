#include "rdmq/bench/system.h"

namespace rdmq::bench {

Result<std::unique_ptr<System>> MakeSystem(const Workload& workload) {
  if (workload.system == "mem") return MakeMemSystem(workload);
  return Status(Errc::kInvalidArgument,
                "unknown --system '" + workload.system + "': expected rdmq, redis, nats or mem");
}

}  // namespace rdmq::bench
