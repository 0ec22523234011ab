#include "rdmq/metadata/acl.h"

#include <array>
#include <cctype>
#include <utility>

#include "rdmq/metadata/user.h"

namespace rdmq::metadata {
namespace {

constexpr size_t kMaxResourceName = 249;  // Kafka's topic name limit; groups get the same
constexpr std::string_view kUserPrefix = "User:";

template <class E, size_t N>
Result<E> Parse(std::string_view s, const std::array<std::pair<const char*, E>, N>& names, const char* what) {
  for (const auto& [name, value] : names) {
    const std::string_view n(name);
    if (n.size() != s.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(s[i])) == n[i];
    }
    if (same) return value;
  }
  std::string choices;
  for (const auto& [name, value] : names) choices += (choices.empty() ? "" : ", ") + std::string(name);
  return Status(MetadataErrc::kBadAcl, std::string(what) + " '" + std::string(s) + "': one of " + choices);
}

constexpr std::array<std::pair<const char*, AclOperation>, 7> kOperations = {{
    {"read", AclOperation::kRead},
    {"write", AclOperation::kWrite},
    {"create", AclOperation::kCreate},
    {"delete", AclOperation::kDelete},
    {"alter", AclOperation::kAlter},
    {"describe", AclOperation::kDescribe},
    {"all", AclOperation::kAll},
}};
constexpr std::array<std::pair<const char*, AclResourceType>, 3> kResourceTypes = {{
    {"topic", AclResourceType::kTopic},
    {"group", AclResourceType::kGroup},
    {"cluster", AclResourceType::kCluster},
}};
constexpr std::array<std::pair<const char*, AclPatternType>, 2> kPatternTypes = {{
    {"literal", AclPatternType::kLiteral},
    {"prefixed", AclPatternType::kPrefixed},
}};
constexpr std::array<std::pair<const char*, AclPermission>, 2> kPermissions = {{
    {"allow", AclPermission::kAllow},
    {"deny", AclPermission::kDeny},
}};

template <class E, size_t N>
const char* NameOf(E v, const std::array<std::pair<const char*, E>, N>& names) {
  for (const auto& [name, value] : names) {
    if (value == v) return name;
  }
  return "?";
}

Status Bad(const AclBinding& b, const std::string& why) {
  return Status(MetadataErrc::kBadAcl, Describe(b) + ": " + why);
}

bool PrincipalMatches(std::string_view principal, std::string_view user) {
  return principal == kAnyUser ||
         (principal.starts_with(kUserPrefix) && principal.substr(kUserPrefix.size()) == user);
}

bool ResourceMatches(const AclBinding& b, AclResourceType type, std::string_view name) {
  if (b.resource_type != type) return false;
  if (b.pattern_type == AclPatternType::kPrefixed) return name.starts_with(b.resource_name);
  return b.resource_name == "*" || b.resource_name == name;
}

// Whether a binding for `granted` covers a request for `wanted`: All covers everything; an allow
// of Read, Write, Delete or Alter also allows Describe (a deny denies only what it names).
bool OperationCovers(const AclBinding& b, AclOperation wanted) {
  const AclOperation granted = b.operation;
  if (granted == AclOperation::kAll || granted == wanted) return true;
  return b.permission == AclPermission::kAllow && wanted == AclOperation::kDescribe &&
         (granted == AclOperation::kRead || granted == AclOperation::kWrite ||
          granted == AclOperation::kDelete || granted == AclOperation::kAlter);
}

}  // namespace

const char* Name(AclOperation op) { return NameOf(op, kOperations); }
const char* Name(AclResourceType t) { return NameOf(t, kResourceTypes); }
const char* Name(AclPatternType p) { return NameOf(p, kPatternTypes); }
const char* Name(AclPermission p) { return NameOf(p, kPermissions); }
Result<AclOperation> ParseAclOperation(std::string_view s) { return Parse(s, kOperations, "operation"); }
Result<AclResourceType> ParseAclResourceType(std::string_view s) {
  return Parse(s, kResourceTypes, "resource type");
}
Result<AclPatternType> ParseAclPatternType(std::string_view s) {
  return Parse(s, kPatternTypes, "pattern type");
}
Result<AclPermission> ParseAclPermission(std::string_view s) { return Parse(s, kPermissions, "permission"); }

std::string Describe(const AclBinding& b) {
  return std::string(Name(b.permission)) + " " + b.principal + " " + Name(b.operation) + " " +
         Name(b.resource_type) + ":" + b.resource_name +
         (b.pattern_type == AclPatternType::kPrefixed ? "*" : "");
}

Status ValidateAcl(const AclBinding& b) {
  if (!b.principal.starts_with(kUserPrefix)) return Bad(b, "the principal must be User:NAME or User:*");
  const std::string_view user = std::string_view(b.principal).substr(kUserPrefix.size());
  if (user != "*") {
    if (Status s = ValidateUserName(user); !s.ok()) return Bad(b, std::string(s.context()));
  }
  if (b.resource_name.empty()) return Bad(b, "the resource name is empty");
  if (b.resource_name.size() > kMaxResourceName) {
    return Bad(b, "the resource name is longer than " + std::to_string(kMaxResourceName) + " characters");
  }
  if (b.pattern_type == AclPatternType::kPrefixed && b.resource_name == "*") {
    return Bad(b, "a prefix of '*' is not a prefix: use the literal name '*' for every name");
  }
  if (b.resource_type == AclResourceType::kCluster &&
      (b.resource_name != kClusterResourceName || b.pattern_type != AclPatternType::kLiteral)) {
    return Bad(b, "the cluster resource is the literal name 'cluster'");
  }
  return Status::Ok();
}

bool Authorize(std::span<const AclBinding> acls, std::string_view user, AclResourceType type,
               std::string_view name, AclOperation op) {
  bool allowed = false;
  for (const AclBinding& b : acls) {
    if (!PrincipalMatches(b.principal, user) || !ResourceMatches(b, type, name) || !OperationCovers(b, op)) {
      continue;
    }
    if (b.permission == AclPermission::kDeny) return false;
    allowed = true;
  }
  return allowed;
}

}  // namespace rdmq::metadata
