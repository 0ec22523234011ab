// The one interface rdmq-bench drives every messaging system through: rdmq itself (its own
// clients, or Kafka clients through its Kafka listener), Redis Streams, NATS JetStream and an
// in-process reference queue. A backend turns "a partition" into its
// own notion (an rdmq partition, a Redis stream key, a JetStream stream) and acknowledgements
// into completions delivered to an AckSink.
//
//   std::unique_ptr<System> sys = MakeSystem(workload);        // nothing connected yet
//   sys->Setup();                                              // create topic / streams
//   auto p = sys->OpenProducer(0, ack_sink);                   // in the thread or process that uses it
//   p->Send(partition, payload, tag);                          // queue one record
//   p->Poll(timeout);                                          // flush, deliver acks to ack_sink
//   p->Flush(timeout);                                         // everything sent is acknowledged
//   auto c = sys->OpenConsumer(0, {0, 1}, record_sink);
//   c->Poll(timeout);                                          // deliver records to record_sink
//   sys->Cleanup();                                            // delete what Setup created
//
// Payloads: the driver writes a 16-byte header into every payload (PayloadHeader): the send
// time, which is also the record's tag, and the producer and sequence numbers consumers use to
// check that nothing is lost or duplicated. The send time is 0 in records the driver does not
// time (latency sampling, RunOptions::latency_sample); backends pass tags through unchanged
// either way. A backend that cannot carry the tag beside a record may read it back from the
// payload (PayloadTag).
//
// Ownership and lifetime: clients are owned by the caller and must be destroyed before the
// System; sinks must outlive the clients they are given to. Setup/Cleanup run once, in the
// driver's main process, with no client open. In the fork mode every client is opened in the
// child process that uses it, after the fork.
//
// Threading: a client is used by one thread. Its sink is invoked by one thread at a time, from
// inside Send, Poll or Flush or from a thread of the client library; backends serialise their
// own library threads' callbacks. Sinks must not call back into the client.
//
// Errors: kUnavailable when the server is unreachable or went away, kInvalidArgument for a
// workload the backend cannot run (e.g. a partition it does not have), the server's own error
// message in the context otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdmq/common/status.h"

namespace rdmq::bench {

// Every knob of a run. Backends read the parts that concern them and ignore the rest.
struct Workload {
  std::string system = "mem";   // rdmq | kafka | redis | nats | mem
  std::string address;          // rdmq bootstrap, kafka/redis host:port, nats URL; "" = default
  std::string topic = "bench";  // topic / stream name prefix
  int producers = 1;
  int consumers = 1;
  // Every consumer reads every partition from the start, all of them once the producers are
  // done: one log fanned out to many readers (rdmq and kafka; the others have one reader per
  // partition).
  bool fanout = false;
  bool processes = false;       // fork a process per producer/consumer instead of a thread
  uint32_t message_size = 100;  // payload bytes, >= kPayloadHeaderBytes
  uint64_t count = 0;           // records per producer (0: run for `duration`)
  std::chrono::milliseconds duration{0};
  uint32_t batch_size = 256 * 1024;     // bytes a client may gather before sending
  std::chrono::microseconds linger{0};  // how long a client may wait to fill a batch
  int acks = 1;                         // 0: do not wait for the server; 1: wait (peers always wait)
  int partitions = 1;
  // kafka: the topic's replicas (a cluster's brokers; 1 on a broker on its own). Others: 1.
  int replication_factor = 1;
  std::string mode = "exclusive";  // producer partition mode: exclusive | shared
  std::string fabric = "shm";      // rdmq fabric: shm | tcp | verbs
  // rdmq: the topic's durability (durable | visibility). Peers: the class their setting is in
  // (durable = on media before the ack), so tables compare like with like.
  std::string durability = "durable";
  uint32_t window = 1024;  // records in flight per producer (sent, not acknowledged)
  double rate = 0;         // records/s per producer, evenly spaced (0: as fast as possible)
  std::string label;       // free text for tables, e.g. "appendfsync always"
  // rdmq: extra client settings, "key=value" as ProducerConfig::Set / ConsumerConfig::Set take;
  // kafka: librdkafka properties.
  std::vector<std::string> producer_settings;
  std::vector<std::string> consumer_settings;
  bool start_broker = false;  // rdmq, kafka: start rdmq-broker (beside rdmq-bench) for the run
  std::string broker_dir;     // its data directory ("" = a fresh one under $TMPDIR, deleted after)
};

inline constexpr uint32_t kPayloadHeaderBytes = 16;

// The first 16 bytes of every payload, little endian on every supported host.
struct PayloadHeader {
  uint64_t send_ns;  // MonoNanos() when the record was handed to Send, 0 if untimed; also the ack tag
  uint64_t id;       // producer << 40 | sequence
  static constexpr int kSeqBits = 40;
  static uint64_t MakeId(uint32_t producer, uint64_t seq) { return (uint64_t{producer} << kSeqBits) | seq; }
  uint32_t producer() const { return static_cast<uint32_t>(id >> kSeqBits); }
  uint64_t seq() const { return id & ((uint64_t{1} << kSeqBits) - 1); }
};
static_assert(sizeof(PayloadHeader) == kPayloadHeaderBytes);

// Reads the header of a payload; false if it is too short to have one.
inline bool ReadPayloadHeader(std::span<const std::byte> payload, PayloadHeader* h) {
  if (payload.size() < kPayloadHeaderBytes) return false;
  std::memcpy(h, payload.data(), sizeof(*h));
  return true;
}
inline uint64_t PayloadTag(std::span<const std::byte> payload) {
  PayloadHeader h{};
  return ReadPayloadHeader(payload, &h) ? h.send_ns : 0;
}

class AckSink {
 public:
  virtual ~AckSink() = default;
  // One call per record handed to Send, with the tag it was sent with; `status` is the
  // server's verdict (OK = acknowledged, or accepted for acks=0).
  virtual void OnAck(uint64_t tag, const Status& status) = 0;
  // The same for several records acknowledged together with one verdict, in send order; a
  // backend that learns of acks in groups calls this once per group. The default calls OnAck
  // for each; the driver's sink takes one clock reading for the whole group.
  virtual void OnAcks(std::span<const uint64_t> tags, const Status& status) {
    for (uint64_t tag : tags) OnAck(tag, status);
  }
};

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // A batch of records just received, for partition `partition`. Views are valid during the
  // call only.
  virtual void OnRecords(int partition, std::span<const std::span<const std::byte>> records) = 0;
};

class ProducerClient {
 public:
  virtual ~ProducerClient() = default;
  // Queues one record for `partition`. The payload is copied or sent before this returns.
  // May deliver acknowledgements (for this or earlier records) before returning.
  virtual Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) = 0;
  // Sends what is queued and delivers the acknowledgements that arrived; when nothing arrived
  // and records are outstanding, waits up to `timeout` for one.
  virtual Status Poll(std::chrono::microseconds timeout) = 0;
  // Sends everything and waits until every record is acknowledged or `timeout` passes
  // (kTimeout).
  virtual Status Flush(std::chrono::milliseconds timeout) = 0;
};

class ConsumerClient {
 public:
  virtual ~ConsumerClient() = default;
  // Delivers what is available to the sink; waits up to `timeout` when nothing is.
  virtual Status Poll(std::chrono::milliseconds timeout) = 0;
};

class System {
 public:
  virtual ~System() = default;
  // "redis 7.0.15, appendfsync always": what the table prints next to the numbers.
  virtual std::string Describe() const = 0;
  // Creates the topic/streams for the workload from scratch (deleting leftovers of a previous
  // run with the same name).
  virtual Status Setup() = 0;
  virtual Result<std::unique_ptr<ProducerClient>> OpenProducer(int index, AckSink* sink) = 0;
  virtual Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int index, const std::vector<int>& partitions,
                                                               RecordSink* sink) = 0;
  // Deletes what Setup created; best effort.
  virtual Status Cleanup() = 0;
  // The server process whose CPU time the report shows, or 0 if unknown / in-process.
  virtual int ServerPid() const { return 0; }
};

// The systems this build can drive.
inline constexpr const char* kSystems[] = {"rdmq", "kafka", "mem", "redis", "nats"};

// The backend for workload.system; kInvalidArgument naming the accepted systems otherwise.
Result<std::unique_ptr<System>> MakeSystem(const Workload& workload);

// Backends (one file each).
std::unique_ptr<System> MakeMemSystem(const Workload& workload);
std::unique_ptr<System> MakeRedisSystem(const Workload& workload);
std::unique_ptr<System> MakeNatsSystem(const Workload& workload);
std::unique_ptr<System> MakeRdmqSystem(const Workload& workload);
std::unique_ptr<System> MakeKafkaSystem(const Workload& workload);  // rdmq's Kafka listener, librdkafka

}  // namespace rdmq::bench
