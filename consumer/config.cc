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
    d->Define({.name = "group.id",
               .type = Type::kString,
               .doc = "The consumer group to join on Subscribe (empty: no group; partitions are assigned by "
                      "hand and positions are not committed).",
               .component = consumer},
              Field(&ConsumerConfig::group_id));
    d->Define({.name = "group.instance.id",
               .type = Type::kString,
               .doc = "Static membership: a consumer restarted with the same id within session.timeout.ms "
                      "gets its partitions back without a rebalance.",
               .component = consumer},
              Field(&ConsumerConfig::group_instance_id));
    d->Define({.name = "partition.assignment.strategy",
               .type = Type::kString,
               .doc = "How the broker spreads partitions over members: cooperative-sticky (incremental: "
                      "only moved partitions are revoked), range or roundrobin (eager: every member revokes "
                      "everything first).",
               .component = consumer,
               .non_empty = true},
              Field(&ConsumerConfig::assignor));
    d->Define({.name = "session.timeout.ms",
               .type = Type::kDuration,
               .doc = "A member whose heartbeats stop this long is removed and its partitions move.",
               .component = consumer,
               .min = 10,
               .max = 86'400'000},
              Field(&ConsumerConfig::session_timeout));
    d->Define({.name = "max.poll.interval.ms",
               .type = Type::kDuration,
               .doc = "The rebalance timeout: a member that does not Poll (and so give up revoked "
                      "partitions) this long is removed.",
               .component = consumer,
               .min = 10,
               .max = 86'400'000},
              Field(&ConsumerConfig::max_poll_interval));
    d->Define({.name = "enable.auto.commit",
               .type = Type::kBool,
               .doc = "Commit the positions of assigned partitions every auto.commit.interval.ms (inside "
                      "Poll), before partitions are revoked, and at Close.",
               .component = consumer},
              Field(&ConsumerConfig::enable_auto_commit));
    d->Define({.name = "auto.commit.interval.ms",
               .type = Type::kDuration,
               .doc = "How often enable.auto.commit commits.",
               .component = consumer,
               .min = 1,
               .max = 86'400'000},
              Field(&ConsumerConfig::auto_commit_interval));
    d->Include(client::ClientConfigDef(), &ConsumerConfig::client);
    return d;
  }();
  return *def;
}

Status ConsumerConfig::Set(std::string_view key, std::string_view value) {
  return ConsumerConfigDef().Set(this, key, value);
}

}  // namespace rdmq::consumer
