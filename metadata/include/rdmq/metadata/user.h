// The broker's users: SASL credentials as the metadata store keeps them (docs/security.md,
// "Users"). A password is never stored, nor sent to the broker: `rdmq user add` derives one SCRAM
// secret per mechanism on the client (salt, iterations, StoredKey, ServerKey; RFC 5802) and the
// store journals those. PLAIN logins are checked against the same secrets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/metadata/topic.h"  // MetadataErrc: kBadUser, kUserExists, kNoSuchUser

namespace rdmq::metadata {

// The SASL mechanisms a user may have a secret for.
inline constexpr char kScramSha256[] = "SCRAM-SHA-256";
inline constexpr char kScramSha512[] = "SCRAM-SHA-512";
// The size of StoredKey and ServerKey for `mechanism` (its hash's): 32, 64, or 0 when unknown.
size_t ScramKeySize(std::string_view mechanism);

struct ScramSecret {
  std::string salt;  // raw bytes, 16..64
  uint32_t iterations = 0;
  std::string stored_key;  // raw, the hash's size (32 for SHA-256, 64 for SHA-512)
  std::string server_key;  // raw, the hash's size
  bool operator==(const ScramSecret&) const = default;
};

struct UserInfo {
  std::string name;
  // By SASL mechanism name: "SCRAM-SHA-256", "SCRAM-SHA-512". At least one.
  std::map<std::string, ScramSecret> scram;
  bool operator==(const UserInfo&) const = default;
};

// 1..128 characters of [A-Za-z0-9._@-] (kBadUser otherwise, naming the rule).
Status ValidateUserName(std::string_view name);
// The name, and every secret: a known mechanism, salt 16..64 bytes, iterations in
// [4096, 1000000], keys of the mechanism's hash size (kBadUser otherwise).
Status ValidateUser(const UserInfo& user);

// A user as one JSON object with "version": 1 (a cluster's user znode: docs/replication.md),
// and back: kBadUser naming what is wrong (not JSON, another version, a user ValidateUser refuses).
std::string EncodeUser(const UserInfo& user);
Result<UserInfo> DecodeUser(std::string_view json);

}  // namespace rdmq::metadata
