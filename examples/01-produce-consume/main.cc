// Example 01: create a topic, produce ten keyed records, and read them back, with rdmq's C++
// client API. See README.md in this folder.
//
//   example-01-produce-consume [BROKER]     (default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock)
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "rdmq/client/admin.h"
#include "rdmq/config/args.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

int main(int argc, char** argv) {
  using namespace rdmq;
  const std::string topic = "example-01";

  // 0. The command line, with the parser every rdmq tool uses.
  const config::CommandSpec spec{
      .path = "example-01-produce-consume",
      .usage = "[BROKER]",
      .summary =
          "Creates a topic, produces ten keyed records and reads them back. BROKER is the "
          "broker's control address (default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock).",
      .max_positional = 1};
  int exit_code = 0;
  const auto args = config::ParseCommandLine(spec, argc, argv, &exit_code);
  if (!args) return exit_code;

  // 1. Where the broker is. Every client object takes the same ClientOptions.
  client::ClientOptions options;
  if (!args->positional().empty()) options.bootstrap = args->positional()[0];

  // 2. Create the topic (two partitions); it may exist from an earlier run.
  auto admin = client::AdminClient::Connect(options);
  if (!admin.ok()) {
    std::fprintf(stderr, "cannot reach the broker at %s: %s\n", options.ResolvedBootstrap().c_str(),
                 admin.status().ToString().c_str());
    return 1;
  }
  auto created = (*admin)->CreateTopic(topic, {{"partitions", "2"}});
  if (!created.ok() && !created.status().is(Errc::kAlreadyExists)) {
    std::fprintf(stderr, "create topic: %s\n", created.status().ToString().c_str());
    return 1;
  }

  // 3. Produce ten records. Records with the same key land in the same partition (Kafka's
  //    murmur2 partitioner). Send returns at once; get() waits for the broker's ack.
  producer::ProducerConfig pconfig;
  pconfig.client = options;
  auto producer = producer::Producer::Create(pconfig);
  if (!producer.ok()) {
    std::fprintf(stderr, "producer: %s\n", producer.status().ToString().c_str());
    return 1;
  }
  std::vector<producer::SendFuture> sent;
  for (int i = 0; i < 10; ++i) {
    const std::string key = "user-" + std::to_string(i % 3);
    const std::string value = "event " + std::to_string(i);
    // A ProducerRecord holds views: Send copies what they point to before it returns.
    sent.push_back((*producer)->Send({.topic = topic, .key = key, .value = value}));
  }
  std::map<int32_t, int64_t> last_offset;  // partition -> last offset we wrote there
  for (auto& f : sent) {
    auto md = f.get();
    if (!md.ok()) {
      std::fprintf(stderr, "send: %s\n", md.status().ToString().c_str());
      return 1;
    }
    std::printf("produced to partition %d at offset %lld\n", md->partition,
                static_cast<long long>(md->offset));
    last_offset[md->partition] = std::max(last_offset[md->partition], md->offset);
  }
  if (Status s = (*producer)->Close(); !s.ok()) {
    std::fprintf(stderr, "close: %s\n", s.ToString().c_str());
    return 1;
  }

  // 4. Read both partitions from the beginning until we have seen what we wrote.
  consumer::ConsumerConfig cconfig;
  cconfig.client = options;
  auto consumer = consumer::Consumer::Create(cconfig);
  if (!consumer.ok()) {
    std::fprintf(stderr, "consumer: %s\n", consumer.status().ToString().c_str());
    return 1;
  }
  const std::vector<client::TopicPartition> partitions = {{topic, 0}, {topic, 1}};
  if (Status s = (*consumer)->Assign(partitions); !s.ok()) {
    std::fprintf(stderr, "assign: %s\n", s.ToString().c_str());
    return 1;
  }
  auto done = [&] {
    for (const auto& [partition, offset] : last_offset) {
      auto pos = (*consumer)->Position({topic, partition});
      if (!pos.ok() || *pos <= offset) return false;
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "timed out waiting for our records\n");
      return 1;
    }
    auto records = (*consumer)->Poll(std::chrono::milliseconds(100));
    if (!records.ok()) {
      std::fprintf(stderr, "poll: %s\n", records.status().ToString().c_str());
      return 1;
    }
    for (const consumer::ConsumerRecord& r : *records) {
      // Views into the log: valid until the next Poll.
      std::printf("consumed partition %d offset %lld: %.*s = %.*s\n", r.partition,
                  static_cast<long long>(r.offset), static_cast<int>(r.key.value_or("").size()),
                  r.key.value_or("").data(), static_cast<int>(r.value.value_or("").size()),
                  r.value.value_or("").data());
    }
  }
  (*consumer)->Close();
  return 0;
}
