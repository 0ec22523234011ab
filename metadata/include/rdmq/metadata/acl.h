// Access control lists: who may do what to which resource (docs/security.md, "Authorization"),
// as the metadata store will keep them and the front doors will ask them. Kafka's model, cut to
// what rdmq's requests need:
//
//   a binding = principal ("User:alice", or "User:*" for every user) + permission (allow, deny)
//               + operation (Read, Write, Create, Delete, Alter, Describe, All)
//               + resource: a type (topic, group, cluster) and a name pattern, literal ("orders",
//                 or "*" for every name) or prefixed ("billing-" matches "billing-eu").
//
// Authorize() is the decision, a pure function: a matching deny wins; else a matching allow
// grants; else the request is refused. An allow of Read, Write, Delete or Alter also allows
// Describe (as in Kafka: whoever may read a topic may see it); a deny denies only what it names
// (All: everything). The cluster resource has the one name "cluster".
//
// Threading: pure functions over values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/metadata/topic.h"  // MetadataErrc: kBadAcl

namespace rdmq::metadata {

enum class AclOperation : uint8_t { kRead, kWrite, kCreate, kDelete, kAlter, kDescribe, kAll };
enum class AclResourceType : uint8_t { kTopic, kGroup, kCluster };
enum class AclPatternType : uint8_t { kLiteral, kPrefixed };
enum class AclPermission : uint8_t { kAllow, kDeny };

inline constexpr char kClusterResourceName[] = "cluster";
inline constexpr char kAnyUser[] = "User:*";

struct AclBinding {
  std::string principal;  // "User:NAME" or "User:*"
  AclPermission permission = AclPermission::kAllow;
  AclOperation operation = AclOperation::kRead;
  AclResourceType resource_type = AclResourceType::kTopic;
  AclPatternType pattern_type = AclPatternType::kLiteral;
  std::string resource_name;  // literal name, "*", or the prefix
  bool operator==(const AclBinding&) const = default;
  auto operator<=>(const AclBinding&) const = default;
};

// Names as the CLI and the JSON files spell them ("read", "topic", "prefixed", "deny"), and
// their parsers (any case; kBadAcl naming the choices otherwise).
const char* Name(AclOperation op);
const char* Name(AclResourceType t);
const char* Name(AclPatternType p);
const char* Name(AclPermission p);
Result<AclOperation> ParseAclOperation(std::string_view s);
Result<AclResourceType> ParseAclResourceType(std::string_view s);
Result<AclPatternType> ParseAclPatternType(std::string_view s);
Result<AclPermission> ParseAclPermission(std::string_view s);

// A binding that can be stored: the principal "User:" + a valid user name or "*"; a non-empty
// resource name (not "*" for a prefix); the cluster resource named "cluster" and literal; topic
// and group names no longer than 249 characters. kBadAcl naming what is wrong otherwise.
Status ValidateAcl(const AclBinding& b);

// One line for logs and the CLI: "allow User:alice read topic:orders" ("topic:billing-*" for a
// prefix).
std::string Describe(const AclBinding& b);

// A list of bindings as one JSON object, {"version": 1, "acls": [...]} (a cluster's ACL znode:
// docs/replication.md), and back: kBadAcl naming what is wrong.
std::string EncodeAcls(const std::vector<AclBinding>& acls);
Result<std::vector<AclBinding>> DecodeAcls(std::string_view json);

// Whether `user` (a user name, without "User:") may perform `op` on the resource.
bool Authorize(std::span<const AclBinding> acls, std::string_view user, AclResourceType type,
               std::string_view name, AclOperation op);

}  // namespace rdmq::metadata
