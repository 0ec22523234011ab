// rdmq-produce: standard input to records, one per line (like `kcat -P`).
//
//   seq 1 1000 | rdmq-produce orders
//   printf 'user1:login\nuser2:logout\n' | rdmq-produce -K : -H source=shell orders
//
// Every error is reported on stderr with the line it belongs to; the exit status is 1 if any
// record failed, 2 on a bad command line, 0 when every record was acknowledged (acks=1) or sent
// (acks=0). SIGINT/SIGTERM stop reading; what was read is still flushed.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/cli/records.h"
#include "rdmq/common/main.h"
#include "rdmq/config/render.h"
#include "rdmq/producer/producer.h"

namespace rdmq::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

CommandSpec Spec() {
  CommandSpec s;
  s.path = "rdmq-produce";
  s.usage = "[options] TOPIC";
  s.summary = "Read standard input and produce one record per line to TOPIC.";
  s.description =
      "Lines are split at --delimiter (default newline); the last line needs none. With -K the key\n"
      "is the text before the first key delimiter and the value the rest; a line without the key\n"
      "delimiter is an error. Records with a key go to the key's partition (Kafka's murmur2), records\n"
      "without one stick to a partition per batch, unless -p chooses it.\n"
      "Errors are printed per line on stderr (\"rdmq-produce: line 17: ...\"). Exit status: 0 every\n"
      "record was acknowledged, 1 some record failed, 2 bad command line.";
  s.options = {
      {"broker", 'b', "ADDR", "broker address (default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock)"},
      {"partition", 'p', "N", "produce every record to partition N"},
      {"key-delimiter", 'K', "DELIM", "split each line into key DELIM value (escapes: \\t \\n \\xHH ...)"},
      {"header", 'H', "KEY=VALUE", "add this header to every record; repeatable", true},
      {"acks", 'a', "ACKS",
       "0 (fire and forget), 1 (the leader committed it; default) or all (every in-sync replica holds it)"},
      {"delimiter", 'D', "DELIM", "record delimiter (default \\n)"},
      {"skip-empty", 0, "", "skip empty lines instead of producing empty values"},
      {"compression", 'z', "CODEC",
       "compress batches: none, gzip, snappy, lz4 or zstd (-X compression.type)"},
      {"producer-config", 'X', "KEY=VALUE", "a producer setting (listed below); repeatable", true},
      {"verbose", 'v', "", "print each record's partition and offset (\"line 3: partition 0 offset 41\")"},
  };
  s.examples = {"seq 1 1000000 | rdmq-produce orders",
                "printf 'user1:login\\nuser2:logout\\n' | rdmq-produce -K : orders",
                "rdmq-produce -p 0 -H source=cron -X linger.ms=5 logs < app.log",
                "rdmq-produce -z zstd -X linger.ms=20 events < events.jsonl",
                "rdmq-produce --acks 0 -X batch.size=1048576 metrics < samples.txt"};
  s.settings_title = "Producer settings (-X KEY=VALUE; what each does: rdmq config list producer)";
  s.settings = config::RenderKeysBrief(producer::ProducerConfigDef().Describe(), 2);
  s.min_positional = 1;
  s.max_positional = 1;
  return s;
}

int Usage(const Status& s) {
  std::cerr << "rdmq-produce: " << FormatError(s) << "\n";
  return kExitUsage;
}

struct Shared {
  std::mutex mu;
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> acked{0};
  bool verbose = false;
};

int Main(int argc, char** argv) {
  int exit_code = kExitOk;
  const auto a = config::ParseCommandLine(Spec(), argc, argv, &exit_code);
  if (!a) return exit_code;
  const std::string topic = a->positional()[0];

  producer::ProducerConfig cfg;
  cfg.client.client_name = "rdmq-produce";
  if (Status s = ApplyKeyValues(*a, "producer-config", cfg); !s.ok()) return Usage(s);
  if (auto b = a->Get("broker")) cfg.client.bootstrap = *b;
  if (auto acks = a->Get("acks")) {
    if (*acks != "0" && *acks != "1" && *acks != "all" && *acks != "-1") {
      return Usage(UsageError("--acks: '" + *acks + "' is not 0, 1 or all"));
    }
    if (Status s = cfg.Set("acks", *acks); !s.ok()) return Usage(UsageError("--acks: " + FormatError(s)));
  }
  if (auto z = a->Get("compression")) {
    if (Status s = cfg.Set("compression.type", *z); !s.ok()) {
      return Usage(UsageError("--compression: " + FormatError(s)));
    }
  }
  auto partition = a->GetInt("partition", -1, 0, 4095);
  if (!partition.ok()) return Usage(partition.status());
  std::string key_delim;
  if (auto k = a->Get("key-delimiter")) {
    auto u = Unescape(*k, "--key-delimiter");
    if (!u.ok()) return Usage(u.status());
    if (u->empty()) return Usage(UsageError("--key-delimiter: must not be empty"));
    key_delim = std::move(*u);
  }
  std::string delim = "\n";
  if (auto d = a->Get("delimiter")) {
    auto u = Unescape(*d, "--delimiter");
    if (!u.ok()) return Usage(u.status());
    if (u->empty()) return Usage(UsageError("--delimiter: must not be empty"));
    delim = std::move(*u);
  }
  std::vector<client::Header> headers;
  for (const auto& h : a->GetAll("header")) {
    auto p = ParseKeyValue(h, "--header");
    if (!p.ok()) return Usage(p.status());
    headers.push_back(client::Header{p->first, p->second});
  }
  const bool skip_empty = a->Has("skip-empty");

  // The producer's threads must not take SIGINT/SIGTERM: they go to this thread, interrupting
  // the read of standard input.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  auto created = producer::Producer::Create(cfg);
  pthread_sigmask(SIG_UNBLOCK, &sigs, nullptr);
  if (!created.ok()) {
    std::cerr << "rdmq-produce: cannot start a producer for " << cfg.client.ResolvedBootstrap() << ": "
              << FormatError(created.status()) << "\n";
    return kExitError;
  }
  auto& prod = *created;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;  // no SA_RESTART: read(2) returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  // Fail early and clearly on a topic or partition that does not exist.
  auto count = prod->PartitionCount(topic);
  if (!count.ok()) {
    std::cerr << "rdmq-produce: topic " << topic << ": " << FormatError(count.status()) << "\n";
    return kExitError;
  }
  if (*partition >= *count) {
    std::cerr << "rdmq-produce: topic " << topic << " has " << *count << " partition"
              << (*count == 1 ? "" : "s") << "; -p " << *partition << " does not exist\n";
    return kExitError;
  }

  Shared shared;
  shared.verbose = a->Has("verbose");
  DelimitedReader reader(STDIN_FILENO, delim);
  uint64_t sent = 0;
  uint64_t bad_lines = 0;
  std::string_view line;
  while (!g_stop.load()) {
    auto more = reader.Next(&line);
    if (!more.ok()) {
      if (more.status().is(Errc::kCancelled)) break;  // a signal
      std::cerr << "rdmq-produce: " << FormatError(more.status()) << "\n";
      ++bad_lines;
      break;
    }
    if (!*more) break;
    const uint64_t n = reader.record_number();
    if (skip_empty && line.empty()) continue;
    auto split = SplitLine(line, key_delim);
    if (!split.ok()) {
      std::lock_guard<std::mutex> lock(shared.mu);
      std::cerr << "rdmq-produce: line " << n << ": " << FormatError(split.status()) << "\n";
      ++bad_lines;
      continue;
    }
    producer::ProducerRecord rec;
    rec.topic = topic;
    rec.partition = static_cast<int32_t>(*partition);
    rec.key = split->key;
    rec.value = split->value;
    rec.headers = headers;
    Status s = prod->Send(rec, [&shared, n](const Result<producer::RecordMetadata>& md) {
      if (!md.ok()) {
        shared.failed.fetch_add(1);
        std::lock_guard<std::mutex> lock(shared.mu);
        std::cerr << "rdmq-produce: line " << n << ": " << FormatError(md.status()) << "\n";
        return;
      }
      shared.acked.fetch_add(1);
      if (shared.verbose) {
        std::lock_guard<std::mutex> lock(shared.mu);
        std::cout << "line " << n << ": partition " << md->partition << " offset " << md->offset << "\n";
      }
    });
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(shared.mu);
      std::cerr << "rdmq-produce: line " << n << ": " << FormatError(s) << "\n";
      ++bad_lines;
      continue;
    }
    ++sent;
  }
  // Each record fails by itself once delivery.timeout.ms passes (the broker away meanwhile: the
  // producer reconnects and resends until then), so this waits a little longer than that for
  // them to report their own errors; Close then has nothing left to wait for.
  Status flushed = prod->Flush(cfg.delivery_timeout + std::chrono::seconds(1));
  Status closed = prod->Close(std::chrono::seconds(5));
  std::cout.flush();
  const uint64_t failed = shared.failed.load() + bad_lines;
  if (!flushed.ok()) std::cerr << "rdmq-produce: flush: " << FormatError(flushed) << "\n";
  if (!closed.ok() && flushed.ok()) std::cerr << "rdmq-produce: close: " << FormatError(closed) << "\n";
  if (shared.verbose || failed > 0) {
    std::cerr << "rdmq-produce: " << shared.acked.load() << " of " << (sent + bad_lines) << " records "
              << (cfg.acks == 0 ? "sent" : "acknowledged") << ", " << failed << " failed"
              << (g_stop.load() ? " (stopped by a signal)" : "") << "\n";
  }
  return (failed == 0 && flushed.ok() && shared.acked.load() == sent) ? kExitOk : kExitError;
}

}  // namespace
}  // namespace rdmq::cli

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-produce", [&] { return rdmq::cli::Main(argc, argv); });
}
