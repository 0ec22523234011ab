// Internal: the JSON form of an ACL binding, as the metadata log's put_acl and delete_acl records
// and the checkpoint's "acls" array hold it (docs/metadata-format.md):
//
//   {"principal": "User:alice", "permission": "allow", "operation": "write",
//    "resource_type": "topic", "pattern_type": "prefixed", "resource_name": "billing-"}
//
// Errors: kBadAcl (not an object, a field missing or mistyped, an unknown name, or a binding
// ValidateAcl refuses), naming what is wrong; callers turn it into the corruption code of their
// file.
#pragma once

#include <nlohmann/json.hpp>

#include "rdmq/common/status.h"
#include "rdmq/metadata/acl.h"

namespace rdmq::metadata {

nlohmann::json ToJson(const AclBinding& b);
Result<AclBinding> AclFromJson(const nlohmann::json& j);

}  // namespace rdmq::metadata
