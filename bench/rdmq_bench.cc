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
#include <boost/program_options.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "rdmq/bench/driver.h"
#include "rdmq/bench/limits.h"
#include "rdmq/bench/report.h"
#include "rdmq/bench/system.h"

namespace po = boost::program_options;
using namespace rdmq;
using namespace rdmq::bench;

namespace {

constexpr int kExitFailed = 1, kExitUsage = 2, kExitCounts = 3;

int Usage(const std::string& msg) {
  std::fprintf(stderr, "rdmq-bench: %s (try --help)\n", msg.c_str());
  return kExitUsage;
}

void PrintHelp(const po::options_description& run, const po::options_description& other) {
  std::cout
      << "rdmq-bench: end-to-end benchmark of rdmq and peer brokers (Redis Streams, NATS JetStream)\n\n"
         "usage: rdmq-bench [run] [options]       run one workload against one system\n"
         "       rdmq-bench limits [--quick] [--json FILE]\n"
         "                                        memcpy, loopback TCP bandwidth and round trip\n"
         "       rdmq-bench table [--reference SYSTEM] [--markdown] RESULT.json...\n"
         "                                        comparison table of earlier runs, with ratios\n"
         "       rdmq-bench get RESULT.json dotted.key   one value of a result (for scripts)\n"
         "       rdmq-bench systems                      the systems this build can drive\n\n"
      << run << "\n"
      << other
      << "\nExit status: 0 ok, 1 run failed, 2 usage error, 3 records lost/duplicated/corrupt.\n"
         "Systems: rdmq (its broker at --address, or started with --start-broker), redis (host:port, "
         "default 127.0.0.1:6379), nats (URL, default nats://127.0.0.1:4222), mem (in-process reference).\n";
}

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
  po::options_description run("run options");
  run.add_options()("help,h", "this help")("system", po::value(&w.system)->default_value(w.system),
                                           "rdmq | redis | nats | mem")(
      "address", po::value(&w.address), "server address (rdmq bootstrap, redis host:port, nats URL)")(
      "topic", po::value(&w.topic)->default_value(w.topic), "topic / stream name prefix (recreated per run)")(
      "producers,p", po::value(&w.producers)->default_value(w.producers), "producers")(
      "consumers,c", po::value(&w.consumers)->default_value(w.consumers), "consumers (0: produce only)")(
      "procs", po::bool_switch(&w.processes), "a process per producer/consumer instead of a thread")(
      "size,s", po::value(&w.message_size)->default_value(w.message_size), "message size in bytes (>= 16)")(
      "count,n", po::value(&w.count), "records per producer")("duration,d", po::value(&duration_s),
                                                              "run for this many seconds instead of --count")(
      "batch-size", po::value(&w.batch_size)->default_value(w.batch_size),
      "bytes a client batches before sending")(
      "linger-ms", po::value(&linger_ms)->default_value(0),
      "how long a client may wait to fill a batch (fractions allowed)")(
      "acks", po::value(&w.acks)->default_value(w.acks), "0 or 1 (rdmq; the peers always acknowledge)")(
      "partitions", po::value(&w.partitions)->default_value(w.partitions),
      "partitions (streams for the peers)")("mode", po::value(&w.mode)->default_value(w.mode),
                                            "rdmq producer mode: exclusive | shared")(
      "fabric", po::value(&w.fabric)->default_value(w.fabric), "rdmq fabric: shm | tcp | verbs")(
      "durability", po::value(&w.durability)->default_value(w.durability),
      "rdmq topic durability: durable | visibility; for peers the class of their setting")(
      "window,w", po::value(&w.window)->default_value(w.window),
      "records in flight per producer (1: latency)")("rate", po::value(&w.rate)->default_value(0),
                                                     "records/s per producer, evenly spaced (0: unlimited)")(
      "label", po::value(&w.label), "durability setting text for tables, e.g. 'appendfsync always'")(
      "producer-set", po::value(&w.producer_settings), "rdmq: a producer setting key=value (repeatable)")(
      "consumer-set", po::value(&w.consumer_settings), "rdmq: a consumer setting key=value (repeatable)")(
      "start-broker", po::bool_switch(&w.start_broker),
      "rdmq: start rdmq-broker (beside rdmq-bench) for this run")(
      "broker-dir", po::value(&w.broker_dir),
      "rdmq: --start-broker's data directory (default: fresh, deleted after)")(
      "server-pid", po::value(&ro.server_pid), "pid of the server whose CPU time to report")(
      "drain-timeout", po::value(&drain_s)->default_value(drain_s),
      "seconds consumers get to catch up at the end")("json", po::value(&json_path),
                                                      "write the result as JSON to this file")(
      "plot", po::value(&plot_path), "write a PNG plot (gnuplot) to this file")(
      "progress", po::value(&progress)->default_value(progress), "auto | tty | plain | none");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(run).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return Usage(e.what());
  }
  if (vm.count("help")) {
    po::options_description none("");
    PrintHelp(run, none);
    return 0;
  }
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
  po::options_description opts("limits options");
  opts.add_options()("help,h", "this help")("quick", po::bool_switch(&quick), "shorter measurements")(
      "json", po::value(&json_path), "write the figures as JSON to this file");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return Usage(e.what());
  }
  if (vm.count("help")) {
    std::cout << "rdmq-bench limits: the machine's physical limits\n" << opts;
    return 0;
  }
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
  po::options_description opts("table options");
  opts.add_options()("help,h", "this help")("reference", po::value(&reference)->default_value(reference),
                                            "system the ratios compare against")(
      "markdown", po::bool_switch(&markdown), "print GitHub markdown")("files", po::value(&files),
                                                                       "result files");
  po::positional_options_description pos;
  pos.add("files", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return Usage(e.what());
  }
  if (vm.count("help")) {
    std::cout << "rdmq-bench table: comparison of result files\n" << opts;
    return 0;
  }
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
  std::string path = args[1];
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

int main(int argc, char** argv) {
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
