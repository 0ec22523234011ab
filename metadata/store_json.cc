#include "metadata/store_json.h"

#include <nlohmann/json.hpp>

#include "metadata/acl_json.h"
#include "metadata/topic_json.h"
#include "metadata/user_json.h"

namespace rdmq::metadata::internal {
namespace {

constexpr int kCheckpointFormat = 1;

// The mutation in a parsed record. Errors carry no location; the caller adds it.
Result<Mutation> MutationFromJson(const nlohmann::json& op) {
  const auto kind = op.find("op");
  if (!op.is_object() || kind == op.end() || !kind->is_string())
    return Status(MetadataErrc::kCorruptLog, "no op");
  const std::string k = kind->get<std::string>();
  if (k == "create_topic" || k == "alter_topic") {
    const auto t = op.find("topic");
    if (t == op.end()) return Status(MetadataErrc::kCorruptLog, k + " without topic");
    RDMQ_ASSIGN_OR_RETURN(TopicInfo info, TopicInfoFromJson(*t));
    return k == "create_topic" ? Mutation::CreateTopic(std::move(info))
                               : Mutation::AlterTopic(std::move(info));
  }
  if (k == "delete_topic") {
    const auto n = op.find("name");
    if (n == op.end() || !n->is_string())
      return Status(MetadataErrc::kCorruptLog, "delete_topic without name");
    return Mutation::DeleteTopic(n->get<std::string>());
  }
  if (k == "producer_id_block") {
    const auto lim = op.find("limit");
    if (lim == op.end() || !lim->is_number_integer()) {
      return Status(MetadataErrc::kCorruptLog, "producer_id_block without limit");
    }
    return Mutation::ProducerIdBlock(ProducerId(lim->get<int64_t>()));
  }
  if (k == "put_user") {
    const auto u = op.find("user");
    if (u == op.end()) return Status(MetadataErrc::kCorruptLog, "put_user without user");
    auto user = UserInfoFromJson(*u);
    if (!user.ok()) return Status(MetadataErrc::kCorruptLog, "put_user: " + user.status().ToString());
    return Mutation::PutUser(std::move(*user));
  }
  if (k == "put_acl" || k == "delete_acl") {
    const auto a = op.find("acl");
    if (a == op.end()) return Status(MetadataErrc::kCorruptLog, k + " without acl");
    auto acl = AclFromJson(*a);
    if (!acl.ok()) return Status(MetadataErrc::kCorruptLog, k + ": " + acl.status().ToString());
    return k == "put_acl" ? Mutation::PutAcl(std::move(*acl)) : Mutation::DeleteAcl(std::move(*acl));
  }
  if (k == "delete_user") {
    const auto n = op.find("name");
    if (n == op.end() || !n->is_string())
      return Status(MetadataErrc::kCorruptLog, "delete_user without name");
    if (Status s = ValidateUserName(n->get_ref<const std::string&>()); !s.ok())
      return Status(MetadataErrc::kCorruptLog, "delete_user: " + s.ToString());
    return Mutation::DeleteUser(n->get<std::string>());
  }
  return Status(MetadataErrc::kCorruptLog, "unknown op '" + k + "'");
}

// The optional "users" array (absent in checkpoints written before users existed: no users).
Status UsersFromJson(const nlohmann::json& j, StoreState* state) {
  const auto bad = [](const std::string& why) { return Status(MetadataErrc::kCorruptCheckpoint, why); };
  const auto us = j.find("users");
  if (us == j.end()) return Status::Ok();
  if (!us->is_array()) return bad("users is not an array");
  for (const auto& u : *us) {
    auto info = UserInfoFromJson(u);
    if (!info.ok()) return bad(info.status().ToString());
    const std::string name = info->name;
    if (!state->users.emplace(name, std::move(*info)).second) return bad("user '" + name + "' twice");
  }
  return Status::Ok();
}

// The optional "acls" array (absent in checkpoints written before ACLs existed: none).
Status AclsFromJson(const nlohmann::json& j, StoreState* state) {
  const auto bad = [](const std::string& why) { return Status(MetadataErrc::kCorruptCheckpoint, why); };
  const auto as = j.find("acls");
  if (as == j.end()) return Status::Ok();
  if (!as->is_array()) return bad("acls is not an array");
  for (const auto& a : *as) {
    auto acl = AclFromJson(a);
    if (!acl.ok()) return bad(acl.status().ToString());
    const std::string line = Describe(*acl);
    if (!state->acls.insert(std::move(*acl)).second) return bad("ACL '" + line + "' twice");
  }
  return Status::Ok();
}

Status StateFromJson(const nlohmann::json& j, StoreState* state) {
  const auto bad = [](const std::string& why) { return Status(MetadataErrc::kCorruptCheckpoint, why); };
  if (!j.is_object()) return bad("not a JSON object");
  const auto fmt = j.find("format");
  if (fmt == j.end() || !fmt->is_number_integer() || fmt->get<int>() != kCheckpointFormat) {
    return bad("unsupported format (want " + std::to_string(kCheckpointFormat) + ")");
  }
  const auto s = j.find("seq");
  const auto nt = j.find("next_topic_id");
  const auto pl = j.find("producer_id_limit");
  const auto ts = j.find("topics");
  if (s == j.end() || !s->is_number_unsigned() || nt == j.end() || !nt->is_number_unsigned() ||
      pl == j.end() || !pl->is_number_integer() || ts == j.end() || !ts->is_array()) {
    return bad("missing or mistyped seq, next_topic_id, producer_id_limit or topics");
  }
  state->seq = s->get<uint64_t>();
  state->next_topic_id = TopicId(nt->get<uint64_t>());
  state->producer_id_limit = ProducerId(pl->get<int64_t>());
  for (const auto& t : *ts) {
    auto info = TopicInfoFromJson(t);
    if (!info.ok()) return bad(info.status().ToString());
    state->topics[info->name] = std::move(*info);
  }
  RDMQ_RETURN_IF_ERROR(UsersFromJson(j, state));
  return AclsFromJson(j, state);
}

}  // namespace

std::string EncodeMutation(const Mutation& m) {
  nlohmann::json j;
  switch (m.op) {
    case Mutation::Op::kCreateTopic:
      j = {{"op", "create_topic"}, {"topic", ToJson(m.topic)}};
      break;
    case Mutation::Op::kAlterTopic:
      j = {{"op", "alter_topic"}, {"topic", ToJson(m.topic)}};
      break;
    case Mutation::Op::kDeleteTopic:
      j = {{"op", "delete_topic"}, {"name", m.name}};
      break;
    case Mutation::Op::kProducerIdBlock:
      j = {{"op", "producer_id_block"}, {"limit", m.limit.value()}};
      break;
    case Mutation::Op::kPutUser:
      j = {{"op", "put_user"}, {"user", ToJson(m.user)}};
      break;
    case Mutation::Op::kDeleteUser:
      j = {{"op", "delete_user"}, {"name", m.name}};
      break;
    case Mutation::Op::kPutAcl:
      j = {{"op", "put_acl"}, {"acl", ToJson(m.acl)}};
      break;
    case Mutation::Op::kDeleteAcl:
      j = {{"op", "delete_acl"}, {"acl", ToJson(m.acl)}};
      break;
  }
  return j.dump();
}

Result<Mutation> DecodeMutation(std::string_view payload, const std::string& log, uint64_t seq) {
  auto op = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (op.is_discarded()) {
    return Status(MetadataErrc::kCorruptLog, log + ": record " + std::to_string(seq) + " is not JSON");
  }
  auto m = MutationFromJson(op);
  if (!m.ok()) return m.status().WithContext(log + " record " + std::to_string(seq));
  return m;
}

std::string EncodeCheckpoint(const StoreState& s) {
  nlohmann::json ts = nlohmann::json::array();
  for (const auto& [name, t] : s.topics) ts.push_back(ToJson(t));
  nlohmann::json us = nlohmann::json::array();
  for (const auto& [name, u] : s.users) us.push_back(ToJson(u));
  nlohmann::json as = nlohmann::json::array();
  for (const auto& a : s.acls) as.push_back(ToJson(a));
  const nlohmann::json j = {{"format", kCheckpointFormat},
                            {"seq", s.seq},
                            {"next_topic_id", s.next_topic_id.value()},
                            {"producer_id_limit", s.producer_id_limit.value()},
                            {"topics", std::move(ts)},
                            {"users", std::move(us)},
                            {"acls", std::move(as)}};
  return j.dump(2) + "\n";
}

Status DecodeCheckpoint(std::string_view text, const std::string& path, StoreState* s) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(MetadataErrc::kCorruptCheckpoint, path + ": not valid JSON");
  return StateFromJson(j, s).WithContext(path);
}

}  // namespace rdmq::metadata::internal
