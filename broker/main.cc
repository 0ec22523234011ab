// rdmq-broker: the daemon. `rdmq-broker --help` lists every option and config key.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "rdmq/broker/broker.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/log.h"

namespace {

using rdmq::Status;
using rdmq::broker::BrokerConfig;

constexpr const char* kUsage = R"(usage: rdmq-broker [options]

Runs an rdmq broker: the metadata service and the storage node for the partition logs in the
data directory. Producers append with one-sided WRITEs and consumers read with one-sided READs
over the chosen fabric. Stops gracefully on SIGTERM or SIGINT (Ctrl-C).

options:
  --config FILE        read settings from a JSON object of "key": value pairs
  --data-dir DIR       same as --set data.dir=DIR
  --fabric NAME        same as --set fabric=NAME (shm, tcp, verbs)
  --set KEY=VALUE      override one setting (repeatable; applied after --config, in order)
  --print-config       print every setting with its value and exit
  --help               this text

settings (config file keys, --set keys):
  data.dir                      ./rdmq-data   where topics (topics/<topic>-<partition>/), the
                                              metadata (meta/) and the shm sockets live
  fabric                        shm           shm (processes on this host), tcp, or verbs (RDMA)
  listen.control                (derived)     RPC listener: shm <data.dir>/rdmq.sock; tcp/verbs
                                              host:port, default 0.0.0.0:9092 (port 0: any)
  listen.data                   (derived)     data listener: shm <data.dir>/rdmq-data.sock;
                                              tcp/verbs host:port, default 0.0.0.0:9093
  device                        (first)       verbs: RDMA device name (empty: first active one)
  broker.id                     0             this broker's id, reported to clients
  lease.ms                      10000         producer lease length; a lease not renewed (by a
                                              commit or RenewLease) this long ends, and shared
                                              reservations older than this are filled
  rpc.workers                   2             threads running the RPC handlers that do I/O
  data.spin.us                  1000          the commit poller spins this long after the last
                                              commit before it sleeps (0: sleep at once); waking
                                              a sleeping poller can cost ~100 us on a VM
  log.checkpoint.interval.ms    1000          checkpoint of every partition with new commits
  log.retention.check.interval.ms 5000        how often retention deletes old segments
  log.level                     info          trace, debug, info, warn, error, off
  log.format                    text          text (key=value) or json (one object per line)
defaults for new topics (each topic may override them with its own keys):
  num.partitions                1             topic key: partitions
  log.segment.bytes             67108864      topic key: segment.bytes (4 KiB header included)
  log.retention.bytes           -1            topic key: retention.bytes (per partition; -1: none)
  log.retention.ms              604800000     topic key: retention.ms (-1: none)
  log.index.interval.bytes      4096          topic key: index.interval.bytes
  message.max.bytes             1048576       topic key: max.message.bytes (largest batch)
  durability                    durable       durable: persisted before the ack (pmem flush or
                                              msync); visibility: survives a process crash only

examples:
  rdmq-broker --data-dir ./rdmq-data
  rdmq-broker --fabric tcp --set listen.control=127.0.0.1:9092 --set listen.data=127.0.0.1:9093
  rdmq-broker --config broker.json --set log.format=json
)";

int Fail(const std::string& what) {
  std::fprintf(stderr, "rdmq-broker: %s\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  BrokerConfig config;
  bool print_config = false;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* name) -> const std::string* {
      if (i + 1 >= args.size()) return nullptr;
      (void)name;
      return &args[++i];
    };
    Status s;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--print-config") {
      print_config = true;
    } else if (a == "--config") {
      const std::string* v = value("--config");
      if (!v) return Fail("--config needs a file name");
      s = rdmq::broker::ApplyFile(&config, *v);
    } else if (a == "--data-dir") {
      const std::string* v = value("--data-dir");
      if (!v) return Fail("--data-dir needs a directory");
      s = rdmq::broker::ApplySetting(&config, "data.dir", *v);
    } else if (a == "--fabric") {
      const std::string* v = value("--fabric");
      if (!v) return Fail("--fabric needs shm, tcp or verbs");
      s = rdmq::broker::ApplySetting(&config, "fabric", *v);
    } else if (a == "--set") {
      const std::string* v = value("--set");
      if (!v) return Fail("--set needs key=value");
      s = rdmq::broker::ApplySetting(&config, *v);
    } else if (a.rfind("--set=", 0) == 0) {
      s = rdmq::broker::ApplySetting(&config, a.substr(6));
    } else if (a.rfind("--data-dir=", 0) == 0) {
      s = rdmq::broker::ApplySetting(&config, "data.dir", a.substr(11));
    } else {
      return Fail("unknown option '" + a + "' (see --help)");
    }
    if (!s.ok()) return Fail(s.ToString());
  }
  if (Status s = rdmq::broker::Validate(config); !s.ok()) return Fail(s.ToString());
  if (print_config) {
    for (const auto& [k, v] : rdmq::broker::ConfigEntries(config))
      std::printf("%s=%s\n", k.c_str(), v.c_str());
    return 0;
  }
  rdmq::log::Level level;
  if (rdmq::log::ParseLevel(config.log_level, &level)) rdmq::log::SetLevel(level);
  rdmq::log::SetFormat(config.log_format == "json" ? rdmq::log::Format::kJson : rdmq::log::Format::kText);

  // Every thread the broker starts inherits this mask; the main thread takes the signals.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto broker = rdmq::broker::Broker::Start(config);
  if (!broker.ok()) {
    RDMQ_LOG(kError, "broker", "cannot start").kv("error", broker.status());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  RDMQ_LOG(kInfo, "broker", "signal received").kv("signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  Status s = (*broker)->Shutdown();
  broker->reset();
  return s.ok() ? 0 : 1;
}
