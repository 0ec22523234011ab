// rdmq-bench: end-to-end produce/consume benchmark for rdmq and its peers (Redis Streams, NATS
// JetStream), plus the machine's physical limits and the comparison table.
//
//   rdmq-bench run    --system redis --size 1024 --count 200000 --json r.json --plot r.png
//   rdmq-bench limits [--quick] [--json limits.json]
//   rdmq-bench table  [--reference rdmq] [--markdown] r1.json r2.json ...
//
// `run` is the default when the first argument is an option. Exit status: 0 when the run
// completed and every count checked out, 1 when it failed, 2 for a usage error, 3 when it
// completed but records were lost, duplicated or corrupt.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "rdmq/bench/driver.h"
#include "rdmq/bench/limits.h"
#include "rdmq/bench/report.h"
#include "rdmq/bench/system.h"
#include "rdmq/common/main.h"
#include "rdmq/config/args.h"

using namespace rdmq;
using namespace rdmq::bench;

namespace {

constexpr int kExitFailed = 1, kExitUsage = 2, kExitCounts = 3;

int Usage(const std::string& msg) {
  std::fprintf(stderr, "rdmq-bench: %s (try --help)\n", msg.c_str());
  return kExitUsage;
}

constexpr const char* kRunDescription =
    "Commands:\n"
    "  rdmq-bench [run] [options]       run one workload against one system\n"
    "  rdmq-bench limits [--quick] [--json FILE]\n"
    "                                   memcpy, loopback TCP bandwidth and round trip\n"
    "  rdmq-bench table [--reference SYSTEM] [--markdown] RESULT.json...\n"
    "                                   comparison table of earlier runs, with ratios\n"
    "  rdmq-bench get RESULT.json dotted.key   one value of a result (for scripts)\n"
    "  rdmq-bench systems                      the systems this build can drive\n\n"
    "Exit status: 0 ok, 1 run failed, 2 usage error, 3 records lost/duplicated/corrupt.\n"
    "Systems: rdmq (its broker at --address, or started with --start-broker), redis (host:port,\n"
    "default 127.0.0.1:6379), nats (URL, default nats://127.0.0.1:4222), mem (in-process reference).";

// If Ctrl-C (or SIGTERM) stopped the run, die of that signal now that the partial results are
// written, so a calling shell sees the interruption and stops rather than going on.
void DieOfInterrupt() {
  if (const int signo = InterruptSignal(); signo != 0) {
    std::fflush(nullptr);
    std::signal(signo, SIG_DFL);
    std::raise(signo);
  }
}

int RunCommand(const std::vector<std::string>& args) {
  Workload w;
  RunOptions ro;
  double duration_s = 0, linger_ms = 0, drain_s = 30;
  std::string json_path, plot_path, progress = "auto";
  const config::CommandSpec spec{
      .path = "rdmq-bench",
      .usage = "[run] [options]",
      .summary = "End-to-end benchmark of rdmq and peer brokers (Redis Streams, NATS JetStream).",
      .description = kRunDescription,
      .options = {
          {"system", 0, "NAME", "rdmq | redis | nats | mem (default mem)"},
          {"address", 0, "ADDR", "server address (rdmq bootstrap, redis host:port, nats URL)"},
          {"topic", 0, "NAME", "topic / stream name prefix, recreated per run (default bench)"},
          {"producers", 'p', "N", "producers (default 1)"},
          {"consumers", 'c', "N", "consumers (0: produce only; default 1)"},
          {"procs", 0, "", "a process per producer/consumer instead of a thread"},
          {"size", 's', "BYTES", "message size in bytes (>= 16; default 100)"},
          {"count", 'n', "N", "records per producer (default 100000 unless --duration)"},
          {"duration", 'd', "SECONDS", "run for this many seconds instead of --count"},
          {"batch-size", 0, "BYTES", "bytes a client batches before sending (default 262144)"},
          {"linger-ms", 0, "MS", "how long a client may wait to fill a batch (fractions allowed; default 0)"},
          {"acks", 0, "N", "0 or 1 (rdmq; the peers always acknowledge; default 1)"},
          {"partitions", 0, "N", "partitions (streams for the peers; default 1)"},
          {"mode", 0, "MODE", "rdmq producer mode: exclusive | shared (default exclusive)"},
          {"fabric", 0, "NAME", "rdmq fabric: shm | tcp | verbs (default shm)"},
          {"durability", 0, "CLASS",
           "rdmq topic durability: durable | visibility; for peers the class of their setting\n(default "
           "durable)"},
          {"window", 'w', "N", "records in flight per producer (1: latency; default 1024)"},
          {"rate", 0, "N", "records/s per producer, evenly spaced (0: unlimited; default 0)"},
          {"label", 0, "TEXT", "durability setting text for tables, e.g. 'appendfsync always'"},
          {"producer-set", 0, "KEY=VALUE",
           "rdmq: a producer setting (repeatable; `rdmq config list producer`)", true},
          {"consumer-set", 0, "KEY=VALUE",
           "rdmq: a consumer setting (repeatable; `rdmq config list consumer`)", true},
          {"start-broker", 0, "", "rdmq: start rdmq-broker (beside rdmq-bench) for this run"},
          {"broker-dir", 0, "DIR", "rdmq: --start-broker's data directory (default: fresh, deleted after)"},
          {"server-pid", 0, "PID", "pid of the server whose CPU time to report"},
          {"drain-timeout", 0, "SECONDS", "seconds consumers get to catch up at the end (default 30)"},
          {"json", 0, "FILE", "write the result as JSON to this file"},
          {"plot", 0, "FILE", "write a PNG plot (gnuplot) to this file"},
          {"progress", 0, "MODE", "auto | tty | plain | none (default auto)"}}};
  int exit = 0;
  const auto a = config::ParseCommandLine(spec, args, &exit);
  if (!a) return exit;
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  constexpr int64_t kIntMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();
  const Status parsed = [&]() -> Status {
    w.system = a->GetOr("system", w.system);
    w.address = a->GetOr("address", w.address);
    w.topic = a->GetOr("topic", w.topic);
    RDMQ_ASSIGN_OR_RETURN(const int64_t producers, a->GetInt("producers", w.producers, kIntMin, kIntMax));
    RDMQ_ASSIGN_OR_RETURN(const int64_t consumers, a->GetInt("consumers", w.consumers, kIntMin, kIntMax));
    RDMQ_ASSIGN_OR_RETURN(const int64_t size, a->GetInt("size", w.message_size, 0, kU32Max));
    RDMQ_ASSIGN_OR_RETURN(const int64_t count, a->GetInt("count", 0, 0, std::numeric_limits<int64_t>::max()));
    RDMQ_ASSIGN_OR_RETURN(duration_s, a->GetDouble("duration", 0, 0, 1e9));
    RDMQ_ASSIGN_OR_RETURN(const int64_t batch, a->GetInt("batch-size", w.batch_size, 0, kU32Max));
    RDMQ_ASSIGN_OR_RETURN(linger_ms, a->GetDouble("linger-ms", 0, 0, 1e9));
    RDMQ_ASSIGN_OR_RETURN(const int64_t acks, a->GetInt("acks", w.acks, kIntMin, kIntMax));
    RDMQ_ASSIGN_OR_RETURN(const int64_t partitions, a->GetInt("partitions", w.partitions, kIntMin, kIntMax));
    RDMQ_ASSIGN_OR_RETURN(const int64_t window, a->GetInt("window", w.window, 0, kU32Max));
    RDMQ_ASSIGN_OR_RETURN(w.rate, a->GetDouble("rate", 0, 0, 1e12));
    RDMQ_ASSIGN_OR_RETURN(const int64_t server_pid, a->GetInt("server-pid", 0, 0, kIntMax));
    RDMQ_ASSIGN_OR_RETURN(drain_s, a->GetDouble("drain-timeout", drain_s, 0, 1e9));
    w.producers = static_cast<int>(producers);
    w.consumers = static_cast<int>(consumers);
    w.processes = a->Has("procs");
    w.message_size = static_cast<uint32_t>(size);
    w.count = static_cast<uint64_t>(count);
    w.batch_size = static_cast<uint32_t>(batch);
    w.acks = static_cast<int>(acks);
    w.partitions = static_cast<int>(partitions);
    w.mode = a->GetOr("mode", w.mode);
    w.fabric = a->GetOr("fabric", w.fabric);
    w.durability = a->GetOr("durability", w.durability);
    w.window = static_cast<uint32_t>(window);
    w.label = a->GetOr("label", w.label);
    w.producer_settings = a->GetAll("producer-set");
    w.consumer_settings = a->GetAll("consumer-set");
    w.start_broker = a->Has("start-broker");
    w.broker_dir = a->GetOr("broker-dir", w.broker_dir);
    ro.server_pid = static_cast<int>(server_pid);
    json_path = a->GetOr("json", "");
    plot_path = a->GetOr("plot", "");
    progress = a->GetOr("progress", progress);
    return Status::Ok();
  }();
  if (!parsed.ok()) return Usage(std::string(parsed.context()));
  w.duration = std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  if (duration_s > 0 && w.duration.count() == 0) return Usage("--duration must be at least 0.001 s");
  w.linger = std::chrono::microseconds(static_cast<int64_t>(linger_ms * 1000));
  ro.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(drain_s * 1000));
  if (w.count == 0 && w.duration.count() == 0) w.count = 100000;
  if (progress == "auto") {
    ro.progress = ProgressMode::kAuto;
  } else if (progress == "tty") {
    ro.progress = ProgressMode::kTty;
  } else if (progress == "plain") {
    ro.progress = ProgressMode::kPlain;
  } else if (progress == "none") {
    ro.progress = ProgressMode::kNone;
  } else {
    return Usage("--progress must be auto, tty, plain or none, not '" + progress + "'");
  }
  if (Status s = ValidateWorkload(w); !s.ok()) return Usage(std::string(s.context()));

  auto system = MakeSystem(w);
  if (!system.ok()) {
    std::fprintf(stderr, "rdmq-bench: %s\n", system.status().ToString().c_str());
    return system.status().is(Errc::kInvalidArgument) ? kExitUsage : kExitFailed;
  }
  Result<Report> report = RunBenchmark(w, **system, ro);
  if (!report.ok()) {
    std::fprintf(stderr, "rdmq-bench: %s run failed: %s\n", w.system.c_str(),
                 report.status().ToString().c_str());
    DieOfInterrupt();
    return kExitFailed;
  }
  PrintSummary(*report, stdout);
  int rc = report->CountsOk() ? 0 : kExitCounts;
  if (!json_path.empty()) {
    if (Status s = WriteJson(ReportJson(*report), json_path); !s.ok()) {
      std::fprintf(stderr, "rdmq-bench: %s\n", s.ToString().c_str());
      rc = kExitFailed;
    } else {
      std::printf("json       %s\n", json_path.c_str());
    }
  }
  if (!plot_path.empty()) {
    if (Status s = WritePlot(*report, plot_path); !s.ok()) {
      std::fprintf(stderr, "rdmq-bench: plot: %s\n", s.ToString().c_str());
      rc = kExitFailed;
    } else {
      std::printf("plot       %s\n", plot_path.c_str());
    }
  }
  DieOfInterrupt();
  return rc;
}

int LimitsCommand(const std::vector<std::string>& args) {
  bool quick = false;
  std::string json_path;
  const config::CommandSpec spec{.path = "rdmq-bench limits",
                                 .usage = "[--quick] [--json FILE]",
                                 .summary =
                                     "The machine's physical limits: memcpy, loopback TCP bandwidth and "
                                     "round trip.",
                                 .options = {{"quick", 0, "", "shorter measurements"},
                                             {"json", 0, "FILE", "write the figures as JSON to this file"}}};
  int exit = 0;
  const auto a = config::ParseCommandLine(spec, args, &exit);
  if (!a) return exit;
  quick = a->Has("quick");
  json_path = a->GetOr("json", "");
  Result<Limits> l = MeasureLimits(quick);
  if (!l.ok()) {
    std::fprintf(stderr, "rdmq-bench limits: %s\n", l.status().ToString().c_str());
    return kExitFailed;
  }
  PrintLimits(*l, stdout);
  if (!json_path.empty()) {
    if (Status s = WriteJson(LimitsJson(*l), json_path); !s.ok()) {
      std::fprintf(stderr, "rdmq-bench: %s\n", s.ToString().c_str());
      return kExitFailed;
    }
  }
  return 0;
}

int TableCommand(const std::vector<std::string>& args) {
  std::string reference = "rdmq";
  bool markdown = false;
  std::vector<std::string> files;
  const config::CommandSpec spec{
      .path = "rdmq-bench table",
      .usage = "[--reference SYSTEM] [--markdown] RESULT.json...",
      .summary = "Comparison table of result files, with ratios.",
      .options = {{"reference", 0, "SYSTEM", "system the ratios compare against (default rdmq)"},
                  {"markdown", 0, "", "print GitHub markdown"}},
      .max_positional = std::numeric_limits<size_t>::max()};
  int exit = 0;
  const auto a = config::ParseCommandLine(spec, args, &exit);
  if (!a) return exit;
  reference = a->GetOr("reference", reference);
  markdown = a->Has("markdown");
  files = a->positional();
  if (files.empty()) return Usage("table needs at least one result file");
  std::vector<TableRow> rows;
  for (const std::string& f : files) {
    Result<nlohmann::json> j = ReadJson(f);
    if (!j.ok()) {
      std::fprintf(stderr, "rdmq-bench table: %s\n", j.status().ToString().c_str());
      return kExitFailed;
    }
    rows.push_back(RowFromJson(*j));
  }
  if (markdown) {
    PrintMarkdownTable(rows, reference, stdout);
  } else {
    PrintTable(rows, reference, stdout);
  }
  return 0;
}

// get FILE a.b.c: prints one value of a result file (for scripts without jq).
int GetCommand(const std::vector<std::string>& args) {
  if (args.size() != 2) return Usage("usage: rdmq-bench get RESULT.json dotted.key");
  Result<nlohmann::json> j = ReadJson(args[0]);
  if (!j.ok()) {
    std::fprintf(stderr, "rdmq-bench get: %s\n", j.status().ToString().c_str());
    return kExitFailed;
  }
  const nlohmann::json* at = &*j;
  const std::string& path = args[1];
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) {
      std::fprintf(stderr, "rdmq-bench get: %s has no '%s'\n", args[0].c_str(), path.c_str());
      return kExitFailed;
    }
    at = &(*at)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (at->is_string()) {
    std::printf("%s\n", at->get<std::string>().c_str());
  } else {
    std::printf("%s\n", at->dump().c_str());
  }
  return 0;
}

}  // namespace

static int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = "run";
  if (!args.empty() && !args[0].empty() && args[0][0] != '-') {
    command = args[0];
    args.erase(args.begin());
  }
  if (command == "run") return RunCommand(args);
  if (command == "limits") return LimitsCommand(args);
  if (command == "table") return TableCommand(args);
  if (command == "get") return GetCommand(args);
  if (command == "systems") {
    for (const char* name : kSystems) std::printf("%s\n", name);
    return 0;
  }
  if (command == "help") {
    return RunCommand({"--help"});
  }
  return Usage("unknown command '" + command + "' (run, limits, table, get, systems)");
}

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-bench", [&] { return Main(argc, argv); });
}
