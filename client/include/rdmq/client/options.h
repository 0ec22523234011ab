// Options shared by every rdmq client object (AdminClient, Producer, Consumer).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/config/config_def.h"

namespace rdmq::client {

struct ClientOptions {
  // The broker's control address: "unix:/path/to/rdmq.sock" (shm, the embedded default),
  // "tcp:host:port" or "verbs:host:port", or a comma-separated list of them, tried in order on
  // connect and reconnect. Default: $RDMQ_BROKER, else "unix:./rdmq-data/rdmq.sock".
  std::string bootstrap;
  std::string client_name = "rdmq-client";           // "client.id" in logs and broker diagnostics
  std::chrono::milliseconds request_timeout{30000};  // "request.timeout.ms"
  std::string device;                                // verbs: RDMA device (empty: the first active one)
  // After the broker went away: the first wait before connecting again, doubled per failed
  // attempt up to the max (jittered; client::Backoff).
  std::chrono::milliseconds reconnect_backoff{50};        // "reconnect.backoff.ms"
  std::chrono::milliseconds reconnect_backoff_max{1000};  // "reconnect.backoff.max.ms"
  std::chrono::milliseconds retry_backoff{100};           // "retry.backoff.ms": between retries of a request
  // The login a broker with rpc.sasl.enabled.mechanisms asks for (docs/security.md): a user of
  // `rdmq user add`. Empty username/password: $RDMQ_SASL_USERNAME / $RDMQ_SASL_PASSWORD.
  std::string sasl_mechanism = "SCRAM-SHA-256";  // "sasl.mechanism": SCRAM-SHA-256 | SCRAM-SHA-512
  std::string sasl_username;                     // "sasl.username"
  std::string sasl_password;                     // "sasl.password"
  // TLS to a broker with rpc.security.protocol=SSL (tcp only; docs/security.md): both the control
  // connection and the data endpoint. "security.protocol" PLAINTEXT | SSL, and SASL_PLAINTEXT |
  // SASL_SSL as their aliases (the SCRAM login happens whenever the broker asks for one).
  std::string security_protocol = "PLAINTEXT";
  std::string ssl_ca;  // "ssl.ca.location": CAs the broker's certificate must chain to (empty: the system's)
  std::string ssl_certificate;  // "ssl.certificate.location": this client's certificate chain, if any
  std::string ssl_key;          // "ssl.key.location": its private key
  // "ssl.endpoint.identification.algorithm": https (the broker's certificate must name the host
  // or IP address connected to) | none.
  std::string ssl_endpoint_identification = "https";
  bool ssl_verify = true;  // "enable.ssl.certificate.verification"
  bool Tls() const { return security_protocol.ends_with("SSL"); }

  // Applies a Kafka-style key ("bootstrap.servers", "client.id", "request.timeout.ms",
  // "rdma.device"): a lookup in ClientConfigDef(). kInvalidArgument naming the key otherwise.
  Status Set(std::string_view key, std::string_view value);
  // The bootstrap address (the list as given) with the default applied.
  std::string ResolvedBootstrap() const;
  // The bootstrap servers, in order (ParseBootstrapServers of ResolvedBootstrap()).
  Result<std::vector<std::string>> BootstrapServers() const;
};

// A bootstrap.servers value: comma-separated addresses, blanks around them ignored, each
// normalised ("/path" -> "unix:/path"). kInvalidArgument when it names none, when an entry is
// not an address, or when the entries use different fabrics (a client opens one).
Result<std::vector<std::string>> ParseBootstrapServers(std::string_view list);

// The keys of ClientOptions (`rdmq config list client`); producer and consumer tables include them.
const config::ConfigDef<ClientOptions>& ClientConfigDef();

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  bool operator==(const TopicPartition&) const = default;
  auto operator<=>(const TopicPartition&) const = default;
};

// A record header (Kafka's: a string key and a byte value).
struct Header {
  std::string key;
  std::string value;
  bool operator==(const Header&) const = default;
};

}  // namespace rdmq::client
