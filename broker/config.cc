#include "rdmq/broker/config.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "rdmq/metadata/user.h"

namespace rdmq::broker {
namespace {

Status Bad(std::string_view key, std::string_view value, std::string_view why) {
  return Status(Errc::kInvalidArgument,
                std::string(key) + "=" + std::string(value) + ": " + std::string(why));
}

// Broker keys that set the defaults of new topics, and the topic keys they stand for.
constexpr std::pair<const char*, const char*> kTopicKeys[] = {
    {"num.partitions", "partitions"},
    {"log.segment.bytes", "segment.bytes"},
    {"log.retention.bytes", "retention.bytes"},
    {"log.retention.ms", "retention.ms"},
    {"log.index.interval.bytes", "index.interval.bytes"},
    {"message.max.bytes", "max.message.bytes"},
    {"durability", "durability"}};

// Whether host:port names a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopback(std::string_view hostport) {
  std::string_view host = hostport.substr(0, hostport.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host.starts_with("127.") || host == "::1" || host == "localhost";
}

bool IsHostPort(std::string_view s) {
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= s.size()) return false;
  uint32_t port = 0;
  auto [p, ec] = std::from_chars(s.data() + colon + 1, s.data() + s.size(), port);
  return ec == std::errc() && p == s.data() + s.size() && port <= 65535;
}

}  // namespace

std::string BrokerConfig::ControlAddress() const {
  if (!listen_control.empty()) return listen_control;
  return fabric == "shm" ? data_dir + "/rdmq.sock" : "127.0.0.1:9192";
}

std::string BrokerConfig::DataAddress() const {
  if (!listen_data.empty()) return listen_data;
  return fabric == "shm" ? data_dir + "/rdmq-data.sock" : "127.0.0.1:9193";
}

namespace {
// The non-blank items of a list separated by any of `separators`, trimmed.
std::vector<std::string> SplitList(const std::string& list, const char* separators = ",") {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find_first_of(separators, at);
    if (comma == std::string::npos) comma = list.size();
    std::string m = list.substr(at, comma - at);
    const size_t b = m.find_first_not_of(' '), e = m.find_last_not_of(' ');
    if (b != std::string::npos) out.push_back(m.substr(b, e - b + 1));
    at = comma + 1;
  }
  return out;
}
}  // namespace

std::vector<std::string> BrokerConfig::SaslMechanisms() const { return SplitList(sasl_mechanisms); }
std::vector<std::string> BrokerConfig::RpcSaslMechanisms() const { return SplitList(rpc_sasl_mechanisms); }
std::vector<std::string> BrokerConfig::SuperUsers() const {
  std::vector<std::string> out;
  for (std::string& u : SplitList(super_users, ";,")) out.push_back(u.starts_with("User:") ? u.substr(5) : u);
  return out;
}

const config::ConfigDef<BrokerConfig>& BrokerConfigDef() {
  using config::Field;
  using config::Type;
  using config::Unit;
  static const auto* def = [] {
    auto* d = new config::ConfigDef<BrokerConfig>("broker");
    const std::string broker = "broker";
    d->Define({.name = "data.dir",
               .type = Type::kString,
               .doc = "Where the topics (topics/<topic>-<partition>/), the metadata (meta/) and the shm "
                      "sockets live.",
               .component = broker,
               .non_empty = true},
              Field(&BrokerConfig::data_dir));
    d->Define({.name = "fabric",
               .type = Type::kEnum,
               .doc = "shm: processes on this host; tcp; verbs: RDMA.",
               .component = broker,
               .choices = {{"shm", 0}, {"tcp", 1}, {"verbs", 2}}},
              Field(&BrokerConfig::fabric));
    d->Define({.name = "listen.control",
               .type = Type::kString,
               .doc = "The RPC listener: for shm a socket path, for tcp and verbs host:port (port 0: any).",
               .component = broker,
               .default_text = "shm: <data.dir>/rdmq.sock; tcp, verbs: 127.0.0.1:9192"},
              Field(&BrokerConfig::listen_control));
    d->Define({.name = "listen.data",
               .type = Type::kString,
               .doc = "The data listener (one-sided WRITEs and READs): for shm a socket path, for tcp "
                      "and verbs host:port.",
               .component = broker,
               .default_text = "shm: <data.dir>/rdmq-data.sock; tcp, verbs: 127.0.0.1:9193"},
              Field(&BrokerConfig::listen_data));
    d->Define({.name = "listen.kafka",
               .type = Type::kString,
               .doc = "The Kafka protocol listener (docs/kafka-protocol.md), host:port (port 0: any), or "
                      "'off'. Kafka clients (librdkafka, kcat, kafka-python, ...) connect here.",
               .component = broker},
              Field(&BrokerConfig::listen_kafka));
    d->Define({.name = "advertise.kafka",
               .type = Type::kString,
               .doc = "The host:port Kafka clients are told to connect to (Metadata). Empty: the listener's "
                      "address, with the host's name in place of 0.0.0.0.",
               .component = broker},
              Field(&BrokerConfig::advertise_kafka));
    d->Define({.name = "kafka.security.protocol",
               .type = Type::kEnum,
               .doc = "PLAINTEXT; SSL: TLS (1.2 or later) on every Kafka connection, with "
                      "ssl.certificate.location and ssl.key.location; SASL_PLAINTEXT: every client logs "
                      "in (sasl.enabled.mechanisms) as a user of `rdmq user add`; SASL_SSL: both "
                      "(docs/security.md).",
               .component = broker,
               .choices = {{"PLAINTEXT", 0}, {"SSL", 1}, {"SASL_PLAINTEXT", 2}, {"SASL_SSL", 3}}},
              Field(&BrokerConfig::kafka_security_protocol));
    d->Define({.name = "sasl.enabled.mechanisms",
               .type = Type::kString,
               .doc = "The SASL mechanisms the Kafka listener accepts with SASL_PLAINTEXT or SASL_SSL, "
                      "comma-separated: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN (PLAIN only with SASL_SSL: "
                      "it sends the password itself).",
               .component = broker},
              Field(&BrokerConfig::sasl_mechanisms));
    d->Define({.name = "rpc.sasl.enabled.mechanisms",
               .type = Type::kString,
               .doc = "SCRAM mechanisms (SCRAM-SHA-256, SCRAM-SHA-512, comma-separated) rdmq's own clients "
                      "must log in with on the control path, as a user of `rdmq user add`, before "
                      "anything else is served (their sasl.username and sasl.password). Empty: no login.",
               .component = broker},
              Field(&BrokerConfig::rpc_sasl_mechanisms));
    d->Define({.name = "rpc.security.protocol",
               .type = Type::kEnum,
               .doc = "PLAINTEXT; SSL: TLS (1.2 or later) on every connection to the control and data "
                      "listeners (fabric=tcp only), with ssl.certificate.location and ssl.key.location; "
                      "ssl.client.auth=required then authenticates clients by certificate "
                      "(docs/security.md).",
               .component = broker,
               .choices = {{"PLAINTEXT", 0}, {"SSL", 1}}},
              Field(&BrokerConfig::rpc_security_protocol));
    d->Define({.name = "ssl.certificate.location",
               .type = Type::kString,
               .doc = "The broker's certificate chain (PEM) for its TLS listeners (Kafka, and the control "
                      "and data listeners with rpc.security.protocol=SSL).",
               .component = broker},
              Field(&BrokerConfig::ssl_certificate));
    d->Define({.name = "ssl.key.location",
               .type = Type::kString,
               .doc = "The private key (PEM, unencrypted) of ssl.certificate.location.",
               .component = broker},
              Field(&BrokerConfig::ssl_key));
    d->Define({.name = "ssl.ca.location",
               .type = Type::kString,
               .doc = "The CA certificates (PEM) that client certificates must chain to (ssl.client.auth).",
               .component = broker},
              Field(&BrokerConfig::ssl_ca));
    d->Define({.name = "ssl.client.auth",
               .type = Type::kEnum,
               .doc = "Client certificates on TLS listeners: none; requested (checked when sent); "
                      "required (a client without a certificate from ssl.ca.location is refused: this "
                      "authenticates clients, so the listener may face the network without "
                      "security.allow.anonymous).",
               .component = broker,
               .choices = {{"none", 0}, {"requested", 1}, {"required", 2}}},
              Field(&BrokerConfig::ssl_client_auth));
    d->Define({.name = "authorizer.enabled",
               .type = Type::kBool,
               .doc = "Enforce the ACLs of `rdmq acl` on both front doors: a client may do only what a "
                      "binding allows its user (ANONYMOUS without a login; a verified client "
                      "certificate's CN on TLS listeners); leases and read grants end when an ACL no longer "
                      "allows them "
                      "(docs/security.md). Off: every client that may connect may do everything.",
               .component = broker},
              Field(&BrokerConfig::authorizer_enabled));
    d->Define({.name = "super.users",
               .type = Type::kString,
               .doc = "Users that may do everything whatever the ACLs say (the operators who manage "
                      "them): User:NAME entries separated by ';' or ','.",
               .component = broker},
              Field(&BrokerConfig::super_users));
    d->Define({.name = "cluster.zookeeper.connect",
               .type = Type::kString,
               .doc = "Join a cluster of brokers whose metadata and elections live in this ZooKeeper "
                      "(host:port[,host:port...]; docs/replication.md): each broker a unique broker.id, "
                      "topics spread over the live brokers. Empty: a broker on its own.",
               .component = broker},
              Field(&BrokerConfig::cluster_zookeeper));
    d->Define({.name = "cluster.zookeeper.root",
               .type = Type::kString,
               .doc = "The znode under which the cluster keeps its metadata (several clusters may share "
                      "a ZooKeeper under different roots).",
               .component = broker},
              Field(&BrokerConfig::cluster_root));
    d->Define({.name = "cluster.zookeeper.session.timeout.ms",
               .type = Type::kDuration,
               .doc = "How long ZooKeeper waits before it takes this broker for dead (its partitions then "
                      "get other leaders).",
               .component = broker,
               .min = 1000,
               .max = 60000,
               .unit = Unit::kMillis},
              Field(&BrokerConfig::cluster_session_timeout_ms));
    d->Define({.name = "replica.lag.time.max.ms",
               .type = Type::kDuration,
               .doc = "A follower that has not held everything its leader held for this long leaves the "
                      "partition's in-sync replicas; it rejoins once it holds the high watermark again.",
               .component = broker,
               .min = 100,
               .max = 3'600'000,
               .unit = Unit::kMillis},
              Field(&BrokerConfig::replica_lag_time_max_ms));
    d->Define({.name = "replica.fetch.max.bytes",
               .type = Type::kBytes,
               .doc = "The most bytes a leader forwards to a follower in one WRITE and commit (a larger "
                      "batch goes alone); also the size of each follower's staging buffer.",
               .component = broker,
               .min = 4096,
               .max = 1LL << 30},
              Field(&BrokerConfig::replica_fetch_max_bytes));
    d->Define({.name = "replica.sasl.username",
               .type = Type::kString,
               .doc = "The user a leader logs in as on its followers' brokers when they ask for a login "
                      "(rpc.sasl.enabled.mechanisms); it needs Alter on the cluster where "
                      "authorizer.enabled. Empty: $RDMQ_SASL_USERNAME.",
               .component = broker},
              Field(&BrokerConfig::replica_sasl_username));
    d->Define({.name = "replica.sasl.password",
               .type = Type::kString,
               .doc = "That user's password. Empty: $RDMQ_SASL_PASSWORD.",
               .component = broker},
              Field(&BrokerConfig::replica_sasl_password));
    d->Define({.name = "kafka.network.threads",
               .type = Type::kInt,
               .doc = "Threads serving the Kafka listener's connections.",
               .component = broker,
               .min = 1,
               .max = 64},
              Field(&BrokerConfig::kafka_threads));
    d->Define({.name = "socket.request.max.bytes",
               .type = Type::kBytes,
               .doc = "The largest Kafka request accepted; a larger size prefix closes the connection.",
               .component = broker,
               .min = 1024,
               .max = 1LL << 30},
              Field(&BrokerConfig::kafka_max_request_bytes));
    d->Define({.name = "listen.http",
               .type = Type::kString,
               .doc = "The operators' HTTP endpoint (docs/operations.md): Prometheus metrics at /metrics, "
                      "/healthz and /readyz. host:port (port 0: any), or 'off'.",
               .component = broker},
              Field(&BrokerConfig::listen_http));
    d->Define({.name = "security.allow.anonymous",
               .type = Type::kBool,
               .doc = "Let the broker listen beyond loopback although it authenticates nobody: anyone "
                      "who reaches a port can then read, write and delete every topic (docs/security.md). "
                      "Without it a listener on a non-loopback address refuses to start.",
               .component = broker},
              Field(&BrokerConfig::allow_anonymous));
    d->Define({.name = "auto.create.topics.enable",
               .type = Type::kBool,
               .doc = "A Kafka client's Metadata request for a topic that does not exist creates it (with "
                      "the topic defaults), when the client allows it.",
               .component = broker},
              Field(&BrokerConfig::auto_create_topics));
    d->Define({.name = "device",
               .type = Type::kString,
               .doc = "verbs: the RDMA device name (empty: the first active one).",
               .component = broker},
              Field(&BrokerConfig::device));
    d->Define({.name = "broker.id",
               .type = Type::kInt,
               .doc = "This broker's id, reported to clients.",
               .component = broker,
               .min = 0,
               .max = 1LL << 30},
              Field(&BrokerConfig::broker_id));
    d->Define({.name = "lease.ms",
               .type = Type::kDuration,
               .doc = "Producer lease length: a lease not renewed (by a commit or RenewLease) this long "
                      "ends, and shared reservations older than this are filled.",
               .component = broker,
               .min = 100,
               .max = 3'600'000},
              Field(&BrokerConfig::lease_ms));
    d->Define({.name = "lease.idle.ms",
               .type = Type::kDuration,
               .doc = "A producer lease whose holder committed nothing for this long is released, so "
                      "that an idle producer does not keep others off the partition (its producer opens "
                      "a new lease when it sends again). 0: never.",
               .component = broker,
               .min = 0,
               .max = 86'400'000},
              Field(&BrokerConfig::lease_idle_ms));
    d->Define({.name = "rpc.workers",
               .type = Type::kInt,
               .doc = "Threads running the RPC handlers that do I/O.",
               .component = broker,
               .min = 1,
               .max = 256},
              Field(&BrokerConfig::rpc_workers));
    d->Define({.name = "log.open.threads",
               .type = Type::kInt,
               .doc = "Threads that open (create or recover) partitions side by side: at startup, and when "
                      "a topic is created or gains partitions. Opening waits on fsync and on reading each "
                      "active segment, not on the CPU, so more threads than cores pay. 1: one at a time.",
               .component = broker,
               .min = 1,
               .max = 256},
              Field(&BrokerConfig::log_open_threads));
    d->Define({.name = "log.checkpoint.interval.ms",
               .type = Type::kDuration,
               .doc = "How often every partition with new commits is checkpointed.",
               .component = broker,
               .min = 1,
               .max = 3'600'000},
              Field(&BrokerConfig::checkpoint_interval_ms));
    d->Define({.name = "log.retention.check.interval.ms",
               .type = Type::kDuration,
               .doc = "How often retention deletes old segments.",
               .component = broker,
               .min = 10,
               .max = 3'600'000},
              Field(&BrokerConfig::retention_check_interval_ms));
    d->Define({.name = "log.segment.preallocate",
               .type = Type::kBool,
               .doc = "Make each written partition's next segment ahead of its roll (once a quarter of the "
                      "active one is committed; at its first commit after a roll): a "
                      "background thread allocates the file and reads its pages into the page cache, so "
                      "that the roll and the new segment's first writes do not (it takes a segment's "
                      "size of disk ahead; off: the roll allocates, the first writes fault the pages).",
               .component = broker},
              Field(&BrokerConfig::segment_preallocate));
    d->Define({.name = "data.spin.us",
               .type = Type::kDuration,
               .doc = "The commit poller spins up to this long after the last commit before it sleeps "
                      "(0: sleep at once), unless most of the last eight gaps between commits were "
                      "longer (then it sleeps at once); waking a sleeping poller can cost ~100 us on a VM.",
               .component = broker,
               .min = 0,
               .max = 1'000'000,
               .unit = Unit::kMicros},
              Field(&BrokerConfig::data_spin_us));
    d->Define({.name = "group.heartbeat.interval.ms",
               .type = Type::kDuration,
               .doc = "How often consumer-group members heartbeat; a member uses at most a third of its "
                      "session timeout.",
               .component = broker,
               .min = 10,
               .max = 3'600'000},
              Field(&BrokerConfig::group_heartbeat_interval_ms));
    d->Define({.name = "group.min.session.timeout.ms",
               .type = Type::kDuration,
               .doc = "The shortest session timeout a group member may ask for.",
               .component = broker,
               .min = 10,
               .max = 3'600'000},
              Field(&BrokerConfig::group_min_session_timeout_ms));
    d->Define({.name = "group.max.session.timeout.ms",
               .type = Type::kDuration,
               .doc = "The longest session timeout a group member may ask for.",
               .component = broker,
               .min = 10,
               .max = 86'400'000},
              Field(&BrokerConfig::group_max_session_timeout_ms));
    d->Define({.name = "group.max.size",
               .type = Type::kInt,
               .doc = "Most members in one consumer group, rdmq's own or Kafka's classic (0: no limit).",
               .component = broker,
               .min = 0,
               .max = 1'000'000},
              Field(&BrokerConfig::group_max_size));
    d->Define({.name = "group.initial.rebalance.delay.ms",
               .type = Type::kDuration,
               .doc = "Kafka's classic groups (JoinGroup/SyncGroup): the first rebalance of an empty group "
                      "waits this long for more members, and again while more keep joining, up to the "
                      "rebalance timeout (0: no wait).",
               .component = broker,
               .min = 0,
               .max = 3'600'000},
              Field(&BrokerConfig::group_initial_rebalance_delay_ms));
    d->Define({.name = "log.level",
               .type = Type::kEnum,
               .doc = "The least severe log message written.",
               .component = broker,
               .choices = {{"trace", 0}, {"debug", 1}, {"info", 2}, {"warn", 3}, {"error", 4}, {"off", 5}}},
              Field(&BrokerConfig::log_level));
    d->Define({.name = "log.format",
               .type = Type::kEnum,
               .doc = "text: key=value lines; json: one object per line.",
               .component = broker,
               .choices = {{"text", 0}, {"json", 1}}},
              Field(&BrokerConfig::log_format));
    for (const auto& [broker_key, topic_key] : kTopicKeys) {
      d->IncludeAs(metadata::TopicConfigDef(), &BrokerConfig::topic_defaults, broker_key, topic_key,
                   "Default for new topics (topic key " + std::string(topic_key) + "). ");
    }
    return d;
  }();
  return *def;
}

Status ApplySetting(BrokerConfig* c, std::string_view key, std::string_view value) {
  return BrokerConfigDef().Set(c, key, value);
}

Status ApplySetting(BrokerConfig* c, std::string_view kv) { return BrokerConfigDef().Set(c, kv); }

Status ApplyJson(BrokerConfig* c, std::string_view text, std::string_view source) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(Errc::kInvalidArgument, std::string(source) + ": not valid JSON");
  if (!j.is_object()) return Status(Errc::kInvalidArgument, std::string(source) + ": must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    std::string v;
    if (value.is_string()) {
      v = value.get<std::string>();
    } else if (value.is_number_integer() || value.is_boolean()) {
      v = value.dump();
    } else {
      return Status(Errc::kInvalidArgument,
                    std::string(source) + ": " + key + " must be a string, integer or boolean");
    }
    RDMQ_RETURN_IF_ERROR(ApplySetting(c, key, v).WithContext(source));
  }
  return Status::Ok();
}

Status ApplyFile(BrokerConfig* c, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::FromErrno(errno, "open config file " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ApplyJson(c, text, path);
}

std::vector<std::pair<std::string, std::string>> ConfigEntries(const BrokerConfig& c) {
  auto out = BrokerConfigDef().Entries(c);
  for (auto& [key, value] : out) {  // the listeners with their defaults filled in
    if (key == "listen.control") value = c.ControlAddress();
    if (key == "listen.data") value = c.DataAddress();
  }
  return out;
}

Status Validate(const BrokerConfig& c) {
  RDMQ_RETURN_IF_ERROR(metadata::ValidateConfig(c.topic_defaults).WithContext("topic defaults"));
  if (c.group_min_session_timeout_ms > c.group_max_session_timeout_ms) {
    return Bad("group.min.session.timeout.ms", std::to_string(c.group_min_session_timeout_ms),
               "must not exceed group.max.session.timeout.ms (" +
                   std::to_string(c.group_max_session_timeout_ms) + ")");
  }
  if (c.listen_kafka != "off" && !IsHostPort(c.listen_kafka)) {
    return Bad("listen.kafka", c.listen_kafka, "must be host:port or off");
  }
  if (!c.advertise_kafka.empty() && !IsHostPort(c.advertise_kafka)) {
    return Bad("advertise.kafka", c.advertise_kafka, "must be host:port");
  }
  if (c.listen_http != "off" && !IsHostPort(c.listen_http)) {
    return Bad("listen.http", c.listen_http, "must be host:port or off");
  }
  if (!c.allow_anonymous) {
    // Safe default: a listener that authenticates nobody serves only this host. A Kafka listener
    // with SASL, or one that requires client certificates, authenticates its clients.
    const bool kafka_authenticated =
        c.KafkaSasl() || (c.kafka_security_protocol == "SSL" && c.ssl_client_auth == "required");
    std::vector<std::pair<const char*, std::string>> net = {{"listen.http", c.listen_http}};
    if (!kafka_authenticated) net.emplace_back("listen.kafka", c.listen_kafka);
    // The control path authenticates with SCRAM logins or with required client certificates
    // (the data listener then binds endpoints to authenticated sessions, or asks for the same
    // certificates).
    const bool rpc_authenticated =
        !c.RpcSaslMechanisms().empty() || (c.RpcTls() && c.ssl_client_auth == "required");
    if (c.fabric != "shm" && !rpc_authenticated) {
      net.emplace_back("listen.control", c.ControlAddress());
      net.emplace_back("listen.data", c.DataAddress());
    }
    for (const auto& [key, addr] : net) {
      if (addr == "off" || !IsHostPort(addr) || IsLoopback(addr)) continue;
      return Bad(key, addr,
                 "listens beyond loopback, and this broker authenticates nobody: anyone who can reach the "
                 "port could read, write and delete every topic. Listen on 127.0.0.1, or set "
                 "security.allow.anonymous=true to accept that (docs/security.md)");
    }
  }
  if (c.KafkaTls() && (c.ssl_certificate.empty() || c.ssl_key.empty())) {
    return Bad("kafka.security.protocol", c.kafka_security_protocol,
               "needs ssl.certificate.location and ssl.key.location");
  }
  if (c.RpcTls()) {
    if (c.fabric != "tcp") {
      return Bad("rpc.security.protocol", c.rpc_security_protocol,
                 c.fabric == "shm" ? "TLS is for fabric=tcp; shm stays on this host, behind data.dir's "
                                     "permissions"
                                   : "TLS is for fabric=tcp; the verbs fabric has no TLS yet");
    }
    if (c.ssl_certificate.empty() || c.ssl_key.empty()) {
      return Bad("rpc.security.protocol", c.rpc_security_protocol,
                 "needs ssl.certificate.location and ssl.key.location");
    }
  }
  for (const std::string& m : c.RpcSaslMechanisms()) {
    if (m != "SCRAM-SHA-256" && m != "SCRAM-SHA-512") {
      return Bad("rpc.sasl.enabled.mechanisms", c.rpc_sasl_mechanisms,
                 "'" + m + "' is not one of SCRAM-SHA-256, SCRAM-SHA-512 (the control path offers no PLAIN)");
    }
  }
  const std::vector<std::string> mechanisms = c.SaslMechanisms();
  if (c.KafkaSasl() && mechanisms.empty()) {
    return Bad("sasl.enabled.mechanisms", c.sasl_mechanisms, "names no mechanism");
  }
  for (const std::string& m : mechanisms) {
    if (m != "SCRAM-SHA-256" && m != "SCRAM-SHA-512" && m != "PLAIN") {
      return Bad("sasl.enabled.mechanisms", c.sasl_mechanisms,
                 "'" + m + "' is not one of SCRAM-SHA-256, SCRAM-SHA-512, PLAIN");
    }
    if (m == "PLAIN" && c.kafka_security_protocol == "SASL_PLAINTEXT") {
      return Bad("sasl.enabled.mechanisms", c.sasl_mechanisms,
                 "PLAIN sends the password itself, so it needs kafka.security.protocol=SASL_SSL");
    }
  }
  if (c.Clustered()) {
    if (c.broker_id > 0x7fffffffULL) {
      return Bad("broker.id", std::to_string(c.broker_id), "must be at most 2147483647 in a cluster");
    }
    if (!c.cluster_root.starts_with('/') || (c.cluster_root.size() > 1 && c.cluster_root.ends_with('/'))) {
      return Bad("cluster.zookeeper.root", c.cluster_root, "must be a znode path: /name[/name...]");
    }
  }
  for (const std::string& u : SplitList(c.super_users, ";,")) {
    if (!u.starts_with("User:") || !metadata::ValidateUserName(u.substr(5)).ok()) {
      return Bad("super.users", c.super_users,
                 "'" + u + "' is not User:NAME with a user name (1 to 128 of A-Z a-z 0-9 . _ @ -)");
    }
  }
  if (c.ssl_client_auth != "none" && c.ssl_ca.empty()) {
    return Bad("ssl.client.auth", c.ssl_client_auth,
               "needs ssl.ca.location (the CAs client certificates chain to)");
  }
  if (c.fabric != "shm") {
    for (const auto& addr : {c.ControlAddress(), c.DataAddress()}) {
      if (!IsHostPort(addr)) return Bad("listen", addr, "tcp and verbs listeners are host:port");
    }
    if (c.ControlAddress() == c.DataAddress() && !c.ControlAddress().ends_with(":0")) {
      return Bad("listen.data", c.DataAddress(), "must differ from listen.control");
    }
  } else if (c.ControlAddress() == c.DataAddress()) {
    return Bad("listen.data", c.DataAddress(), "must differ from listen.control");
  }
  return Status::Ok();
}

}  // namespace rdmq::broker
