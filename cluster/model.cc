#include "rdmq/cluster/model.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "rdmq/cluster/group_offsets.h"

namespace rdmq::cluster {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;  // the "version" field of every znode rdmq writes

Status Bad(std::string_view what, const std::string& why) {
  return Status(ClusterErrc::kBadZnode, std::string(what) + ": " + why);
}

// The object in `text`, with "version" 1; kBadZnode otherwise.
Result<json> Object(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad(what, "not a JSON object");
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != kFormat) {
    return Bad(what, "no \"version\": 1 (written by another program, or a newer rdmq)");
  }
  return j;
}

Result<int64_t> Int(const json& j, const char* key, int64_t min, int64_t max, std::string_view what) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    return Bad(what, std::string("\"") + key + "\" is not an integer");
  const int64_t v = it->get<int64_t>();
  if (v < min || v > max) {
    return Bad(what, std::string("\"") + key + "\" = " + std::to_string(v) + " is outside [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

Result<std::string> Str(const json& j, const char* key, std::string_view what) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return Bad(what, std::string("\"") + key + "\" is not a string");
  return it->get<std::string>();
}

// A list of distinct broker ids.
Result<std::vector<BrokerId>> Brokers(const json& j, std::string_view field, std::string_view what) {
  if (!j.is_array()) return Bad(what, std::string(field) + " is not an array");
  std::vector<BrokerId> out;
  std::set<BrokerId> seen;
  for (const auto& e : j) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 ||
        e.get<int64_t>() > std::numeric_limits<BrokerId>::max()) {
      return Bad(what, std::string(field) + " holds something other than a broker id");
    }
    const auto b = static_cast<BrokerId>(e.get<int64_t>());
    if (!seen.insert(b).second)
      return Bad(what, std::string(field) + " names broker " + std::to_string(b) + " twice");
    out.push_back(b);
  }
  return out;
}

}  // namespace

bool PartitionState::InIsr(BrokerId b) const { return std::find(isr.begin(), isr.end(), b) != isr.end(); }

std::string EncodeBroker(const BrokerInfo& b) {
  return json{{"version", kFormat}, {"id", b.id},       {"control", b.control},
              {"data", b.data},     {"kafka", b.kafka}, {"fabric", b.fabric}}
      .dump();
}

Result<BrokerInfo> DecodeBroker(std::string_view text, std::string_view what) {
  RDMQ_ASSIGN_OR_RETURN(json j, Object(text, what));
  BrokerInfo b;
  RDMQ_ASSIGN_OR_RETURN(int64_t id, Int(j, "id", 0, std::numeric_limits<BrokerId>::max(), what));
  b.id = static_cast<BrokerId>(id);
  RDMQ_ASSIGN_OR_RETURN(b.control, Str(j, "control", what));
  RDMQ_ASSIGN_OR_RETURN(b.data, Str(j, "data", what));
  RDMQ_ASSIGN_OR_RETURN(b.kafka, Str(j, "kafka", what));
  RDMQ_ASSIGN_OR_RETURN(b.fabric, Str(j, "fabric", what));
  if (b.control.empty() || b.data.empty()) return Bad(what, "a broker without control or data address");
  return b;
}

std::string EncodeTopic(const TopicAssignment& t) {
  json config = json::object();
  for (const auto& [k, v] : t.config) config[k] = v;
  json j{{"version", kFormat},
         {"id", t.id},
         {"created_ms", t.created_ms},
         {"config", std::move(config)},
         {"replicas", t.replicas}};
  if (!t.reassigning.empty()) {
    json moving = json::array();
    for (const auto& [p, target] : t.reassigning) moving.push_back({{"partition", p}, {"replicas", target}});
    j["reassigning"] = std::move(moving);
  }
  return j.dump();
}

Result<TopicAssignment> DecodeTopic(std::string_view text, std::string_view name, std::string_view what) {
  RDMQ_ASSIGN_OR_RETURN(json j, Object(text, what));
  TopicAssignment t;
  t.name = std::string(name);
  RDMQ_ASSIGN_OR_RETURN(int64_t id, Int(j, "id", 1, std::numeric_limits<int64_t>::max(), what));
  t.id = static_cast<uint64_t>(id);
  RDMQ_ASSIGN_OR_RETURN(t.created_ms, Int(j, "created_ms", 0, std::numeric_limits<int64_t>::max(), what));
  auto c = j.find("config");
  if (c == j.end() || !c->is_object()) return Bad(what, "\"config\" is not an object");
  for (const auto& [k, v] : c->items()) {
    if (!v.is_string()) return Bad(what, "config " + k + " is not a string");
    t.config.emplace_back(k, v.get<std::string>());
  }
  auto r = j.find("replicas");
  if (r == j.end() || !r->is_array() || r->empty()) return Bad(what, "\"replicas\" is not a non-empty array");
  for (const auto& p : *r) {
    RDMQ_ASSIGN_OR_RETURN(auto replicas, Brokers(p, "a partition's replicas", what));
    if (replicas.empty()) return Bad(what, "a partition without replicas");
    t.replicas.push_back(std::move(replicas));
  }
  if (auto m = j.find("reassigning"); m != j.end()) {
    if (!m->is_array()) return Bad(what, "\"reassigning\" is not an array");
    for (const auto& e : *m) {
      if (!e.is_object()) return Bad(what, "a reassignment is not an object");
      RDMQ_ASSIGN_OR_RETURN(int64_t p,
                            Int(e, "partition", 0, static_cast<int64_t>(t.replicas.size()) - 1, what));
      auto target = e.find("replicas");
      if (target == e.end()) return Bad(what, "a reassignment without \"replicas\"");
      RDMQ_ASSIGN_OR_RETURN(auto to, Brokers(*target, "a reassignment's replicas", what));
      if (to.empty()) return Bad(what, "a reassignment to no replica");
      const auto& now = t.replicas[static_cast<size_t>(p)];
      for (BrokerId b : to) {
        if (std::find(now.begin(), now.end(), b) == now.end())
          return Bad(what, "a reassignment's broker " + std::to_string(b) +
                               " is not among the partition's replicas");
      }
      if (!t.reassigning.emplace(static_cast<int32_t>(p), std::move(to)).second)
        return Bad(what, "partition " + std::to_string(p) + " reassigned twice");
    }
  }
  // Every partition has the replication factor's number of replicas; one being moved, that many
  // in its target (and its old ones beside them until the move completes).
  size_t factor = 0;
  for (size_t p = 0; p < t.replicas.size(); ++p) {
    auto moving = t.reassigning.find(static_cast<int32_t>(p));
    const size_t n = moving == t.reassigning.end() ? t.replicas[p].size() : moving->second.size();
    if (factor != 0 && n != factor) return Bad(what, "partitions with different numbers of replicas");
    factor = n;
  }
  return t;
}

std::string EncodeState(const PartitionState& s) {
  return json{{"version", kFormat},
              {"leader", s.leader},
              {"leader_epoch", s.leader_epoch},
              {"isr", s.isr},
              {"controller_epoch", s.controller_epoch}}
      .dump();
}

Result<PartitionState> DecodeState(std::string_view text, std::string_view what) {
  RDMQ_ASSIGN_OR_RETURN(json j, Object(text, what));
  PartitionState s;
  RDMQ_ASSIGN_OR_RETURN(int64_t leader,
                        Int(j, "leader", kNoLeader, std::numeric_limits<BrokerId>::max(), what));
  s.leader = static_cast<BrokerId>(leader);
  RDMQ_ASSIGN_OR_RETURN(int64_t epoch, Int(j, "leader_epoch", 0, std::numeric_limits<int32_t>::max(), what));
  s.leader_epoch = static_cast<int32_t>(epoch);
  RDMQ_ASSIGN_OR_RETURN(int64_t ce, Int(j, "controller_epoch", 0, std::numeric_limits<int32_t>::max(), what));
  s.controller_epoch = static_cast<int32_t>(ce);
  auto isr = j.find("isr");
  if (isr == j.end()) return Bad(what, "no \"isr\"");
  RDMQ_ASSIGN_OR_RETURN(s.isr, Brokers(*isr, "the ISR", what));
  if (s.leader != kNoLeader && !s.InIsr(s.leader)) return Bad(what, "the leader is not in the ISR");
  return s;
}

std::string EncodeController(BrokerId id, int32_t epoch) {
  return json{{"version", kFormat}, {"broker", id}, {"epoch", epoch}}.dump();
}

Result<std::pair<BrokerId, int32_t>> DecodeController(std::string_view text, std::string_view what) {
  RDMQ_ASSIGN_OR_RETURN(json j, Object(text, what));
  RDMQ_ASSIGN_OR_RETURN(int64_t id, Int(j, "broker", 0, std::numeric_limits<BrokerId>::max(), what));
  RDMQ_ASSIGN_OR_RETURN(int64_t epoch, Int(j, "epoch", 0, std::numeric_limits<int32_t>::max(), what));
  return std::pair(static_cast<BrokerId>(id), static_cast<int32_t>(epoch));
}

std::string EscapeName(std::string_view name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '_' || c == '-') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}

Result<std::string> UnescapeName(std::string_view name) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      out += name[i];
      continue;
    }
    if (i + 2 >= name.size()) {
      return Status(ClusterErrc::kBadZnode, "znode name '" + std::string(name) + "': a cut %XX escape");
    }
    const int hi = hex(name[i + 1]);
    const int lo = hex(name[i + 2]);
    if (hi < 0 || lo < 0) {
      return Status(ClusterErrc::kBadZnode, "znode name '" + std::string(name) + "': a bad %XX escape");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (out.empty()) return Status(ClusterErrc::kBadZnode, "an empty group znode name");
  return out;
}

std::string EncodeTopicOffsets(const std::map<int32_t, GroupOffset>& partitions) {
  json list = json::array();
  for (const auto& [p, o] : partitions) {
    list.push_back({{"partition", p},
                    {"offset", o.offset},
                    {"leader_epoch", o.leader_epoch},
                    {"metadata", o.metadata},
                    {"commit_ms", o.commit_ms}});
  }
  return json{{"version", kFormat}, {"partitions", std::move(list)}}.dump();
}

Result<std::map<int32_t, GroupOffset>> DecodeTopicOffsets(std::string_view text, std::string_view what) {
  RDMQ_ASSIGN_OR_RETURN(json j, Object(text, what));
  auto list = j.find("partitions");
  if (list == j.end() || !list->is_array()) return Bad(what, "\"partitions\" is not an array");
  std::map<int32_t, GroupOffset> out;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const auto& e : *list) {
    if (!e.is_object()) return Bad(what, "a partition's entry is not an object");
    RDMQ_ASSIGN_OR_RETURN(int64_t p, Int(e, "partition", 0, std::numeric_limits<int32_t>::max(), what));
    GroupOffset o;
    RDMQ_ASSIGN_OR_RETURN(o.offset, Int(e, "offset", 0, kMax, what));
    RDMQ_ASSIGN_OR_RETURN(int64_t epoch,
                          Int(e, "leader_epoch", -1, std::numeric_limits<int32_t>::max(), what));
    o.leader_epoch = static_cast<int32_t>(epoch);
    RDMQ_ASSIGN_OR_RETURN(o.metadata, Str(e, "metadata", what));
    RDMQ_ASSIGN_OR_RETURN(o.commit_ms, Int(e, "commit_ms", 0, kMax, what));
    if (!out.emplace(static_cast<int32_t>(p), std::move(o)).second)
      return Bad(what, "partition " + std::to_string(p) + " twice");
  }
  return out;
}

}  // namespace rdmq::cluster
