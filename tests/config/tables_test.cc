// The components' key tables: every default is valid and reads back; the keys set the fields
// they did before the tables (names, ranges and defaults unchanged).
#include <catch2/catch.hpp>

#include "rdmq/bench/run_config.h"
#include "rdmq/broker/config.h"
#include "rdmq/client/options.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/metadata/topic.h"
#include "rdmq/producer/producer.h"
#include "support/test_util.h"

namespace rdmq {
namespace {

template <class T>
void CheckTable(const config::ConfigDef<T>& def) {
  INFO("table " << def.name());
  CHECK(!def.keys().empty());
  T target{};
  for (const config::KeyDoc& k : def.Describe()) {
    INFO("key " << k.spec.name);
    CHECK(!k.spec.doc.empty());
    CHECK(!k.spec.component.empty());
    if (!k.spec.default_text.empty()) continue;  // a derived default ("" means: derive it)
    REQUIRE_OK(def.Set(&target, k.spec.name, k.default_value));
    CHECK(def.Get(target, *def.Find(k.spec.name)) == k.default_value);
  }
  Status s = def.Set(&target, "no.such.key", "1");
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find("unknown config key 'no.such.key' for the " + def.name()) != std::string::npos);
}

TEST_CASE("every table's defaults are valid values of their keys", "[config]") {
  CheckTable(broker::BrokerConfigDef());
  CheckTable(metadata::TopicConfigDef());
  CheckTable(producer::ProducerConfigDef());
  CheckTable(consumer::ConsumerConfigDef());
  CheckTable(client::ClientConfigDef());
  CheckTable(bench::RunConfigDef());
}

TEST_CASE("bench keys set the workload and run fields rdmq-bench's options set before the table",
          "[config]") {
  const bench::Workload defaults;
  bench::RunConfig c;
  const auto& def = bench::RunConfigDef();
  REQUIRE_OK(def.Set(&c, "system", "rdmq"));
  CHECK(c.workload.system == "rdmq");
  REQUIRE_OK(def.Set(&c, "size", "1KiB"));
  CHECK(c.workload.message_size == 1024);
  REQUIRE_OK(def.Set(&c, "linger-ms", "0.5"));
  CHECK(c.workload.linger == std::chrono::microseconds(500));
  REQUIRE_OK(def.Set(&c, "duration", "1.5"));
  CHECK(c.workload.duration == std::chrono::milliseconds(1500));
  REQUIRE_OK(def.Set(&c, "acks", "all"));
  CHECK(c.workload.acks == -1);
  REQUIRE_OK(def.Set(&c, "rate", "10000"));
  CHECK(c.workload.rate == 10000.0);
  REQUIRE_OK(def.Set(&c, "procs", "true"));
  CHECK(c.workload.processes);
  REQUIRE_OK(def.Set(&c, "progress", "none"));
  CHECK(c.run.progress == bench::ProgressMode::kNone);
  REQUIRE_OK(def.Set(&c, "drain-timeout", "2s"));
  CHECK(c.run.drain_timeout == std::chrono::milliseconds(2000));
  REQUIRE_OK(def.Set(&c, "json", "r.json"));
  CHECK(c.json_path == "r.json");
  // Ranges the driver needs are the table's: a record holds the 16-byte header, at most 64
  // workers, a known system.
  CHECK(def.Set(&c, "size", "8").is(Errc::kInvalidArgument));
  CHECK(def.Set(&c, "producers", "65").is(Errc::kInvalidArgument));
  CHECK(def.Set(&c, "system", "rabbitmq").is(Errc::kInvalidArgument));
  CHECK(c.workload.message_size == 1024);
  // The table's defaults are the workload's.
  for (const auto& [key, value] : def.Entries(bench::RunConfig{})) {
    INFO(key << "=" << value);
    bench::RunConfig d;
    REQUIRE_OK(def.Set(&d, key, value));
  }
  CHECK(bench::RunConfig{}.workload.window == defaults.window);
  CHECK(def.Get(bench::RunConfig{}, *def.Find("window")) == "1024");
  CHECK(def.Get(bench::RunConfig{}, *def.Find("durability")) == "durable");
}

TEST_CASE("producer keys set the producer's fields, client keys its client options", "[config]") {
  producer::ProducerConfig c;
  REQUIRE_OK(c.Set("acks", "all"));
  CHECK(c.acks == -1);
  REQUIRE_OK(c.Set("acks", "0"));
  CHECK(c.acks == 0);
  REQUIRE_OK(c.Set("linger.ms", "0.05"));
  CHECK(c.linger == std::chrono::microseconds(50));
  REQUIRE_OK(c.Set("batch.size", "64KiB"));
  CHECK(c.batch_size == 65536);
  REQUIRE_OK(c.Set("partition.mode", "shared"));
  CHECK(c.mode == producer::PartitionMode::kShared);
  REQUIRE_OK(c.Set("max.block.ms", "2s"));
  CHECK(c.max_block == std::chrono::milliseconds(2000));
  REQUIRE_OK(c.Set("bootstrap.servers", "tcp:a:1,tcp:b:2"));
  CHECK(c.client.bootstrap == "tcp:a:1,tcp:b:2");  // the list, tried in order (client::ParseBootstrapServers)
  REQUIRE_OK(c.Set("reconnect.backoff.max.ms", "3s"));
  CHECK(c.client.reconnect_backoff_max == std::chrono::milliseconds(3000));
  REQUIRE_OK(c.Set("request.timeout.ms", "5000"));
  CHECK(c.client.request_timeout == std::chrono::milliseconds(5000));
  Status s = c.Set("batch.size", "100");
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find("batch.size=100: must be a byte count in [128, 64 MiB]") != std::string::npos);
  CHECK(c.Set("bootstrap.servers", "").is(Errc::kInvalidArgument));
  CHECK(c.Set("linger.ms", "-1").is(Errc::kInvalidArgument));
  CHECK(c.Set("batch.sise", "1").ToString().find("did you mean 'batch.size'?") != std::string::npos);
}

TEST_CASE("consumer keys set the consumer's fields", "[config]") {
  consumer::ConsumerConfig c;
  REQUIRE_OK(c.Set("auto.offset.reset", "none"));
  CHECK(c.auto_offset_reset == consumer::OffsetReset::kNone);
  REQUIRE_OK(c.Set("check.crcs", "false"));
  CHECK(!c.check_crcs);
  REQUIRE_OK(c.Set("rdmq.idle.spin.us", "0"));
  CHECK(c.spin.count() == 0);
  REQUIRE_OK(c.Set("client.id", "me"));
  CHECK(c.client.client_name == "me");
  CHECK(c.Set("max.poll.records", "0").is(Errc::kInvalidArgument));
  CHECK(c.Set("auto.offset.reset", "smallest").ToString().find("must be earliest, latest or none") !=
        std::string::npos);
}

TEST_CASE("broker keys include the topic defaults under Kafka's broker names", "[config]") {
  broker::BrokerConfig c;
  REQUIRE_OK(broker::ApplySetting(&c, "log.segment.bytes", "1GiB"));
  CHECK(c.topic_defaults.segment_bytes == 1ull << 30);
  REQUIRE_OK(broker::ApplySetting(&c, "log.retention.ms=-1"));
  CHECK(c.topic_defaults.retention_ms == -1);
  REQUIRE_OK(broker::ApplySetting(&c, "data.spin.us=0"));
  CHECK(c.data_spin_us == 0);
  REQUIRE_OK(broker::ApplySetting(&c, "log.level=debug"));
  CHECK(c.log_level == "debug");
  CHECK(broker::ApplySetting(&c, "log.level=verbose").is(Errc::kInvalidArgument));
  CHECK(broker::ApplySetting(&c, "partitions=3").ToString().find("did you mean 'num.partitions'?") !=
        std::string::npos);
  // The broker's own keys come first, then the seven new-topic defaults under their broker names.
  const auto docs = broker::BrokerConfigDef().Describe();
  const std::vector<std::string> topic_keys = {
      "num.partitions",           "log.segment.bytes", "log.retention.bytes", "log.retention.ms",
      "log.index.interval.bytes", "message.max.bytes", "durability"};
  REQUIRE(docs.size() > topic_keys.size());
  for (size_t i = 0; i < topic_keys.size(); ++i) {
    const auto& d = docs[docs.size() - topic_keys.size() + i];
    CHECK(d.spec.name == topic_keys[i]);
    CHECK(d.spec.component == "broker");
  }
}

}  // namespace
}  // namespace rdmq
