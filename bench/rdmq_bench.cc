// rdmq-bench: end-to-end produce/consume benchmark for rdmq (its own clients, and librdkafka
// through its Kafka listener) and its peers (Redis Streams, NATS JetStream), plus the machine's physical
// limits and the comparison table.
//
//   rdmq-bench run    --system redis --size 1024 --count 200000 --json r.json --plot r.png
//   rdmq-bench limits [--quick] [--dir DIR] [--json limits.json]
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
#include "rdmq/bench/run_config.h"
#include "rdmq/bench/system.h"
#include "rdmq/common/main.h"
#include "rdmq/config/args.h"
#include "rdmq/config/options.h"

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
    "  rdmq-bench limits [--quick] [--dir DIR] [--json FILE]\n"
    "                                   memcpy, loopback TCP, msync and a fresh file's first\n"
    "                                   writes, in DIR (default: the temporary directory)\n"
    "  rdmq-bench table [--reference SYSTEM] [--markdown] RESULT.json...\n"
    "                                   comparison table of earlier runs, with ratios\n"
    "  rdmq-bench get RESULT.json dotted.key   one value of a result (for scripts)\n"
    "  rdmq-bench systems                      the systems this build can drive\n\n"
    "Exit status: 0 ok, 1 run failed, 2 usage error, 3 records lost/duplicated/corrupt.\n"
    "Systems: rdmq (its broker at --address, or started with --start-broker), kafka (rdmq's Kafka\n"
    "listener through librdkafka: host:port, default 127.0.0.1:9092, or --start-broker), redis\n"
    "(host:port, default 127.0.0.1:6379), nats (URL, default nats://127.0.0.1:4222), mem (in-process\n"
    "reference).";

// If Ctrl-C (or SIGTERM) stopped the run, die of that signal now that the partial results are
// written, so a calling shell sees the interruption and stops rather than going on.
void DieOfInterrupt() {
  if (const int signo = InterruptSignal(); signo != 0) {
    std::fflush(nullptr);
    std::signal(signo, SIG_DFL);
    std::raise(signo);
  }
}

// The same workload against mem, quietly: the harness's ceiling for --vs-mem.
Result<Report> RunMemReference(const Workload& w, const RunOptions& ro) {
  Workload m = w;
  m.system = "mem";
  m.address.clear();
  m.start_broker = false;
  m.broker_dir.clear();
  m.label.clear();
  RunOptions quiet = ro;
  quiet.progress = ProgressMode::kNone;
  quiet.server_pid = 0;
  RDMQ_RETURN_IF_ERROR(ValidateWorkload(m));
  std::unique_ptr<System> system = MakeMemSystem(m);
  return RunBenchmark(m, *system, quiet);
}

int RunCommand(const std::vector<std::string>& args) {
  config::CommandSpec spec{
      .path = "rdmq-bench",
      .usage = "[run] [options]",
      .summary =
          "End-to-end benchmark of rdmq, its Kafka listener and peer brokers (Redis Streams, NATS "
          "JetStream).",
      .description = kRunDescription,
      // One option per key of the "bench" table (`rdmq config list bench`), plus the client
      // settings handed through to rdmq's producers and consumers.
      .options = config::OptionsFromKeys(RunConfigDef().Describe(), RunShortOptions())};
  spec.options.push_back({"producer-set", 0, "KEY=VALUE",
                          "rdmq: a producer setting (repeatable; `rdmq config list producer`); kafka: a "
                          "librdkafka property (compression.type=lz4)",
                          true});
  spec.options.push_back({"consumer-set", 0, "KEY=VALUE",
                          "rdmq: a consumer setting (repeatable; `rdmq config list consumer`); kafka: a "
                          "librdkafka property (fetch.wait.max.ms=10)",
                          true});
  int exit = 0;
  const auto a = config::ParseCommandLine(spec, args, &exit);
  if (!a) return exit;
  RunConfig c;
  if (Status s = config::ApplyOptions(RunConfigDef(), *a, &c); !s.ok())
    return Usage(std::string(s.context()));
  Workload& w = c.workload;
  const RunOptions& ro = c.run;
  w.producer_settings = a->GetAll("producer-set");
  w.consumer_settings = a->GetAll("consumer-set");
  if (w.count == 0 && w.duration.count() == 0) w.count = 100000;
  if (Status s = ValidateWorkload(w); !s.ok()) return Usage(std::string(s.context()));
  if (c.vs_mem && w.fanout)
    return Usage("--vs-mem: mem gives each partition one reader, so it has no --fanout run");
  const std::string& json_path = c.json_path;
  const std::string& plot_path = c.plot_path;

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
  int rc = report->CountsOk() ? 0 : kExitCounts;
  if (c.vs_mem && InterruptSignal() == 0) {
    // The reference on the same workload, measured now (same machine, same load), after this
    // system's run and its cleanup (a broker started for it is stopped by then).
    if (w.system == "mem") {
      report->mem_produce_records_per_s = report->produce_records_per_s();
      report->mem_consume_records_per_s = report->consume_records_per_s();
    } else if (Result<Report> mem = RunMemReference(w, ro); mem.ok()) {
      report->mem_produce_records_per_s = mem->produce_records_per_s();
      report->mem_consume_records_per_s = mem->consume_records_per_s();
      if (!mem->CountsOk()) {
        std::fprintf(stderr, "rdmq-bench: the mem reference run's check failed (a harness bug)\n");
        rc = kExitCounts;
      }
    } else {
      std::fprintf(stderr, "rdmq-bench: the mem reference run failed: %s\n", mem.status().ToString().c_str());
      rc = kExitFailed;
    }
  }
  PrintSummary(*report, stdout);
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
  const config::CommandSpec spec{
      .path = "rdmq-bench limits",
      .usage = "[--quick] [--dir DIR] [--json FILE]",
      .summary =
          "The machine's physical limits: memcpy, loopback TCP bandwidth and "
          "round trip, msync of a 100-byte write to a mapped file, the "
          "bandwidth of 1 MiB writes each made durable with msync, and how fast "
          "a fresh allocated file takes its first writes through a shared "
          "mapping (what a new log segment costs; its slowest 1 MiB too).",
      .options = {{"quick", 0, "", "shorter measurements"},
                  {"dir", 0, "DIR",
                   "where the msync and fresh-file limits' files go: the file system of the "
                   "broker's data (default: the temporary directory, as "
                   "--start-broker uses)"},
                  {"json", 0, "FILE", "write the figures as JSON to this file"}}};
  int exit = 0;
  const auto a = config::ParseCommandLine(spec, args, &exit);
  if (!a) return exit;
  quick = a->Has("quick");
  json_path = a->GetOr("json", "");
  Result<Limits> l = MeasureLimits(quick, a->GetOr("dir", ""));
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
