#include "rdmq/bench/system.h"

namespace rdmq::bench {

Result<std::unique_ptr<System>> MakeSystem(const Workload& workload) {
  if (workload.system == "rdmq") return MakeRdmqSystem(workload);
  if (workload.system == "kafka") return MakeKafkaSystem(workload);
  if (workload.system == "mem") return MakeMemSystem(workload);
  if (workload.system == "redis") return MakeRedisSystem(workload);
  if (workload.system == "nats") return MakeNatsSystem(workload);
  return Status(Errc::kInvalidArgument,
                "unknown --system '" + workload.system + "': expected rdmq, kafka, redis, nats or mem");
}

}  // namespace rdmq::bench
