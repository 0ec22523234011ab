// Producer: appends records to partition logs with one-sided WRITEs (docs/protocol.md section 4).
//
//   ProducerConfig cfg;                       // bootstrap from $RDMQ_BROKER or the default
//   auto p = Producer::Create(cfg);           // Result<std::unique_ptr<Producer>>
//   auto f = (*p)->Send({.topic = "orders", .key = "k1", .value = "hello"});
//   Result<RecordMetadata> md = f.get();      // offset once acknowledged (acks=1)
//   (*p)->Flush();
//
// Records are batched per partition into Kafka RecordBatch v2 batches, built in place in
// registered memory, written to the partition's segment and committed. A batch is sent when it
// reaches `batch_size` bytes or `linger` after its first record, and at Flush/Close. With
// `compression.type` set, a batch's records are compressed when it is sealed.
// Records with a key go to Kafka's murmur2 partition for it (so keys land where Kafka puts them);
// records without key or partition stick to one partition per batch (sticky partitioning).
//
// Thread safety: Send, Flush and Close may be called from any number of threads. Callbacks run
// on the producer's I/O thread or inside the Send/Flush call that completed them, one partition's
// one at a time and in offset order; they must not block (a Flush or future.get() inside a
// callback waits for completions that are queued behind it). Send copies key, value and headers
// before it returns.
// Errors: Send fails immediately (or its future does) with kInvalidArgument for a record larger
// than the broker's max.message.bytes, UNKNOWN_TOPIC / UNKNOWN_PARTITION, kTimeout when
// `delivery_timeout` passes without the record acknowledged (the message says why: e.g. the
// broker unreachable, with the last connection error). Lost leases, segment rolls and a broker
// that went away (the producer reconnects, reopens its leases and resends what was not
// acknowledged; an idempotent producer stores each record once) are retried inside the producer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rdmq/client/options.h"
#include "rdmq/common/status.h"
#include "rdmq/compression/codec.h"

namespace rdmq::producer {

using client::Header;

enum class PartitionMode : uint8_t {
  kExclusive = 1,  // one producer per partition assigns offsets itself (the fast default)
  kShared = 2,     // several producers reserve space with FETCH_ADD; the broker assigns offsets
};

// What a producer does when the partition it wants is held by other producers (PARTITION_BUSY).
// Whatever the choice, the broker releases a lease whose holder committed nothing for
// lease.idle.ms, so an idle holder keeps nobody waiting for long.
enum class BusyPolicy : uint8_t {
  kShared = 1,  // an exclusive producer writes that partition in shared mode (it stays shared);
                // while an exclusive lease is held there, it waits as kWait
  kWait = 2,    // the records wait and the producer asks again every retry.backoff.ms, until
                // it gets the lease or delivery.timeout.ms passes
  kFail = 3,    // Send fails with PARTITION_BUSY (records already queued wait as kWait)
};

struct ProducerConfig {
  client::ClientOptions client;
  uint32_t batch_size = 256 * 1024;                // "batch.size": bytes per batch
  std::chrono::microseconds linger{0};             // "linger.ms" (fractions allowed: 0.05)
  int acks = 1;                                    // "acks": 0, 1, or -1/"all" (every in-sync replica)
  bool enable_idempotence = true;                  // "enable.idempotence"
  PartitionMode mode = PartitionMode::kExclusive;  // "partition.mode": exclusive | shared
  BusyPolicy busy = BusyPolicy::kShared;           // "partition.busy": shared | wait | fail
  uint32_t max_in_flight = 16;                     // "max.in.flight.requests.per.connection"
  uint64_t buffer_memory = 64ull << 20;            // "buffer.memory": unacknowledged bytes
  std::chrono::milliseconds max_block{60000};  // "max.block.ms": Send waits this long for room (or a leader)
  std::chrono::milliseconds delivery_timeout{120000};  // "delivery.timeout.ms"
  // "rdmq.wait.spin.us": a thread waiting for an ack (SendFuture::get, Flush) polls for it
  // this long before it sleeps.
  std::chrono::microseconds spin{200};
  // "compression.type": none | gzip | snappy | lz4 | zstd. A sealed batch's records are compressed
  // in place (when that makes it smaller); batch.size counts them uncompressed.
  compression::Codec compression = compression::Codec::kNone;

  // Kafka-named keys (above) plus the ClientOptions keys: a lookup in ProducerConfigDef().
  // kInvalidArgument names the key.
  Status Set(std::string_view key, std::string_view value);
};

// Every producer key with its type, range, default and doc (`rdmq config list producer`).
const config::ConfigDef<ProducerConfig>& ProducerConfigDef();

struct ProducerRecord {  // every field has a default: designated initializers may name any subset
  std::string_view topic = {};
  int32_t partition = -1;                      // -1: by key, or sticky when there is no key
  std::optional<std::string_view> key = {};    // nullopt = null key
  std::optional<std::string_view> value = {};  // nullopt = null value (a tombstone)
  std::span<const Header> headers = {};
  int64_t timestamp_ms = -1;  // -1: now (the coarse wall clock: up to one kernel tick, 1-4 ms, behind)
};

struct RecordMetadata {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;  // -1 with acks=0
  int64_t timestamp_ms = 0;
  uint32_t serialized_key_size = 0;
  uint32_t serialized_value_size = 0;
};

// The result of one Send. Cheap to copy (shares its batch's state, counted by reference).
class SendFuture {
 public:
  SendFuture() = default;
  SendFuture(const SendFuture& other) noexcept;
  SendFuture(SendFuture&& other) noexcept : state_(other.state_), index_(other.index_) {
    other.state_ = nullptr;
  }
  SendFuture& operator=(const SendFuture& other) noexcept;
  SendFuture& operator=(SendFuture&& other) noexcept;
  ~SendFuture();
  // Blocks until the record is acknowledged or failed.
  Result<RecordMetadata> get() const;
  bool ready() const;
  // True if ready within `timeout`.
  bool wait_for(std::chrono::nanoseconds timeout) const;
  bool valid() const { return state_ != nullptr; }

  struct State;  // implementation detail
  // Takes over one reference to `state` that the caller holds (implementation detail).
  SendFuture(State* state, uint32_t index) noexcept : state_(state), index_(index) {}

 private:
  State* state_ = nullptr;
  uint32_t index_ = 0;
};

using SendCallback = std::function<void(const Result<RecordMetadata>&)>;

class Producer {
 public:
  static Result<std::unique_ptr<Producer>> Create(const ProducerConfig& config);
  virtual ~Producer() = default;  // Close()s with the delivery timeout

  virtual SendFuture Send(const ProducerRecord& record) = 0;
  // Like Send, but reports through `callback` (no future allocated): the fastest path.
  virtual Status Send(const ProducerRecord& record, SendCallback callback) = 0;
  // Sends every buffered record and waits until all are acknowledged or failed. Returns kTimeout
  // if some are neither by then, otherwise the first error of the records that failed since the
  // previous Flush (with their count), or OK. (Each record's own outcome is in its future or
  // callback, as with Kafka.)
  virtual Status Flush(std::chrono::milliseconds timeout = std::chrono::milliseconds(120000)) = 0;
  // Flushes, releases leases, disconnects. Later calls fail with kFailedPrecondition.
  virtual Status Close(std::chrono::milliseconds timeout = std::chrono::milliseconds(120000)) = 0;
  virtual Result<int32_t> PartitionCount(std::string_view topic) = 0;
};

}  // namespace rdmq::producer
