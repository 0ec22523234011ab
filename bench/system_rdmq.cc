// "rdmq": rdmq itself through its C++ clients (rdmq::producer, rdmq::consumer, rdmq::client).
// Setup recreates the topic with the workload's partitions and durability through the
// AdminClient. Producers send each record to its partition and keep its SendFuture in a ring
// of the records in flight; polling waits on the oldest future, which makes the producer poll
// its data endpoint in the calling thread (no hand-off to its I/O thread for the ack).
// Consumers are assigned their partitions from the beginning and poll; on shm they parse the
// log in place.
// With --start-broker (Workload::start_broker) the backend starts `rdmq-broker` itself
// (BrokerProcess) and stops it in Cleanup; every client reads the broker's control address from
// <data dir>/rdmq.addr, which the broker writes once it serves.
#include "broker_process.h"
#include "rdmq/bench/system.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/clock.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

namespace rdmq::bench {
namespace {

using namespace std::chrono_literals;

class RdmqProducer final : public ProducerClient {
 public:
  RdmqProducer(const Workload& w, AckSink* sink) : topic_(w.topic), sink_(sink), ring_(w.window + 1) {
    acked_tags_.reserve(ring_.size());
  }

  Status Open(const producer::ProducerConfig& cfg) {
    RDMQ_ASSIGN_OR_RETURN(producer_, producer::Producer::Create(cfg));
    return Status::Ok();
  }

  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override {
    if (count_ == ring_.size()) RDMQ_RETURN_IF_ERROR(Poll(std::chrono::seconds(120)));  // driver keeps below
    producer::ProducerRecord r;
    r.topic = topic_;
    r.partition = partition;
    r.value = std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size());
    producer::SendFuture f = producer_->Send(r);
    if (!f.valid()) return Status(Errc::kInternal, "rdmq: Send returned no future");
    Slot& slot = ring_[(head_ + count_) % ring_.size()];
    slot.future = std::move(f);
    slot.tag = tag;
    ++count_;
    return Status::Ok();
  }

  // Delivers the acknowledged records at the front; when there are none, waits on the oldest
  // record's future, which drives the producer's progress in this thread (it polls the data
  // endpoint itself, spinning briefly before it sleeps), so an ack is seen without a thread
  // hand-off.
  Status Poll(std::chrono::microseconds timeout) override {
    if (DeliverReady() != 0 || count_ == 0 || timeout.count() == 0) return Status::Ok();
    ring_[head_].future.wait_for(timeout);
    DeliverReady();
    return Status::Ok();
  }

  Status Flush(std::chrono::milliseconds timeout) override {
    Status s = producer_->Flush(timeout);
    const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(std::chrono::nanoseconds(timeout).count());
    while (count_ != 0 && MonoNanos() < deadline) RDMQ_RETURN_IF_ERROR(Poll(std::chrono::milliseconds(10)));
    if (!s.ok()) return s;
    if (count_ != 0)
      return Status(Errc::kTimeout, "rdmq: " + std::to_string(count_) + " records unacknowledged");
    return Status::Ok();
  }

  ~RdmqProducer() override {
    if (producer_) (void)producer_->Close(5000ms);
  }

 private:
  struct Slot {
    producer::SendFuture future;
    uint64_t tag = 0;
  };

  // Acks complete in order within a partition; the front is checked, so a later partition's
  // ack waits behind an earlier partition's (at most one batch). The acknowledged run at the
  // front goes to the sink as one group (one clock reading in the driver).
  size_t DeliverReady() {
    size_t n = 0;
    acked_tags_.clear();
    while (count_ != 0 && ring_[head_].future.ready()) {
      Slot& slot = ring_[head_];
      const Result<producer::RecordMetadata> md = slot.future.get();
      if (md.ok()) {
        acked_tags_.push_back(slot.tag);
      } else {
        sink_->OnAcks(acked_tags_, Status::Ok());
        acked_tags_.clear();
        sink_->OnAck(slot.tag, md.status());
      }
      slot.future = producer::SendFuture();
      head_ = (head_ + 1) % ring_.size();
      --count_;
      ++n;
    }
    sink_->OnAcks(acked_tags_, Status::Ok());
    return n;
  }

  std::string topic_;
  AckSink* sink_;
  std::vector<Slot> ring_;            // records in flight, oldest at head_
  std::vector<uint64_t> acked_tags_;  // DeliverReady's group (capacity: the ring's)
  size_t head_ = 0;
  size_t count_ = 0;
  std::unique_ptr<producer::Producer> producer_;  // last: closed first
};

class RdmqConsumer final : public ConsumerClient {
 public:
  explicit RdmqConsumer(RecordSink* sink) : sink_(sink) {}

  Status Open(const consumer::ConsumerConfig& cfg, const std::string& topic,
              const std::vector<int>& partitions) {
    RDMQ_ASSIGN_OR_RETURN(consumer_, consumer::Consumer::Create(cfg));
    std::vector<client::TopicPartition> tps;
    tps.reserve(partitions.size());
    for (int p : partitions) tps.push_back({topic, p});
    RDMQ_RETURN_IF_ERROR(consumer_->Assign(tps));
    return consumer_->SeekToBeginning(tps);
  }

  Status Poll(std::chrono::milliseconds timeout) override {
    RDMQ_ASSIGN_OR_RETURN(std::vector<consumer::ConsumerRecord> records, consumer_->Poll(timeout));
    // Hand runs of records of one partition to the sink at once.
    size_t i = 0;
    while (i < records.size()) {
      const int partition = records[i].partition;
      views_.clear();
      for (; i < records.size() && records[i].partition == partition; ++i) {
        const std::string_view v = records[i].value.value_or(std::string_view());
        views_.emplace_back(reinterpret_cast<const std::byte*>(v.data()), v.size());
      }
      sink_->OnRecords(partition, views_);
    }
    return Status::Ok();
  }

  ~RdmqConsumer() override {
    if (consumer_) consumer_->Close();
  }

 private:
  RecordSink* sink_;
  std::vector<std::span<const std::byte>> views_;
  std::unique_ptr<consumer::Consumer> consumer_;
};

class RdmqSystem final : public System {
 public:
  explicit RdmqSystem(const Workload& w) : w_(w), broker_(w) {}

  std::string Describe() const override {
    return "rdmq, fabric " + w_.fabric + ", topic durability " + w_.durability + ", " + w_.mode +
           " producers" +
           (w_.replication_factor > 1 ? ", " + std::to_string(w_.replication_factor) + " replicas" : "") +
           (broker_.running() ? ", broker started by rdmq-bench" : "");
  }
  int ServerPid() const override { return broker_.pid(); }

  Status Setup() override {
    if (w_.start_broker) RDMQ_RETURN_IF_ERROR(broker_.Start(w_, "control"));
    client::ClientOptions opts = ClientOptions();
    RDMQ_ASSIGN_OR_RETURN(auto admin, client::AdminClient::Connect(opts));
    (void)admin->DeleteTopic(w_.topic);  // a leftover of an earlier run; absent is fine
    std::vector<std::pair<std::string, std::string>> configs = {{"partitions", std::to_string(w_.partitions)},
                                                                {"durability", w_.durability}};
    if (w_.replication_factor > 1)
      configs.emplace_back("replication.factor", std::to_string(w_.replication_factor));
    RDMQ_ASSIGN_OR_RETURN(auto created, admin->CreateTopic(w_.topic, configs));
    (void)created;
    return Status::Ok();
  }

  Result<std::unique_ptr<ProducerClient>> OpenProducer(int index, AckSink* sink) override {
    producer::ProducerConfig cfg;
    cfg.client = ClientOptions();
    cfg.client.client_name = "rdmq-bench-producer-" + std::to_string(index);
    cfg.batch_size = w_.batch_size;
    cfg.linger = w_.linger;
    cfg.acks = w_.acks;
    cfg.mode = w_.mode == "shared" ? producer::PartitionMode::kShared : producer::PartitionMode::kExclusive;
    for (const std::string& kv : w_.producer_settings) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos)
        return Status(Errc::kInvalidArgument, "--producer-set '" + kv + "' is not key=value");
      RDMQ_RETURN_IF_ERROR(cfg.Set(kv.substr(0, eq), kv.substr(eq + 1)));
    }
    auto p = std::make_unique<RdmqProducer>(w_, sink);
    RDMQ_RETURN_IF_ERROR(p->Open(cfg));
    return std::unique_ptr<ProducerClient>(std::move(p));
  }

  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int index, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    consumer::ConsumerConfig cfg;
    cfg.client = ClientOptions();
    cfg.client.client_name = "rdmq-bench-consumer-" + std::to_string(index);
    cfg.max_poll_records = 4096;
    for (const std::string& kv : w_.consumer_settings) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos)
        return Status(Errc::kInvalidArgument, "--consumer-set '" + kv + "' is not key=value");
      RDMQ_RETURN_IF_ERROR(cfg.Set(kv.substr(0, eq), kv.substr(eq + 1)));
    }
    auto c = std::make_unique<RdmqConsumer>(sink);
    RDMQ_RETURN_IF_ERROR(c->Open(cfg, w_.topic, partitions));
    return std::unique_ptr<ConsumerClient>(std::move(c));
  }

  Status Cleanup() override {
    Status s;
    {
      auto admin = client::AdminClient::Connect(ClientOptions());
      if (admin.ok()) s = (*admin)->DeleteTopic(w_.topic);
    }
    broker_.Stop();
    return s;
  }

 private:
  client::ClientOptions ClientOptions() const {
    client::ClientOptions o;
    o.bootstrap = w_.address;
    if (w_.start_broker) o.bootstrap = broker_.Address("control");
    return o;
  }

  Workload w_;
  BrokerProcess broker_;
};

}  // namespace

std::unique_ptr<System> MakeRdmqSystem(const Workload& workload) {
  return std::make_unique<RdmqSystem>(workload);
}

}  // namespace rdmq::bench
