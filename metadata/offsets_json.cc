#include "metadata/offsets_json.h"

#include <nlohmann/json.hpp>

namespace rdmq::metadata::internal {
namespace {

using nlohmann::json;
constexpr int kOffsetCheckpointFormat = 1;

json OffsetsToJson(const GroupOffsets& offsets) {
  json a = json::array();
  for (const auto& [key, c] : offsets) {
    a.push_back({{"topic", key.first},
                 {"partition", key.second},
                 {"offset", c.offset},
                 {"leader_epoch", c.leader_epoch},
                 {"metadata", c.metadata},
                 {"commit_ms", c.commit_ms}});
  }
  return a;
}

template <class T>
bool Get(const json& j, const char* name, T* out) {
  const auto it = j.find(name);
  if (it == j.end()) return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return false;
  } else {
    if (!it->is_number_integer()) return false;
  }
  *out = it->get<T>();
  return true;
}

// Errors carry no location and no code; the callers add both.
Result<GroupOffsets> OffsetsFromJson(const json& a) {
  if (!a.is_array()) return Status(Errc::kCorruption, "offsets is not an array");
  GroupOffsets out;
  for (const json& e : a) {
    std::string topic;
    int32_t partition = 0;
    CommittedOffset c;
    if (!e.is_object() || !Get(e, "topic", &topic) || !Get(e, "partition", &partition) ||
        !Get(e, "offset", &c.offset) || !Get(e, "leader_epoch", &c.leader_epoch) ||
        !Get(e, "metadata", &c.metadata) || !Get(e, "commit_ms", &c.commit_ms)) {
      return Status(Errc::kCorruption,
                    "offset entry missing or mistyped topic, partition, offset, "
                    "leader_epoch, metadata or commit_ms");
    }
    if (partition < 0 || c.offset < 0) return Status(Errc::kCorruption, "negative partition or offset");
    out[{std::move(topic), partition}] = std::move(c);
  }
  return out;
}

Result<OffsetMutation> OffsetMutationFromJson(const json& j) {
  std::string op;
  if (!j.is_object() || !Get(j, "op", &op)) return Status(Errc::kCorruption, "no op");
  OffsetMutation m;
  if (op == "commit") {
    m.op = OffsetMutation::Op::kCommit;
    const auto offsets = j.find("offsets");
    if (!Get(j, "group", &m.name) || offsets == j.end())
      return Status(Errc::kCorruption, "commit without group or offsets");
    RDMQ_ASSIGN_OR_RETURN(m.offsets, OffsetsFromJson(*offsets));
    return m;
  }
  if (op == "delete_group") {
    m.op = OffsetMutation::Op::kDeleteGroup;
    if (!Get(j, "group", &m.name)) return Status(Errc::kCorruption, "delete_group without group");
    return m;
  }
  if (op == "delete_topic") {
    m.op = OffsetMutation::Op::kDeleteTopic;
    if (!Get(j, "topic", &m.name)) return Status(Errc::kCorruption, "delete_topic without topic");
    return m;
  }
  return Status(Errc::kCorruption, "unknown op '" + op + "'");
}

}  // namespace

void OffsetState::Apply(const OffsetMutation& m) {
  switch (m.op) {
    case OffsetMutation::Op::kCommit: {
      GroupOffsets& g = groups[m.name];
      for (const auto& [key, c] : m.offsets) g[key] = c;
      return;
    }
    case OffsetMutation::Op::kDeleteGroup:
      groups.erase(m.name);
      return;
    case OffsetMutation::Op::kDeleteTopic:
      for (auto git = groups.begin(); git != groups.end();) {
        GroupOffsets& g = git->second;
        for (auto it = g.lower_bound({m.name, 0}); it != g.end() && it->first.first == m.name;)
          it = g.erase(it);
        git = g.empty() ? groups.erase(git) : std::next(git);
      }
      return;
  }
}

std::string EncodeOffsetMutation(const OffsetMutation& m) {
  json j;
  switch (m.op) {
    case OffsetMutation::Op::kCommit:
      j = {{"op", "commit"}, {"group", m.name}, {"offsets", OffsetsToJson(m.offsets)}};
      break;
    case OffsetMutation::Op::kDeleteGroup:
      j = {{"op", "delete_group"}, {"group", m.name}};
      break;
    case OffsetMutation::Op::kDeleteTopic:
      j = {{"op", "delete_topic"}, {"topic", m.name}};
      break;
  }
  return j.dump();
}

Result<OffsetMutation> DecodeOffsetMutation(std::string_view payload, const std::string& log, uint64_t seq) {
  const std::string where = log + " record " + std::to_string(seq);
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(MetadataErrc::kCorruptLog, where + " is not JSON");
  auto m = OffsetMutationFromJson(j);
  if (!m.ok()) return Status(MetadataErrc::kCorruptLog, where + ": " + std::string(m.status().context()));
  return m;
}

std::string EncodeOffsetCheckpoint(const OffsetState& s) {
  json groups = json::array();
  for (const auto& [name, offsets] : s.groups)
    groups.push_back({{"group", name}, {"offsets", OffsetsToJson(offsets)}});
  const json j = {{"format", kOffsetCheckpointFormat}, {"seq", s.seq}, {"groups", std::move(groups)}};
  return j.dump(1) + "\n";
}

Status DecodeOffsetCheckpoint(std::string_view text, const std::string& path, OffsetState* s) {
  const auto bad = [&](const std::string& why) {
    return Status(MetadataErrc::kCorruptCheckpoint, path + ": " + why);
  };
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  int format = 0;
  if (!Get(j, "format", &format) || format != kOffsetCheckpointFormat)
    return bad("unsupported format (want " + std::to_string(kOffsetCheckpointFormat) + ")");
  const auto groups = j.find("groups");
  if (!Get(j, "seq", &s->seq) || groups == j.end() || !groups->is_array())
    return bad("missing or mistyped seq or groups");
  for (const json& g : *groups) {
    std::string name;
    const auto offsets = g.is_object() ? g.find("offsets") : g.end();
    if (!g.is_object() || !Get(g, "group", &name) || offsets == g.end())
      return bad("group entry without group or offsets");
    auto parsed = OffsetsFromJson(*offsets);
    if (!parsed.ok()) return bad("group " + name + ": " + std::string(parsed.status().context()));
    s->groups[name] = std::move(*parsed);
  }
  return Status::Ok();
}

}  // namespace rdmq::metadata::internal
