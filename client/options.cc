#include "rdmq/client/options.h"

#include <cstdlib>

namespace rdmq::client {
const config::ConfigDef<ClientOptions>& ClientConfigDef() {
  using config::Type;
  static const auto* def = [] {
    auto* d = new config::ConfigDef<ClientOptions>("client");
    const std::string client = "client";
    // Kafka allows a list; one broker is all rdmq needs, so the first entry is taken.
    config::Accessor<ClientOptions> bootstrap{
        [](ClientOptions& o, const config::KeySpec&, const config::Value& v) {
          o.bootstrap = v.text.substr(0, v.text.find(','));
        },
        [](const ClientOptions& o, const config::KeySpec&) { return config::Value{.text = o.bootstrap}; }};
    d->Define({.name = "bootstrap.servers",
               .type = Type::kString,
               .doc = "The broker's control address: unix:/path/rdmq.sock (shm), tcp:host:port or "
                      "verbs:host:port. A comma-separated list is accepted; its first entry is used.",
               .component = client,
               .non_empty = true,
               .default_text = "$RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock"},
              bootstrap);
    d->Define({.name = "client.id",
               .type = Type::kString,
               .doc = "This client's name in logs and broker diagnostics.",
               .component = client},
              config::Field(&ClientOptions::client_name));
    d->Define({.name = "request.timeout.ms",
               .type = Type::kDuration,
               .doc = "How long a request to the broker may take before it fails with a timeout.",
               .component = client,
               .min = 1,
               .max = 86'400'000},
              config::Field(&ClientOptions::request_timeout));
    d->Define({.name = "rdma.device",
               .type = Type::kString,
               .doc = "verbs: the RDMA device to use (empty: the first active one).",
               .component = client},
              config::Field(&ClientOptions::device));
    return d;
  }();
  return *def;
}

Status ClientOptions::Set(std::string_view key, std::string_view value) {
  return ClientConfigDef().Set(this, key, value);
}

std::string ClientOptions::ResolvedBootstrap() const {
  if (!bootstrap.empty()) return bootstrap;
  if (const char* env = std::getenv("RDMQ_BROKER"); env != nullptr && *env != '\0') return env;
  return "unix:./rdmq-data/rdmq.sock";
}

}  // namespace rdmq::client
