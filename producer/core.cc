// Core (core.h): setup, Flush, Close.
#include "producer/core.h"

#include "rdmq/common/log.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

using protocol::Api;

Core::Core(ProducerConfig cfg) : cfg_(std::move(cfg)), topics_(cfg_.mode, cfg_.delivery_timeout) {}

Status Core::Init() {
  if (cfg_.batch_size < 128) {
    return Status(Errc::kInvalidArgument,
                  "batch.size=" + std::to_string(cfg_.batch_size) + ": must be at least 128");
  }
  client::ConnectionOptions co;
  co.max_recv_wr = 1024;
  co.max_send_wr = 1024;
  RDMQ_ASSIGN_OR_RETURN(conn_, client::Connection::Open(cfg_.client, co));
  const size_t chunk_size = (std::max<size_t>(cfg_.batch_size, size_t{64} * 1024) + 4095) & ~size_t{4095};
  RDMQ_RETURN_IF_ERROR(
      arena_.Init(conn_->fabric(), chunk_size, std::max<size_t>(4, cfg_.buffer_memory / chunk_size)));
  RDMQ_ASSIGN_OR_RETURN(acks_, conn_->fabric().Allocate(kScratchOffset + uint64_t{kMaxPartitions} * 64,
                                                        fabric::kLocalWrite | fabric::kRemoteWrite));
  RDMQ_RETURN_IF_ERROR(data_.Init(conn_.get(), cfg_.client.request_timeout, &closing_));
  if (cfg_.enable_idempotence && !shared_identity_) {
    RDMQ_ASSIGN_OR_RETURN(
        auto id, (conn_->Call<protocol::InitProducerIdResponse>(Api::kInitProducerId, protocol::Empty{})));
    producer_id_ = ProducerId(id.producer_id);
    producer_epoch_ = id.producer_epoch;
  }
  topics_.Init(conn_.get(), conn_->hello().max_message_bytes);
  backoff_ =
      std::make_unique<client::Backoff>(cfg_.client.reconnect_backoff, cfg_.client.reconnect_backoff_max);
  io_ = std::thread([this] { IoLoop(); });
  return Status::Ok();
}

Core::~Core() {
  closing_.store(true);
  io_cv_.NotifyAll();
  if (io_.joinable()) io_.join();
  have_retired_.store(true);
  DropRetiredRemotes();
  // Close (or a failed Init) left nothing outstanding; what is left is dropped without callbacks.
  for (PState* ps : topics_.Partitions()) {
    BiasedLock lock(ps->mu);
    ps->lease.remote.reset();
    ps->read_segs.clear();
    ps->lease.ack_grant.reset();
    ps->tracker.FailAll(Status(Errc::kCancelled, "the producer is gone"));
    std::vector<Completion> left;
    ps->tracker.TakeCompletions(left);
    for (const Completion& c : left) delete static_cast<Batch*>(c.batch);
    delete ps->open_batch;
    ps->open_batch = nullptr;
  }
}

Result<int32_t> Core::PartitionCount(std::string_view topic) {
  RDMQ_ASSIGN_OR_RETURN(TopicState * t, topics_.Get(topic));
  return t->partitions;
}

void Core::NotifySleepers() {
  if (sleepers_.load(std::memory_order_acquire) != 0) {
    MutexLock lock(wait_mu_);
    wait_cv_.NotifyAll();
  }
}

Status Core::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::vector<PState*> parts = topics_.Partitions();
  for (PState* ps : parts) {
    PLock lock(this, *ps);
    Seal(*ps);
    PostSealed(*ps);
  }
  if (!WaitFor([&] { return unacked_.load(std::memory_order_acquire) == 0; }, deadline)) {
    return Status(Errc::kTimeout, std::to_string(unacked_.load()) + " batches still unacknowledged after " +
                                      std::to_string(timeout.count()) + " ms");
  }
  return failures_.Take();
}

Status Core::Close(std::chrono::milliseconds timeout) {
  if (closed_.exchange(true)) return Status(Errc::kFailedPrecondition, "the producer is already closed");
  Status s = Flush(timeout);
  const std::vector<PState*> parts = topics_.Partitions();
  for (PState* ps : parts) {
    PLock lock(this, *ps);
    if (ps->lease.open) {
      (void)conn_->Call<protocol::Empty>(Api::kReleaseLease, protocol::LeaseRequest{ps->lease.id, 0});
      ps->lease.open = false;
    }
    FailAll(*ps, Status(Errc::kCancelled, "the producer closed before the record was acknowledged"));
  }
  closing_.store(true);
  io_cv_.NotifyAll();
  if (io_.joinable() && io_.get_id() != std::this_thread::get_id()) io_.join();
  // Nothing is outstanding any more: let go of the broker now, even while futures live on.
  for (PState* ps : parts) {
    BiasedLock lock(ps->mu);
    MutexLock plock(data_.post_mu());
    ps->lease.remote.reset();
    ps->read_segs.clear();
    ps->lease.ack_grant.reset();
  }
  conn_.reset();
  return s;
}

}  // namespace rdmq::producer
