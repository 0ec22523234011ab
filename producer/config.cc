// The producer's key table (ProducerConfigDef, producer.h): the Kafka-named producer keys, then
// the client's. ProducerConfig::Set is a lookup in it.
#include <string>

#include "rdmq/producer/producer.h"

namespace rdmq::producer {

const config::ConfigDef<ProducerConfig>& ProducerConfigDef() {
  using config::Field;
  using config::Type;
  using config::Unit;
  static const auto* def = [] {
    auto* d = new config::ConfigDef<ProducerConfig>("producer");
    const std::string producer = "producer";
    d->Define({.name = "batch.size",
               .type = Type::kBytes,
               .doc = "Bytes of records a partition's batch collects before it is sent.",
               .component = producer,
               .min = 128,
               .max = 64LL << 20},
              Field(&ProducerConfig::batch_size));
    d->Define({.name = "linger.ms",
               .type = Type::kDuration,
               .doc = "How long a batch may wait after its first record for more before it is sent "
                      "(0: send as soon as the I/O thread is free).",
               .component = producer,
               .min = 0,
               .max = 3'600'000,
               .unit = Unit::kMillis,
               .fractions = true},
              Field(&ProducerConfig::linger));
    d->Define({.name = "acks",
               .type = Type::kEnum,
               .doc = "0: a send completes when written; 1: when the partition's leader committed it; "
                      "all (-1): when every in-sync replica holds it (the high watermark; the same as 1 "
                      "without followers), retried while fewer than min.insync.replicas are in sync.",
               .component = producer,
               .choices = {{"0", 0}, {"1", 1}, {"all", -1}, {"-1", -1}}},
              Field(&ProducerConfig::acks));
    d->Define({.name = "enable.idempotence",
               .type = Type::kBool,
               .doc = "Batches carry the producer id and sequence numbers, so the broker drops a "
                      "batch sent twice.",
               .component = producer},
              Field(&ProducerConfig::enable_idempotence));
    d->Define({.name = "partition.mode",
               .type = Type::kEnum,
               .doc = "exclusive: one producer per partition assigns offsets itself (fastest); shared: "
                      "several producers reserve space and the broker assigns offsets.",
               .component = producer,
               .choices = {{"exclusive", static_cast<int64_t>(PartitionMode::kExclusive)},
                           {"shared", static_cast<int64_t>(PartitionMode::kShared)}}},
              Field(&ProducerConfig::mode));
    d->Define({.name = "partition.busy",
               .type = Type::kEnum,
               .doc = "When other producers hold the partition: shared: an exclusive producer writes it in "
                      "shared mode instead (and waits while another holds it exclusively); wait: the records "
                      "wait for the lease (asking every retry.backoff.ms) until delivery.timeout.ms; fail: "
                      "Send fails with PARTITION_BUSY. The broker releases leases idle for lease.idle.ms.",
               .component = producer,
               .choices = {{"shared", static_cast<int64_t>(BusyPolicy::kShared)},
                           {"wait", static_cast<int64_t>(BusyPolicy::kWait)},
                           {"fail", static_cast<int64_t>(BusyPolicy::kFail)}}},
              Field(&ProducerConfig::busy));
    d->Define({.name = "max.in.flight.requests.per.connection",
               .type = Type::kInt,
               .doc = "Batches per partition sent and not yet acknowledged.",
               .component = producer,
               .min = 1,
               .max = 1024},
              Field(&ProducerConfig::max_in_flight));
    d->Define({.name = "buffer.memory",
               .type = Type::kBytes,
               .doc = "Bytes of records buffered and not yet acknowledged; Send waits (max.block.ms) "
                      "when they are all in use.",
               .component = producer,
               .min = 1LL << 20,
               .max = 1LL << 40},
              Field(&ProducerConfig::buffer_memory));
    d->Define(
        {.name = "compression.type",
         .type = Type::kEnum,
         .doc = "Codec of the batches' records (Kafka's): none, gzip, snappy, lz4 or zstd. A batch is "
                "compressed in place when it is sealed, and sent uncompressed when that does not make it "
                "smaller; batch.size counts records uncompressed. Consumers decompress.",
         .component = producer,
         .choices = {{"none", static_cast<int64_t>(compression::Codec::kNone)},
                     {"gzip", static_cast<int64_t>(compression::Codec::kGzip)},
                     {"snappy", static_cast<int64_t>(compression::Codec::kSnappy)},
                     {"lz4", static_cast<int64_t>(compression::Codec::kLz4)},
                     {"zstd", static_cast<int64_t>(compression::Codec::kZstd)}}},
        Field(&ProducerConfig::compression));
    d->Define(
        {.name = "max.block.ms",
         .type = Type::kDuration,
         .doc = "How long Send waits for buffer memory before it fails with a timeout; in a cluster "
                "also how long it waits for its partition's leader to be reachable (a new one elected).",
         .component = producer,
         .min = 0,
         .max = 86'400'000},
        Field(&ProducerConfig::max_block));
    d->Define({.name = "delivery.timeout.ms",
               .type = Type::kDuration,
               .doc = "A record not acknowledged this long after Send fails with a timeout.",
               .component = producer,
               .min = 1,
               .max = 86'400'000},
              Field(&ProducerConfig::delivery_timeout));
    d->Define({.name = "rdmq.wait.spin.us",
               .type = Type::kDuration,
               .doc = "A thread waiting for an ack (SendFuture::get, Flush) polls for it this long "
                      "before it sleeps.",
               .component = producer,
               .min = 0,
               .max = 10'000'000,
               .unit = Unit::kMicros},
              Field(&ProducerConfig::spin));
    d->Include(client::ClientConfigDef(), &ProducerConfig::client);
    return d;
  }();
  return *def;
}

Status ProducerConfig::Set(std::string_view key, std::string_view value) {
  return ProducerConfigDef().Set(this, key, value);
}

}  // namespace rdmq::producer
