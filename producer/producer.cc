// Producer (producer.h): batches built in place in registered memory, written into the
// partition's segment with one WRITE_WITH_IMM per batch (exclusive mode) or reserved with
// FETCH_ADD, written and committed with the Commit RPC (shared mode); docs/protocol.md §4-5.
// This file is the public facade; the engine is Core (core.h, which lists its files).
#include "rdmq/producer/producer.h"

#include "producer/cluster_producer.h"
#include "producer/core.h"
#include "producer/future.h"

namespace rdmq::producer {

namespace {

class ProducerImpl final : public Producer {
 public:
  explicit ProducerImpl(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  ~ProducerImpl() override {
    if (!core_->closed()) (void)core_->Close(core_->config().delivery_timeout);
  }
  SendFuture Send(const ProducerRecord& record) override {
    SendFuture f;
    Status s = core_->Send(record, nullptr, &f);
    if (!s.ok()) return FailedFuture(std::move(s));
    return f;  // moved (a conditional expression would copy it: a reference count up and down)
  }
  Status Send(const ProducerRecord& record, SendCallback callback) override {
    return core_->Send(record, &callback, nullptr);
  }
  Status Flush(std::chrono::milliseconds timeout) override { return core_->Flush(timeout); }
  Status Close(std::chrono::milliseconds timeout) override { return core_->Close(timeout); }
  Result<int32_t> PartitionCount(std::string_view topic) override { return core_->PartitionCount(topic); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

Result<std::unique_ptr<Producer>> Producer::Create(const ProducerConfig& config) {
  auto core = std::make_shared<Core>(config);
  RDMQ_RETURN_IF_ERROR(core->Init());
  // A broker of a cluster leads only some partitions: route each record to its leader.
  auto cluster = core->connection().Call<protocol::DescribeClusterResponse>(protocol::Api::kDescribeCluster,
                                                                            protocol::Empty{});
  if (cluster.ok() && cluster->clustered != 0) return MakeClusterProducer(config, std::move(core), *cluster);
  return std::unique_ptr<Producer>(new ProducerImpl(std::move(core)));
}

}  // namespace rdmq::producer
