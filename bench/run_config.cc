#include "rdmq/bench/run_config.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace rdmq::bench {
namespace {

using config::ConfigDef;
using config::Field;
using config::Type;
using config::Unit;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kHourS = 3600;

ConfigDef<Workload> WorkloadDef() {
  const std::string bench = "bench";
  ConfigDef<Workload> d("bench");
  d.Define({.name = "system",
            .type = Type::kEnum,
            .doc = "The system measured: rdmq (its own clients), kafka (rdmq's Kafka listener through "
                   "librdkafka), Redis Streams, NATS JetStream, or mem (an in-process queue, the "
                   "harness's own reference).",
            .component = bench,
            .choices = {{"mem", 0}, {"rdmq", 1}, {"redis", 2}, {"nats", 3}, {"kafka", 4}}},
           Field(&Workload::system));
  d.Define({.name = "address",
            .type = Type::kString,
            .doc = "The server: rdmq's bootstrap address, the Kafka listener's host:port (default "
                   "127.0.0.1:9092), Redis host:port (default 127.0.0.1:6379), a NATS URL (default "
                   "nats://127.0.0.1:4222).",
            .component = bench},
           Field(&Workload::address));
  d.Define({.name = "topic",
            .type = Type::kString,
            .doc = "Topic or stream name prefix, recreated for each run.",
            .component = bench,
            .non_empty = true},
           Field(&Workload::topic));
  d.Define({.name = "producers",
            .type = Type::kInt,
            .doc = "Producers.",
            .component = bench,
            .min = 1,
            .max = kMaxWorkers},
           Field(&Workload::producers));
  d.Define({.name = "consumers",
            .type = Type::kInt,
            .doc = "Consumers (0: produce only); each reads its own partitions (with fanout: all of them).",
            .component = bench,
            .min = 0,
            .max = kMaxWorkers},
           Field(&Workload::consumers));
  d.Define({.name = "fanout",
            .type = Type::kBool,
            .doc = "Every consumer reads every partition from the start, all of them once the producers "
                   "are done (one log fanned out to many readers; each consumer's own rate is reported). "
                   "rdmq and kafka.",
            .component = bench},
           Field(&Workload::fanout));
  d.Define({.name = "procs",
            .type = Type::kBool,
            .doc = "A process per producer and consumer instead of a thread.",
            .component = bench},
           Field(&Workload::processes));
  d.Define({.name = "size",
            .type = Type::kBytes,
            .doc = "Record size (the first 16 bytes carry the send time and sequence number).",
            .component = bench,
            .min = kPayloadHeaderBytes,
            .max = kGiB},
           Field(&Workload::message_size));
  d.Define({.name = "count",
            .type = Type::kInt,
            .doc = "Records per producer (0: 100000 when duration is 0, else as many as fit in duration).",
            .component = bench,
            .min = 0,
            .max = (int64_t{1} << PayloadHeader::kSeqBits) - 1,
            .default_text = "100000 unless duration is given"},
           Field(&Workload::count));
  d.Define({.name = "duration",
            .type = Type::kDuration,
            .doc = "Run for this long instead of a count (0: use count).",
            .component = bench,
            .min = 0,
            .max = kHourS * 24 * 30,
            .unit = Unit::kSeconds,
            .fractions = true},
           Field(&Workload::duration));
  d.Define({.name = "batch-size",
            .type = Type::kBytes,
            .doc = "Bytes a client gathers before sending.",
            .component = bench,
            .min = 0,
            .max = kGiB},
           Field(&Workload::batch_size));
  d.Define({.name = "linger-ms",
            .type = Type::kDuration,
            .doc = "How long a client may wait to fill a batch.",
            .component = bench,
            .min = 0,
            .max = kHourS * 1000,
            .unit = Unit::kMillis,
            .fractions = true},
           Field(&Workload::linger));
  d.Define({.name = "acks",
            .type = Type::kEnum,
            .doc = "rdmq and kafka (librdkafka): 0 does not wait for the broker, 1 waits for the leader's "
                   "commit, all (-1) for every in-sync replica (the same as 1 without followers); the "
                   "other peers always wait.",
            .component = bench,
            .choices = {{"1", 1}, {"0", 0}, {"all", -1}, {"-1", -1}}},
           Field(&Workload::acks));
  d.Define({.name = "partitions",
            .type = Type::kInt,
            .doc = "Partitions (streams for the peers).",
            .component = bench,
            .min = 1,
            .max = kMaxPartitions},
           Field(&Workload::partitions));
  d.Define({.name = "replication-factor",
            .type = Type::kInt,
            .doc = "rdmq and kafka: the topic's replication factor (a cluster of at least that many "
                   "brokers; with acks=all the ack waits for every in-sync replica). The other systems: 1.",
            .component = bench,
            .min = 1,
            .max = 16},
           Field(&Workload::replication_factor));
  d.Define({.name = "mode",
            .type = Type::kEnum,
            .doc = "rdmq producer mode: exclusive gives each partition one producer, shared lets "
                   "several append.",
            .component = bench,
            .choices = {{"exclusive", 0}, {"shared", 1}}},
           Field(&Workload::mode));
  d.Define({.name = "fabric",
            .type = Type::kEnum,
            .doc = "rdmq fabric.",
            .component = bench,
            .choices = {{"shm", 0}, {"tcp", 1}, {"verbs", 2}}},
           Field(&Workload::fabric));
  d.Define({.name = "durability",
            .type = Type::kEnum,
            .doc = "rdmq: the topic's durability; the peers: the class their setting is in (durable "
                   "= on media before the ack), so tables compare like with like.",
            .component = bench,
            .choices = {{"durable", 0}, {"visibility", 1}}},
           Field(&Workload::durability));
  d.Define({.name = "window",
            .type = Type::kInt,
            .doc = "Records in flight per producer (sent, not yet acknowledged); 1 measures latency.",
            .component = bench,
            .min = 1,
            .max = 1 << 24},
           Field(&Workload::window));
  d.Define({.name = "rate",
            .type = Type::kInt,
            .doc = "Records/s per producer, evenly spaced (0: as fast as the window allows).",
            .component = bench,
            .min = 0,
            .max = 1'000'000'000},
           config::Accessor<Workload>{[](Workload& w, const config::KeySpec&, const config::Value& v) {
                                        w.rate = static_cast<double>(v.number);
                                      },
                                      [](const Workload& w, const config::KeySpec&) {
                                        return config::Value{.number = std::llround(w.rate)};
                                      }});
  d.Define({.name = "label",
            .type = Type::kString,
            .doc = "The durability setting's text for tables, e.g. 'appendfsync always'.",
            .component = bench},
           Field(&Workload::label));
  d.Define({.name = "start-broker",
            .type = Type::kBool,
            .doc = "rdmq, kafka: start rdmq-broker (the one beside rdmq-bench) for the run.",
            .component = bench},
           Field(&Workload::start_broker));
  d.Define({.name = "broker-dir",
            .type = Type::kString,
            .doc = "rdmq, kafka: start-broker's data directory (empty: a fresh one, deleted after).",
            .component = bench},
           Field(&Workload::broker_dir));
  return d;
}

ConfigDef<RunOptions> RunOptionsDef() {
  const std::string bench = "bench";
  ConfigDef<RunOptions> d("bench");
  d.Define({.name = "server-pid",
            .type = Type::kInt,
            .doc = "The process whose CPU time is reported as the server's (0: the one the system "
                   "knows).",
            .component = bench,
            .min = 0,
            .max = std::numeric_limits<int32_t>::max()},
           Field(&RunOptions::server_pid));
  d.Define({.name = "drain-timeout",
            .type = Type::kDuration,
            .doc = "How long consumers may take to read everything after the producers are done.",
            .component = bench,
            .min = 0,
            .max = 24 * kHourS,
            .unit = Unit::kSeconds,
            .fractions = true},
           Field(&RunOptions::drain_timeout));
  d.Define({.name = "progress",
            .type = Type::kEnum,
            .doc = "Progress while it runs: tty rewrites one line in place, plain prints a line per "
                   "second, auto picks tty on a terminal and plain otherwise.",
            .component = bench,
            .choices = {{"auto", static_cast<int64_t>(ProgressMode::kAuto)},
                        {"tty", static_cast<int64_t>(ProgressMode::kTty)},
                        {"plain", static_cast<int64_t>(ProgressMode::kPlain)},
                        {"none", static_cast<int64_t>(ProgressMode::kNone)}}},
           Field(&RunOptions::progress));
  d.Define({.name = "latency-sample",
            .type = Type::kInt,
            .doc = "Measure latencies on 1 record in N, picked pseudo-randomly (every record is still "
                   "checked); 0: every record when paced or with at most 64 in flight, else 1 in 16.",
            .component = bench,
            .min = 0,
            .max = 1 << 20},
           Field(&RunOptions::latency_sample));
  return d;
}

}  // namespace

const ConfigDef<RunConfig>& RunConfigDef() {
  static const auto* def = [] {
    auto* d = new ConfigDef<RunConfig>("bench");
    d->Include(WorkloadDef(), &RunConfig::workload);
    d->Include(RunOptionsDef(), &RunConfig::run);
    d->Define({.name = "json",
               .type = Type::kString,
               .doc = "Write the result as JSON to this file.",
               .component = "bench"},
              Field(&RunConfig::json_path));
    d->Define({.name = "plot",
               .type = Type::kString,
               .doc = "Write a PNG plot of the run (gnuplot) to this file.",
               .component = "bench"},
              Field(&RunConfig::plot_path));
    d->Define({.name = "vs-mem",
               .type = Type::kBool,
               .doc = "After the run, run the same workload against mem (the harness's reference, no "
                      "server) and report this system's rates as a fraction of mem's.",
               .component = "bench"},
              Field(&RunConfig::vs_mem));
    return d;
  }();
  return *def;
}

const std::vector<std::pair<std::string, char>>& RunShortOptions() {
  static const std::vector<std::pair<std::string, char>> shorts = {{"producers", 'p'}, {"consumers", 'c'},
                                                                   {"size", 's'},      {"count", 'n'},
                                                                   {"duration", 'd'},  {"window", 'w'}};
  return shorts;
}

}  // namespace rdmq::bench
