// rdmq-broker: the daemon. `rdmq-broker --help` lists every option and config key.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "rdmq/broker/broker.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/log.h"
#include "rdmq/config/args.h"
#include "rdmq/config/render.h"

namespace {

using rdmq::Status;
using rdmq::broker::BrokerConfig;

rdmq::config::CommandSpec Spec() {
  return rdmq::config::CommandSpec{
      .path = "rdmq-broker",
      .usage = "[options]",
      .summary =
          "Runs an rdmq broker: the metadata service and the storage node for the partition logs "
          "in the data directory.",
      .description =
          "Producers append with one-sided WRITEs and consumers read with one-sided READs over\n"
          "the chosen fabric. Stops gracefully on SIGTERM or SIGINT (Ctrl-C). Settings are\n"
          "applied in command-line order.",
      .options = {{"config", 'c', "FILE", "read settings from a JSON object of \"key\": value pairs", true},
                  {"data-dir", 'd', "DIR", "same as --set data.dir=DIR", true},
                  {"fabric", 0, "NAME", "same as --set fabric=NAME (shm, tcp, verbs)", true},
                  {"set", 0, "KEY=VALUE", "override one setting (repeatable)", true},
                  {"print-config", 0, "", "print every setting with its value and exit"}},
      .examples =
          {"rdmq-broker --data-dir ./rdmq-data",
           "rdmq-broker --fabric tcp --set listen.control=127.0.0.1:9192 --set listen.data=127.0.0.1:9193",
           "rdmq-broker --config broker.json --set log.format=json"},
      .settings_title = "Settings (config file keys, --set keys; `rdmq config list broker`)",
      .settings = rdmq::config::RenderKeysText(rdmq::broker::BrokerConfigDef().Describe(), 2) + "\n" +
                  rdmq::config::WrapText(rdmq::config::kSyntax, 2)};
}

// Every partition keeps two to four files open (docs/operations.md, "Open files"), so a soft
// limit of 1,024 would stop a broker at a few hundred partitions: like most servers, the daemon
// raises its soft limit to the hard one.
void RaiseOpenFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t before = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  RDMQ_LOG(kInfo, "broker", "open-file limit raised to the hard limit")
      .kv("from", static_cast<uint64_t>(before))
      .kv("to", rl.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(rl.rlim_max));
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "rdmq-broker: %s\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  BrokerConfig config;
  int exit_code = 0;
  const auto args = rdmq::config::ParseCommandLine(Spec(), argc, argv, &exit_code);
  if (!args) return exit_code;
  for (const auto& [option, value] : args->values()) {
    Status s;
    if (option == "config") {
      s = rdmq::broker::ApplyFile(&config, value);
    } else if (option == "data-dir") {
      s = rdmq::broker::ApplySetting(&config, "data.dir", value);
    } else if (option == "fabric") {
      s = rdmq::broker::ApplySetting(&config, "fabric", value);
    } else if (option == "set") {
      s = rdmq::broker::ApplySetting(&config, value);
    }
    if (!s.ok()) return Fail(s.ToString());
  }
  const bool print_config = args->Has("print-config");
  if (Status s = rdmq::broker::Validate(config); !s.ok()) return Fail(s.ToString());
  if (print_config) {
    for (const auto& [k, v] : rdmq::broker::ConfigEntries(config))
      std::printf("%s=%s\n", k.c_str(), v.c_str());
    return 0;
  }
  rdmq::log::Level level;
  if (rdmq::log::ParseLevel(config.log_level, &level)) rdmq::log::SetLevel(level);
  rdmq::log::SetFormat(config.log_format == "json" ? rdmq::log::Format::kJson : rdmq::log::Format::kText);

  RaiseOpenFileLimit();

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
