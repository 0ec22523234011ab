// "kafka": rdmq's Kafka listener (docs/kafka-protocol.md) through librdkafka's C API, the client
// most Kafka applications use directly or underneath. Partition p is partition p of the topic.
// Setup recreates the topic with the workload's partitions and durability through librdkafka's
// admin API and waits until the metadata shows it.
// Producers: one rd_kafka_t each, acks from the workload ("0", "1" or "all"), linger.ms and
// batch.size from the workload, idempotence off (unless --producer-set says otherwise), Nagle off,
// a local queue large enough for the driver's window; each record goes to its partition with the
// tag as the message opaque, and the delivery-report callback (served by rd_kafka_poll and
// rd_kafka_flush in the calling thread) hands it to the AckSink.
// Consumers: their partitions assigned from the beginning (no subscription, no commits; a group
// id is set because librdkafka's assign needs one), read from the consumer queue with
// rd_kafka_consume_batch_queue.
// --producer-set / --consumer-set pass librdkafka properties through (compression.type=lz4,
// fetch.wait.max.ms=10, ...); they are applied last, so they override the settings above.
// With --start-broker the backend starts rdmq-broker (BrokerProcess) and connects to the Kafka
// address it writes to <data dir>/rdmq.addr.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "broker_process.h"
#include "kafka_admin.h"
#include "rdmq/bench/system.h"
#include "rdmq/common/clock.h"

namespace rdmq::bench {
namespace {

const char* AcksOf(const Workload& w) { return w.acks == 0 ? "0" : w.acks == 1 ? "1" : "all"; }

Status Refused(rd_kafka_resp_err_t err, const std::string& what) {
  const Errc e =
      err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN   ? Errc::kUnavailable
      : err == RD_KAFKA_RESP_ERR__TIMED_OUT || err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT ? Errc::kTimeout
                                                                                          : Errc::kInternal;
  return Status(e, "kafka: " + what + ": " + rd_kafka_err2str(err));
}

class ProducerHandle {
 public:
  ProducerHandle() = default;
  ProducerHandle(const ProducerHandle&) = delete;
  ProducerHandle& operator=(const ProducerHandle&) = delete;
  ~ProducerHandle() {
    if (topic != nullptr) rd_kafka_topic_destroy(topic);
    if (rk != nullptr) rd_kafka_destroy(rk);
  }
  rd_kafka_t* rk = nullptr;
  rd_kafka_topic_t* topic = nullptr;  // one handle for every partition
};

class KafkaProducer final : public ProducerClient {
 public:
  explicit KafkaProducer(AckSink* sink) : sink_(sink) {}

  Status Open(const Workload& w, const std::string& bootstrap, int index) {
    KafkaConf conf;
    const uint64_t queue_kb =
        std::max<uint64_t>(uint64_t{w.window} * (w.message_size + 128) * 2 / 1024, 1 << 20);
    const int64_t linger_us = w.linger.count();
    RDMQ_RETURN_IF_ERROR(conf.SetAll({
        {"bootstrap.servers", bootstrap},
        {"client.id", "rdmq-bench-producer-" + std::to_string(index)},
        {"acks", AcksOf(w)},
        {"enable.idempotence", "false"},
        {"linger.ms", std::to_string(linger_us / 1000) + "." + Pad3(linger_us % 1000)},
        {"batch.size", std::to_string(std::max<uint32_t>(w.batch_size, 1))},
        {"batch.num.messages", "1000000"},
        {"queue.buffering.max.messages", std::to_string(std::max<uint64_t>(uint64_t{w.window} * 2, 100000))},
        {"queue.buffering.max.kbytes", std::to_string(std::min<uint64_t>(queue_kb, 2147483647))},
        {"socket.nagle.disable", "true"},
    }));
    RDMQ_RETURN_IF_ERROR(conf.SetKeyValues(w.producer_settings, "--producer-set"));
    rd_kafka_conf_set_dr_msg_cb(conf.get(), &KafkaProducer::OnDelivery);
    rd_kafka_conf_set_opaque(conf.get(), this);
    RDMQ_ASSIGN_OR_RETURN(h_.rk, conf.Create(RD_KAFKA_PRODUCER));
    h_.topic = rd_kafka_topic_new(h_.rk, w.topic.c_str(), nullptr);
    if (h_.topic == nullptr) return Refused(rd_kafka_last_error(), "topic handle for " + w.topic);
    return Status::Ok();
  }

  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override {
    // The tag rides in librdkafka's void* message opaque and comes back unchanged in the
    // delivery report.
    void* const opaque = reinterpret_cast<void*>(tag);  // NOLINT(performance-no-int-to-ptr)
    for (;;) {
      if (rd_kafka_produce(h_.topic, partition, RD_KAFKA_MSG_F_COPY, const_cast<std::byte*>(payload.data()),
                           payload.size(), nullptr, 0, opaque) == 0) {
        return Status::Ok();
      }
      const rd_kafka_resp_err_t err = rd_kafka_last_error();
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
        return Refused(err, "produce to partition " + std::to_string(partition));
      rd_kafka_poll(h_.rk, 1);  // the local queue drains as acks come back
    }
  }

  Status Poll(std::chrono::microseconds timeout) override {
    rd_kafka_poll(h_.rk, static_cast<int>((timeout.count() + 999) / 1000));
    return Status::Ok();
  }

  Status Flush(std::chrono::milliseconds timeout) override {
    const rd_kafka_resp_err_t err = rd_kafka_flush(h_.rk, static_cast<int>(timeout.count()));
    if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
      return Status(Errc::kTimeout, "kafka: " + std::to_string(rd_kafka_outq_len(h_.rk)) +
                                        " records or requests still unacknowledged");
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return Refused(err, "flush");
    return Status::Ok();
  }

 private:
  static std::string Pad3(int64_t v) {
    std::string s = std::to_string(v);
    return std::string(3 - std::min<size_t>(s.size(), 3), '0') + s;
  }

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<KafkaProducer*>(opaque);
    const uint64_t tag = reinterpret_cast<uint64_t>(m->_private);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->sink_->OnAck(tag, Status::Ok());
    } else {
      self->sink_->OnAck(tag, Refused(m->err, "delivery to partition " + std::to_string(m->partition)));
    }
  }

  AckSink* sink_;
  ProducerHandle h_;
};

class KafkaConsumer final : public ConsumerClient {
 public:
  explicit KafkaConsumer(RecordSink* sink) : sink_(sink) {}

  ~KafkaConsumer() override {
    if (queue_ != nullptr) rd_kafka_queue_destroy(queue_);
    if (rk_ != nullptr) {
      (void)rd_kafka_assign(rk_, nullptr);
      rd_kafka_destroy_flags(rk_, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    }
  }

  Status Open(const Workload& w, const std::string& bootstrap, int index,
              const std::vector<int>& partitions) {
    KafkaConf conf;
    RDMQ_RETURN_IF_ERROR(conf.SetAll({
        {"bootstrap.servers", bootstrap},
        {"client.id", "rdmq-bench-consumer-" + std::to_string(index)},
        {"group.id", "rdmq-bench-" + w.topic + "-" + std::to_string(index)},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
        {"socket.nagle.disable", "true"},
    }));
    RDMQ_RETURN_IF_ERROR(conf.SetKeyValues(w.consumer_settings, "--consumer-set"));
    RDMQ_ASSIGN_OR_RETURN(rk_, conf.Create(RD_KAFKA_CONSUMER));
    if (rd_kafka_resp_err_t err = rd_kafka_poll_set_consumer(rk_); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Refused(err, "route events to the consumer queue");
    }
    queue_ = rd_kafka_queue_get_consumer(rk_);
    if (partitions.empty()) return Status::Ok();
    // Learn the partitions' leader first: assigned partitions whose leader is not known yet
    // look up their start offset only on a retry timer (500 ms later).
    if (rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, w.topic.c_str(), nullptr); t != nullptr) {
      const rd_kafka_metadata_t* md = nullptr;
      if (rd_kafka_metadata(rk_, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_metadata_destroy(md);
      rd_kafka_topic_destroy(t);
    }
    rd_kafka_topic_partition_list_t* list =
        rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
    for (int p : partitions) {
      rd_kafka_topic_partition_list_add(list, w.topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    const rd_kafka_resp_err_t err = rd_kafka_assign(rk_, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return Refused(err, "assign partitions of " + w.topic);
    return Status::Ok();
  }

  // Waits up to `timeout` for the first message only (rd_kafka_consume_batch_queue would wait
  // the whole timeout for a full batch), then takes whatever else is queued.
  Status Poll(std::chrono::milliseconds timeout) override {
    rd_kafka_message_t* first = rd_kafka_consume_queue(queue_, static_cast<int>(timeout.count()));
    if (first == nullptr) return Status::Ok();  // nothing within the timeout
    batch_[0] = first;
    const ssize_t n = rd_kafka_consume_batch_queue(queue_, 0, batch_.data() + 1, batch_.size() - 1);
    const size_t count = 1 + static_cast<size_t>(std::max<ssize_t>(n, 0));
    Status failure;
    size_t i = 0;
    // Runs of one partition's records go to the sink at once.
    while (i < count) {
      const int partition = batch_[i]->partition;
      views_.clear();
      for (; i < count && batch_[i]->partition == partition; ++i) {
        const rd_kafka_message_t* m = batch_[i];
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          // Local errors (a broker connection that went down, ...) are retried by the library;
          // a broker's error or a fatal one ends the run.
          if ((m->err > 0 || m->err == RD_KAFKA_RESP_ERR__FATAL) && failure.ok()) {
            failure =
                Status(Errc::kInternal, std::string("kafka: consume partition ") + std::to_string(partition) +
                                            ": " + rd_kafka_message_errstr(m));
          }
          continue;
        }
        views_.emplace_back(static_cast<const std::byte*>(m->payload), m->len);
      }
      if (!views_.empty()) sink_->OnRecords(partition, views_);
    }
    for (size_t k = 0; k < count; ++k) rd_kafka_message_destroy(batch_[k]);
    return failure;
  }

 private:
  RecordSink* sink_;
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_queue_t* queue_ = nullptr;
  std::vector<rd_kafka_message_t*> batch_ = std::vector<rd_kafka_message_t*>(4096);
  std::vector<std::span<const std::byte>> views_;
};

class KafkaSystem final : public System {
 public:
  explicit KafkaSystem(const Workload& w) : w_(w), broker_(w) {}

  std::string Describe() const override {
    return std::string("rdmq Kafka listener via librdkafka ") + rd_kafka_version_str() +
           ", topic durability " + w_.durability + ", acks " + AcksOf(w_) +
           (w_.replication_factor > 1 ? ", " + std::to_string(w_.replication_factor) + " replicas" : "") +
           (broker_.running() ? ", broker started by rdmq-bench" : "");
  }
  int ServerPid() const override { return broker_.pid(); }

  Status Setup() override {
    if (w_.start_broker) RDMQ_RETURN_IF_ERROR(broker_.Start(w_, "kafka"));
    return RecreateTopic(Bootstrap(), w_.topic, w_.partitions, w_.replication_factor,
                         {{"durability", w_.durability}});
  }

  Result<std::unique_ptr<ProducerClient>> OpenProducer(int index, AckSink* sink) override {
    auto p = std::make_unique<KafkaProducer>(sink);
    RDMQ_RETURN_IF_ERROR(p->Open(w_, Bootstrap(), index));
    return std::unique_ptr<ProducerClient>(std::move(p));
  }

  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int index, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    auto c = std::make_unique<KafkaConsumer>(sink);
    RDMQ_RETURN_IF_ERROR(c->Open(w_, Bootstrap(), index, partitions));
    return std::unique_ptr<ConsumerClient>(std::move(c));
  }

  Status Cleanup() override {
    Status s = DeleteTopic(Bootstrap(), w_.topic);
    broker_.Stop();
    return s;
  }

 private:
  std::string Bootstrap() const {
    if (w_.start_broker) return broker_.Address("kafka");
    return w_.address.empty() ? "127.0.0.1:9092" : w_.address;
  }

  Workload w_;
  BrokerProcess broker_;
};

}  // namespace

std::unique_ptr<System> MakeKafkaSystem(const Workload& workload) {
  return std::make_unique<KafkaSystem>(workload);
}

}  // namespace rdmq::bench
