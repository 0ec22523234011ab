// The consumer's key table (ConsumerConfigDef, consumer.h): its own keys, then the client's.
// ConsumerConfig::Set is a lookup in it.
#include <string>

#include "rdmq/consumer/consumer.h"

namespace rdmq::consumer {

const config::ConfigDef<ConsumerConfig>& ConsumerConfigDef() {
  using config::Field;
  using config::Type;
  static const auto* def = [] {
    auto* d = new config::ConfigDef<ConsumerConfig>("consumer");
    const std::string consumer = "consumer";
    d->Define({.name = "max.poll.records",
               .type = Type::kInt,
               .doc = "Most records one Poll returns.",
               .component = consumer,
               .min = 1,
               .max = 1'000'000},
              Field(&ConsumerConfig::max_poll_records));
    d->Define({.name = "fetch.max.bytes",
               .type = Type::kBytes,
               .doc = "Most bytes one READ of a partition's log fetches.",
               .component = consumer,
               .min = 1024,
               .max = 1LL << 30},
              Field(&ConsumerConfig::fetch_max_bytes));
    d->Define({.name = "auto.offset.reset",
               .type = Type::kEnum,
               .doc = "Where a partition without a position, or with one below the log start, starts: "
                      "earliest, latest, or none (Poll fails with OFFSET_OUT_OF_RANGE).",
               .component = consumer,
               .choices = {{"earliest", static_cast<int64_t>(OffsetReset::kEarliest)},
                           {"latest", static_cast<int64_t>(OffsetReset::kLatest)},
                           {"none", static_cast<int64_t>(OffsetReset::kNone)}}},
              Field(&ConsumerConfig::auto_offset_reset));
    d->Define({.name = "check.crcs",
               .type = Type::kBool,
               .doc = "Check every record batch's CRC-32C before returning its records.",
               .component = consumer},
              Field(&ConsumerConfig::check_crcs));
    d->Define({.name = "rdmq.idle.spin.us",
               .type = Type::kDuration,
               .doc = "An idle Poll polls the logs this long before it sleeps until a commit wakes it.",
               .component = consumer,
               .min = 0,
               .max = 10'000'000,
               .unit = config::Unit::kMicros},
              Field(&ConsumerConfig::spin));
    d->Include(client::ClientConfigDef(), &ConsumerConfig::client);
    return d;
  }();
  return *def;
}

Status ConsumerConfig::Set(std::string_view key, std::string_view value) {
  return ConsumerConfigDef().Set(this, key, value);
}

}  // namespace rdmq::consumer
