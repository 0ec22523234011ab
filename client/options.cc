#include "rdmq/client/options.h"

#include <cstdlib>
#include <optional>

#include "rdmq/client/connection.h"

namespace rdmq::client {
const config::ConfigDef<ClientOptions>& ClientConfigDef() {
  using config::Type;
  static const auto* def = [] {
    auto* d = new config::ConfigDef<ClientOptions>("client");
    const std::string client = "client";
    // The list as given; Connection tries its entries in order (ParseBootstrapServers).
    config::Accessor<ClientOptions> bootstrap{
        [](ClientOptions& o, const config::KeySpec&, const config::Value& v) { o.bootstrap = v.text; },
        [](const ClientOptions& o, const config::KeySpec&) { return config::Value{.text = o.bootstrap}; }};
    d->Define({.name = "bootstrap.servers",
               .type = Type::kString,
               .doc = "The broker's control address: unix:/path/rdmq.sock (shm), tcp:host:port or "
                      "verbs:host:port, or a comma-separated list of them (one fabric), tried in "
                      "order on connect and on every reconnect.",
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
    d->Define({.name = "reconnect.backoff.ms",
               .type = Type::kDuration,
               .doc = "After the broker went away: the wait before the first attempt to connect "
                      "again; doubled after each failed attempt up to reconnect.backoff.max.ms, "
                      "with +-20% jitter.",
               .component = client,
               .min = 0,
               .max = 3'600'000},
              config::Field(&ClientOptions::reconnect_backoff));
    d->Define({.name = "reconnect.backoff.max.ms",
               .type = Type::kDuration,
               .doc = "The longest wait between attempts to connect to the broker again.",
               .component = client,
               .min = 0,
               .max = 3'600'000},
              config::Field(&ClientOptions::reconnect_backoff_max));
    d->Define({.name = "retry.backoff.ms",
               .type = Type::kDuration,
               .doc = "The wait before retrying a request that failed because the broker was "
                      "unreachable (AdminClient calls, until request.timeout.ms).",
               .component = client,
               .min = 0,
               .max = 3'600'000},
              config::Field(&ClientOptions::retry_backoff));
    d->Define({.name = "sasl.mechanism",
               .type = Type::kEnum,
               .doc = "How to log in to a broker that asks for it (rpc.sasl.enabled.mechanisms).",
               .component = client,
               .choices = {{"SCRAM-SHA-256", 0}, {"SCRAM-SHA-512", 1}}},
              config::Field(&ClientOptions::sasl_mechanism));
    d->Define({.name = "sasl.username",
               .type = Type::kString,
               .doc = "The user to log in as (`rdmq user add`), when the broker asks for a login.",
               .component = client,
               .default_text = "$RDMQ_SASL_USERNAME"},
              config::Field(&ClientOptions::sasl_username));
    d->Define({.name = "sasl.password",
               .type = Type::kString,
               .doc = "That user's password (prefer the environment: a command line is visible to "
                      "other users of the host).",
               .component = client,
               .default_text = "$RDMQ_SASL_PASSWORD"},
              config::Field(&ClientOptions::sasl_password));
    d->Define({.name = "security.protocol",
               .type = Type::kEnum,
               .doc = "PLAINTEXT; SSL: TLS to a broker with rpc.security.protocol=SSL (tcp), on the "
                      "control connection and the data endpoint. SASL_PLAINTEXT and SASL_SSL are "
                      "accepted as the same two (the login happens whenever the broker asks for one).",
               .component = client,
               .choices = {{"PLAINTEXT", 0}, {"SSL", 1}, {"SASL_PLAINTEXT", 2}, {"SASL_SSL", 3}}},
              config::Field(&ClientOptions::security_protocol));
    d->Define({.name = "ssl.ca.location",
               .type = Type::kString,
               .doc = "The CA certificates (PEM) the broker's certificate must chain to. Empty: the "
                      "system's default CAs.",
               .component = client},
              config::Field(&ClientOptions::ssl_ca));
    d->Define({.name = "ssl.certificate.location",
               .type = Type::kString,
               .doc = "This client's certificate chain (PEM), for a broker that asks for client "
                      "certificates (ssl.client.auth).",
               .component = client},
              config::Field(&ClientOptions::ssl_certificate));
    d->Define({.name = "ssl.key.location",
               .type = Type::kString,
               .doc = "The private key (PEM, unencrypted) of ssl.certificate.location.",
               .component = client},
              config::Field(&ClientOptions::ssl_key));
    d->Define({.name = "ssl.endpoint.identification.algorithm",
               .type = Type::kEnum,
               .doc = "https: the broker's certificate must name the host or IP address connected to "
                      "(for the data endpoint: the data address the broker announces); none: any "
                      "name (the chain is still verified).",
               .component = client,
               .choices = {{"https", 0}, {"none", 1}}},
              config::Field(&ClientOptions::ssl_endpoint_identification));
    d->Define({.name = "enable.ssl.certificate.verification",
               .type = Type::kBool,
               .doc = "Verify the broker's certificate chain. false encrypts without knowing who "
                      "answers: for tests only.",
               .component = client},
              config::Field(&ClientOptions::ssl_verify));
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

Result<std::vector<std::string>> ClientOptions::BootstrapServers() const {
  return ParseBootstrapServers(ResolvedBootstrap());
}

Result<std::vector<std::string>> ParseBootstrapServers(std::string_view list) {
  std::vector<std::string> out;
  std::optional<fabric::Provider> provider;
  while (true) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) {
      RDMQ_ASSIGN_OR_RETURN(fabric::Provider p, ProviderOfAddress(item));
      if (provider && *provider != p) {
        return Status(Errc::kInvalidArgument, "bootstrap.servers '" + std::string(item) +
                                                  "': every server in the list must use the same fabric (" +
                                                  std::string(fabric::ProviderName(*provider)) + ")");
      }
      provider = p;
      out.push_back(NormalizeAddress(item));
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  if (out.empty()) return Status(Errc::kInvalidArgument, "bootstrap.servers names no broker address");
  return out;
}

}  // namespace rdmq::client
