// Internal: the JSON form of a user, as the metadata log's put_user records and the checkpoint's
// "users" array hold it (docs/metadata-format.md):
//
//   {"name": "alice", "scram": {"SCRAM-SHA-256": {"salt": "<hex>", "iterations": 8192,
//                                                 "stored_key": "<hex>", "server_key": "<hex>"}}}
//
// Binary fields are lowercase hex. Errors: kBadUser (not an object, a field missing or mistyped,
// bad hex, or a user ValidateUser refuses), naming what is wrong; callers turn it into the
// corruption code of their file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/metadata/user.h"

namespace rdmq::metadata {

nlohmann::json ToJson(const UserInfo& user);
Result<UserInfo> UserInfoFromJson(const nlohmann::json& j);

// Lowercase hex, two digits a byte.
std::string HexEncode(std::string_view raw);
// Only the canonical spelling (an even number of lowercase hex digits); kBadUser otherwise.
Result<std::string> HexDecode(std::string_view hex);

}  // namespace rdmq::metadata
