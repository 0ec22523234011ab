#include "config_list.h"

#include <iostream>

#include "rdmq/bench/run_config.h"
#include "rdmq/broker/config.h"
#include "rdmq/client/options.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/metadata/topic.h"
#include "rdmq/producer/producer.h"

namespace rdmq::cli {
namespace {

constexpr std::string_view kIntro = R"(# Configuration

Every configuration key of rdmq, by the component that reads it. This file is generated from the
key tables in the code (`config::ConfigDef`, one per component) by
`rdmq config list --markdown > docs/configuration.md`; a test fails when it is not current.
`rdmq config list [broker|topic|producer|consumer|client|bench] [--json]` prints the same on a
terminal.

Values are text, whatever their source (a JSON file, `--set`, `-X`, `--config`):

- **bool**: `true` or `false`.
- **int**: a decimal integer.
- **bytes**: a decimal integer, or with a binary suffix: `64KiB`, `16MiB`, `1GiB`, `1TiB`
  (`K`, `M`, `G`, `T` too).
- **duration**: a number in the unit the key's name ends with (`.ms`, `.us`), or with a unit of
  its own: `500us`, `250ms`, `2s`, `5min`, `1h`, `7d`. Fractions only where the key says so.
- **string**: any text.
- **enum**: one of the listed words.

An unknown key or a bad value is an error naming the key, the value and what is accepted.
)";

config::TableDoc Broker() {
  return {"broker",
          "Keys of the rdmq-broker JSON config file (`--config FILE`, an object of \"key\": value) and "
          "of `--set KEY=VALUE`; `rdmq-broker --print-config` prints the values in effect.",
          broker::BrokerConfigDef().Describe()};
}
config::TableDoc Topic() {
  return {"topic",
          "Per-topic keys: `rdmq topic create|alter --config KEY=VALUE`. A new topic takes the "
          "broker's defaults (num.partitions, log.segment.bytes, ...) for the keys it is not given.",
          metadata::TopicConfigDef().Describe()};
}
config::TableDoc Producer() {
  return {"producer",
          "`ProducerConfig::Set(key, value)`, `rdmq-produce -X KEY=VALUE`, "
          "`rdmq-bench --producer-set KEY=VALUE`. The client keys apply too.",
          producer::ProducerConfigDef().Describe()};
}
config::TableDoc Consumer() {
  return {"consumer",
          "`ConsumerConfig::Set(key, value)`, `rdmq-consume -X KEY=VALUE`, "
          "`rdmq-bench --consumer-set KEY=VALUE`. The client keys apply too.",
          consumer::ConsumerConfigDef().Describe()};
}
config::TableDoc Client() {
  return {"client",
          "Keys every client object takes (`ClientOptions::Set`; `rdmq -X KEY=VALUE`); the producer "
          "and consumer tables include them.",
          client::ClientConfigDef().Describe()};
}

config::TableDoc Bench() {
  return {"bench",
          "The settings of `rdmq-bench run`, each given as the option of its name (`--size 1KiB`, "
          "`--linger-ms 0.5`, `--procs`).",
          bench::RunConfigDef().Describe()};
}

}  // namespace

Result<std::vector<config::TableDoc>> ConfigTables(std::string_view which) {
  if (which.empty()) return std::vector<config::TableDoc>{Broker(), Topic(), Producer(), Consumer(), Bench()};
  if (which == "broker") return std::vector<config::TableDoc>{Broker()};
  if (which == "topic") return std::vector<config::TableDoc>{Topic()};
  if (which == "producer") return std::vector<config::TableDoc>{Producer()};
  if (which == "consumer") return std::vector<config::TableDoc>{Consumer()};
  if (which == "client") return std::vector<config::TableDoc>{Client()};
  if (which == "bench") return std::vector<config::TableDoc>{Bench()};
  return UsageError("unknown component '" + std::string(which) +
                    "' (broker, topic, producer, consumer, client or bench); see 'rdmq config list --help'");
}

int ConfigList(const ParsedArgs& args) {
  if (args.Has("json") && args.Has("markdown")) {
    std::cerr << "rdmq: --json and --markdown exclude each other; see 'rdmq config list --help'\n";
    return kExitUsage;
  }
  auto tables = ConfigTables(args.positional().empty() ? "" : args.positional()[0]);
  if (!tables.ok()) {
    std::cerr << "rdmq: " << FormatError(tables.status()) << "\n";
    return kExitUsage;
  }
  if (args.Has("json")) {
    std::cout << config::RenderJson(*tables);
  } else if (args.Has("markdown")) {
    std::cout << config::RenderMarkdown(*tables, kIntro);
  } else {
    std::cout << config::RenderText(*tables);
  }
  return kExitOk;
}

CommandSpec ConfigListSpec() {
  return CommandSpec{
      .path = "rdmq config list",
      .usage = "[broker|topic|producer|consumer|client|bench] [--json|--markdown]",
      .summary = "Print every configuration key with its type, default, accepted values and doc.",
      .description =
          "Without a component: the broker, topic, producer, consumer and bench (rdmq-bench run)\n"
          "keys (the producer's and consumer's include the client keys). Needs no broker.",
      .options = {{"json", 0, "", "print JSON: {\"<component>\": [{name, type, default, ...}]}"},
                  {"markdown", 0, "", "print docs/configuration.md"}},
      .examples = {"rdmq config list producer", "rdmq config list --json | jq '.broker[].name'",
                   "rdmq config list --markdown > docs/configuration.md"},
      .min_positional = 0,
      .max_positional = 1};
}

}  // namespace rdmq::cli
