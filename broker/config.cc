#include "rdmq/broker/config.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "rdmq/common/log.h"

namespace rdmq::broker {
namespace {

Status Bad(std::string_view key, std::string_view value, std::string_view why) {
  return Status(Errc::kInvalidArgument,
                std::string(key) + "=" + std::string(value) + ": " + std::string(why));
}

Status ParseU32(std::string_view key, std::string_view value, uint32_t lo, uint32_t hi, uint32_t* out) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || value.empty())
    return Bad(key, value, "not an integer");
  if (v < lo || v > hi) {
    return Bad(key, value, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<uint32_t>(v);
  return Status::Ok();
}

// Broker key → topic config key, for the defaults of new topics.
std::string_view TopicKeyFor(std::string_view key) {
  if (key == "num.partitions") return "partitions";
  if (key == "log.segment.bytes") return "segment.bytes";
  if (key == "log.retention.bytes") return "retention.bytes";
  if (key == "log.retention.ms") return "retention.ms";
  if (key == "log.index.interval.bytes") return "index.interval.bytes";
  if (key == "message.max.bytes") return "max.message.bytes";
  if (key == "durability") return "durability";
  return {};
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
  return fabric == "shm" ? data_dir + "/rdmq.sock" : "0.0.0.0:9092";
}

std::string BrokerConfig::DataAddress() const {
  if (!listen_data.empty()) return listen_data;
  return fabric == "shm" ? data_dir + "/rdmq-data.sock" : "0.0.0.0:9093";
}

Status ApplySetting(BrokerConfig* c, std::string_view key, std::string_view value) {
  if (auto topic_key = TopicKeyFor(key); !topic_key.empty()) {
    Status s = metadata::SetConfig(&c->topic_defaults, topic_key, value);
    if (!s.ok()) return Bad(key, value, s.context());
    return Status::Ok();
  }
  if (key == "data.dir") {
    if (value.empty()) return Bad(key, value, "must not be empty");
    c->data_dir = value;
  } else if (key == "fabric") {
    if (value != "shm" && value != "tcp" && value != "verbs")
      return Bad(key, value, "must be shm, tcp or verbs");
    c->fabric = value;
  } else if (key == "listen.control") {
    c->listen_control = value;
  } else if (key == "listen.data") {
    c->listen_data = value;
  } else if (key == "device") {
    c->device = value;
  } else if (key == "broker.id") {
    uint32_t id = 0;
    RDMQ_RETURN_IF_ERROR(ParseU32(key, value, 0, 1u << 30, &id));
    c->broker_id = id;
  } else if (key == "lease.ms") {
    return ParseU32(key, value, 100, 3'600'000, &c->lease_ms);
  } else if (key == "rpc.workers") {
    return ParseU32(key, value, 1, 256, &c->rpc_workers);
  } else if (key == "log.checkpoint.interval.ms") {
    return ParseU32(key, value, 1, 3'600'000, &c->checkpoint_interval_ms);
  } else if (key == "log.retention.check.interval.ms") {
    return ParseU32(key, value, 10, 3'600'000, &c->retention_check_interval_ms);
  } else if (key == "data.spin.us") {
    return ParseU32(key, value, 0, 1'000'000, &c->data_spin_us);
  } else if (key == "log.level") {
    log::Level l;
    if (!log::ParseLevel(value, &l)) return Bad(key, value, "must be trace, debug, info, warn, error or off");
    c->log_level = value;
  } else if (key == "log.format") {
    if (value != "text" && value != "json") return Bad(key, value, "must be text or json");
    c->log_format = value;
  } else {
    return Status(Errc::kInvalidArgument,
                  "unknown config key '" + std::string(key) + "' (see rdmq-broker --help for the list)");
  }
  return Status::Ok();
}

Status ApplySetting(BrokerConfig* c, std::string_view kv) {
  const auto eq = kv.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status(Errc::kInvalidArgument, "'" + std::string(kv) + "': expected key=value");
  }
  return ApplySetting(c, kv.substr(0, eq), kv.substr(eq + 1));
}

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
  std::vector<std::pair<std::string, std::string>> out = {
      {"data.dir", c.data_dir},
      {"fabric", c.fabric},
      {"listen.control", c.ControlAddress()},
      {"listen.data", c.DataAddress()},
      {"device", c.device},
      {"broker.id", std::to_string(c.broker_id)},
      {"lease.ms", std::to_string(c.lease_ms)},
      {"rpc.workers", std::to_string(c.rpc_workers)},
      {"log.checkpoint.interval.ms", std::to_string(c.checkpoint_interval_ms)},
      {"log.retention.check.interval.ms", std::to_string(c.retention_check_interval_ms)},
      {"data.spin.us", std::to_string(c.data_spin_us)},
      {"log.level", c.log_level},
      {"log.format", c.log_format},
  };
  static constexpr std::pair<const char*, const char*> kTopicKeys[] = {
      {"num.partitions", "partitions"},
      {"log.segment.bytes", "segment.bytes"},
      {"log.retention.bytes", "retention.bytes"},
      {"log.retention.ms", "retention.ms"},
      {"log.index.interval.bytes", "index.interval.bytes"},
      {"message.max.bytes", "max.message.bytes"},
      {"durability", "durability"}};
  const auto topic = metadata::ConfigEntries(c.topic_defaults);
  for (const auto& [broker_key, topic_key] : kTopicKeys) {
    for (const auto& [k, v] : topic) {
      if (k == topic_key) out.emplace_back(broker_key, v);
    }
  }
  return out;
}

Status Validate(const BrokerConfig& c) {
  RDMQ_RETURN_IF_ERROR(metadata::ValidateConfig(c.topic_defaults).WithContext("topic defaults"));
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
