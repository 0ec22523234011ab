// Broker configuration: a JSON file of flat keys (Kafka's broker names where the meaning is the
// same) with command-line overrides applied on top (`--set key=value`).
//
//   {
//     "data.dir": "/var/lib/rdmq",
//     "fabric": "shm",
//     "num.partitions": 3,
//     "log.retention.ms": 604800000
//   }
//
// The keys are defined once, in BrokerConfigDef() (a config::ConfigDef; `rdmq config list broker`
// and `rdmq-broker --help` list them). Unknown keys and bad values are errors naming the key, the
// value and what is accepted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/config/config_def.h"
#include "rdmq/metadata/topic.h"

namespace rdmq::broker {

struct BrokerConfig {
  std::string data_dir = "./rdmq-data";  // "data.dir"
  std::string fabric = "shm";            // "fabric": shm | tcp | verbs
  // "listen.control" / "listen.data": shm: socket paths (default <data.dir>/rdmq.sock and
  // <data.dir>/rdmq-data.sock); tcp/verbs: host:port (default 127.0.0.1:9192 and :9193).
  std::string listen_control;
  std::string listen_data;
  // The Kafka protocol listener (docs/kafka-protocol.md): host:port or "off".
  std::string listen_kafka = "127.0.0.1:9092";  // "listen.kafka"
  std::string advertise_kafka;                  // "advertise.kafka": empty = the listener's
  std::string listen_http = "127.0.0.1:9194";   // "listen.http": /metrics, /healthz, /readyz; or "off"
  // "security.allow.anonymous": listeners beyond loopback that authenticate nobody are refused
  // unless this is set (docs/security.md).
  bool allow_anonymous = false;
  // TLS and SASL (docs/security.md): "kafka.security.protocol" PLAINTEXT | SSL | SASL_PLAINTEXT |
  // SASL_SSL; the broker's certificate chain and key, the CAs for client certificates,
  // "ssl.client.auth" none | requested | required.
  std::string kafka_security_protocol = "PLAINTEXT";
  // "sasl.enabled.mechanisms": a comma-separated list of SCRAM-SHA-256, SCRAM-SHA-512, PLAIN
  // (PLAIN only with SASL_SSL: it sends the password itself).
  std::string sasl_mechanisms = "SCRAM-SHA-256,SCRAM-SHA-512";
  std::string ssl_certificate;  // "ssl.certificate.location"
  std::string ssl_key;          // "ssl.key.location"
  std::string ssl_ca;           // "ssl.ca.location"
  std::string ssl_client_auth = "none";
  // kafka.security.protocol is SASL_PLAINTEXT or SASL_SSL / SSL or SASL_SSL.
  bool KafkaSasl() const { return kafka_security_protocol.starts_with("SASL_"); }
  bool KafkaTls() const { return kafka_security_protocol.ends_with("SSL"); }
  // The mechanisms of sasl.enabled.mechanisms, in order.
  std::vector<std::string> SaslMechanisms() const;
  // "rpc.sasl.enabled.mechanisms": the SCRAM mechanisms rdmq's own clients log in with on the
  // control path (SaslAuthenticate); empty: no login asked.
  std::string rpc_sasl_mechanisms;
  std::vector<std::string> RpcSaslMechanisms() const;
  // "rpc.security.protocol": PLAINTEXT | SSL (TLS on the tcp fabric's control and data
  // listeners, with the ssl.* files above).
  std::string rpc_security_protocol = "PLAINTEXT";
  bool RpcTls() const { return rpc_security_protocol == "SSL"; }
  // Authorization (docs/security.md): "authorizer.enabled" makes both front doors ask the ACLs of
  // the metadata store (`rdmq acl`); without it every client that may connect may do everything.
  // "super.users": users ("User:NAME", separated by ';' or ',') that may do everything anyway.
  bool authorizer_enabled = false;
  std::string super_users;
  // The user names of super.users, without "User:".
  std::vector<std::string> SuperUsers() const;
  // A cluster (docs/replication.md): "cluster.zookeeper.connect", ZooKeeper's connect string
  // (host:port[,host:port...]); empty: a broker on its own, with its local metadata WAL.
  std::string cluster_zookeeper;
  std::string cluster_root = "/rdmq";          // "cluster.zookeeper.root"
  uint32_t cluster_session_timeout_ms = 6000;  // "cluster.zookeeper.session.timeout.ms"
  bool Clustered() const { return !cluster_zookeeper.empty(); }
  // A replicated partition's leader (docs/replication.md, "Replication over the fabric"): a
  // follower that has not held the leader's log end for "replica.lag.time.max.ms" leaves the ISR;
  // "replica.fetch.max.bytes": the most bytes forwarded to a follower in one WRITE and commit
  // (at least one batch); "replica.sasl.username"/"replica.sasl.password": the login the leader
  // gives its followers' brokers when they ask for one (the brokers' principal, which needs
  // Alter on the cluster where authorizer.enabled).
  uint32_t replica_lag_time_max_ms = 30000;
  uint64_t replica_fetch_max_bytes = 1 << 20;
  std::string replica_sasl_username;
  std::string replica_sasl_password;
  uint32_t kafka_threads = 2;                    // "kafka.network.threads"
  uint64_t kafka_max_request_bytes = 100 << 20;  // "socket.request.max.bytes"
  bool auto_create_topics = true;                // "auto.create.topics.enable"
  std::string device;                            // "device": verbs device name, empty = first active
  uint64_t broker_id = 0;                        // "broker.id"
  uint32_t lease_ms = 10000;                     // "lease.ms": producer lease length
  uint32_t lease_idle_ms = 10000;                // "lease.idle.ms": 0 = never released for idleness
  uint32_t rpc_workers = 2;                      // "rpc.workers": RPC handler worker threads
  uint32_t log_open_threads = 8;                 // "log.open.threads": partitions opened side by side
  uint32_t checkpoint_interval_ms = 1000;        // "log.checkpoint.interval.ms"
  uint32_t retention_check_interval_ms = 5000;   // "log.retention.check.interval.ms"
  bool segment_preallocate = true;               // "log.segment.preallocate": next segments made ahead
  uint32_t data_spin_us = 1000;  // "data.spin.us": commit poller spins this long before parking
  uint32_t group_heartbeat_interval_ms = 3000;       // "group.heartbeat.interval.ms"
  uint32_t group_min_session_timeout_ms = 1000;      // "group.min.session.timeout.ms"
  uint32_t group_max_session_timeout_ms = 1800000;   // "group.max.session.timeout.ms"
  uint32_t group_max_size = 0;                       // "group.max.size": 0 = no limit
  uint32_t group_initial_rebalance_delay_ms = 3000;  // "group.initial.rebalance.delay.ms" (classic groups)
  std::string log_level = "info";                    // "log.level"
  std::string log_format = "text";                   // "log.format": text | json
  // Defaults for new topics: "num.partitions", "log.segment.bytes", "log.retention.bytes",
  // "log.retention.ms", "log.index.interval.bytes", "message.max.bytes", "durability".
  metadata::TopicConfig topic_defaults;

  // The listeners with defaults filled in for the chosen fabric.
  std::string ControlAddress() const;
  std::string DataAddress() const;
};

// Every broker key: its own, then the topic defaults ("num.partitions" sets topic_defaults'
// "partitions").
const config::ConfigDef<BrokerConfig>& BrokerConfigDef();
// Applies one "key=value" (or key, value) setting. Errors name the key and the accepted values.
Status ApplySetting(BrokerConfig* config, std::string_view key, std::string_view value);
Status ApplySetting(BrokerConfig* config, std::string_view key_equals_value);
// Parses a JSON config file's text: an object of key → string | integer | boolean.
Status ApplyJson(BrokerConfig* config, std::string_view json_text, std::string_view source_name);
// Reads and applies a JSON config file.
Status ApplyFile(BrokerConfig* config, const std::string& path);
// Every key with its current value, for `rdmq-broker --print-config` and the startup log.
std::vector<std::pair<std::string, std::string>> ConfigEntries(const BrokerConfig& config);
// Checks the whole config (fabric known, listeners parse, topic defaults valid, no listener
// beyond loopback unless security.allow.anonymous).
Status Validate(const BrokerConfig& config);

}  // namespace rdmq::broker
