#include "metadata/acl_json.h"

#include <string>

namespace rdmq::metadata {

nlohmann::json ToJson(const AclBinding& b) {
  return {{"principal", b.principal},
          {"permission", Name(b.permission)},
          {"operation", Name(b.operation)},
          {"resource_type", Name(b.resource_type)},
          {"pattern_type", Name(b.pattern_type)},
          {"resource_name", b.resource_name}};
}

Result<AclBinding> AclFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status(MetadataErrc::kBadAcl, "an ACL is not a JSON object");
  const auto text = [&](const char* key) -> Result<std::string> {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
      return Status(MetadataErrc::kBadAcl, std::string("an ACL without a string ") + key);
    }
    return it->get<std::string>();
  };
  AclBinding b;
  RDMQ_ASSIGN_OR_RETURN(b.principal, text("principal"));
  RDMQ_ASSIGN_OR_RETURN(b.resource_name, text("resource_name"));
  RDMQ_ASSIGN_OR_RETURN(const std::string permission, text("permission"));
  RDMQ_ASSIGN_OR_RETURN(const std::string operation, text("operation"));
  RDMQ_ASSIGN_OR_RETURN(const std::string resource_type, text("resource_type"));
  RDMQ_ASSIGN_OR_RETURN(const std::string pattern_type, text("pattern_type"));
  RDMQ_ASSIGN_OR_RETURN(b.permission, ParseAclPermission(permission));
  RDMQ_ASSIGN_OR_RETURN(b.operation, ParseAclOperation(operation));
  RDMQ_ASSIGN_OR_RETURN(b.resource_type, ParseAclResourceType(resource_type));
  RDMQ_ASSIGN_OR_RETURN(b.pattern_type, ParseAclPatternType(pattern_type));
  RDMQ_RETURN_IF_ERROR(ValidateAcl(b));
  return b;
}

std::string EncodeAcls(const std::vector<AclBinding>& acls) {
  nlohmann::json list = nlohmann::json::array();
  for (const AclBinding& b : acls) list.push_back(ToJson(b));
  return nlohmann::json{{"version", 1}, {"acls", std::move(list)}}.dump();
}

Result<std::vector<AclBinding>> DecodeAcls(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status(MetadataErrc::kBadAcl, "an ACL list is not a JSON object");
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != 1)
    return Status(MetadataErrc::kBadAcl, "an ACL list without \"version\": 1");
  auto list = j.find("acls");
  if (list == j.end() || !list->is_array())
    return Status(MetadataErrc::kBadAcl, "an ACL list without \"acls\"");
  std::vector<AclBinding> out;
  for (const auto& e : *list) {
    RDMQ_ASSIGN_OR_RETURN(AclBinding b, AclFromJson(e));
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace rdmq::metadata
