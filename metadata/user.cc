#include "rdmq/metadata/user.h"

#include "rdmq/metadata/topic.h"

namespace rdmq::metadata {
namespace {

// The bounds rdmq::auth holds credentials to (auth/include/rdmq/auth/scram.h).
constexpr uint32_t kMinIterations = 4096;
constexpr uint32_t kMaxIterations = 1'000'000;
constexpr size_t kMinSalt = 16;
constexpr size_t kMaxSalt = 64;
constexpr size_t kMaxName = 128;

bool NameChar(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
         ch == '_' || ch == '@' || ch == '-';
}

Status Bad(std::string_view user, const std::string& why) {
  return Status(MetadataErrc::kBadUser, "user '" + std::string(user) + "': " + why);
}

}  // namespace

size_t ScramKeySize(std::string_view mechanism) {
  if (mechanism == kScramSha256) return 32;
  if (mechanism == kScramSha512) return 64;
  return 0;
}

Status ValidateUserName(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) {
    return Status(MetadataErrc::kBadUser, "user name '" + std::string(name) + "': must be 1 to " +
                                              std::to_string(kMaxName) + " characters");
  }
  for (char ch : name) {
    if (!NameChar(ch)) {
      return Status(MetadataErrc::kBadUser, "user name '" + std::string(name) +
                                                "': only letters, digits, '.', '_', '@' and '-' are allowed");
    }
  }
  return Status::Ok();
}

Status ValidateUser(const UserInfo& user) {
  RDMQ_RETURN_IF_ERROR(ValidateUserName(user.name));
  if (user.scram.empty()) return Bad(user.name, "needs at least one SCRAM secret");
  for (const auto& [mechanism, secret] : user.scram) {
    const size_t key = ScramKeySize(mechanism);
    if (key == 0) {
      return Bad(user.name,
                 "unknown mechanism '" + mechanism + "' (known: " + kScramSha256 + ", " + kScramSha512 + ")");
    }
    if (secret.salt.size() < kMinSalt || secret.salt.size() > kMaxSalt) {
      return Bad(user.name, mechanism + ": the salt has " + std::to_string(secret.salt.size()) +
                                " bytes; it must have " + std::to_string(kMinSalt) + " to " +
                                std::to_string(kMaxSalt));
    }
    if (secret.iterations < kMinIterations || secret.iterations > kMaxIterations) {
      return Bad(user.name, mechanism + ": " + std::to_string(secret.iterations) +
                                " iterations; they must be " + std::to_string(kMinIterations) + " to " +
                                std::to_string(kMaxIterations));
    }
    if (secret.stored_key.size() != key || secret.server_key.size() != key) {
      return Bad(user.name, mechanism + ": StoredKey and ServerKey must have " + std::to_string(key) +
                                " bytes each (they have " + std::to_string(secret.stored_key.size()) +
                                " and " + std::to_string(secret.server_key.size()) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace rdmq::metadata
