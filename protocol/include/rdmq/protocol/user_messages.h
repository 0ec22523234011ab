// The SASL user RPCs (docs/protocol.md, "Users"), field by field: CreateUser, AlterUser,
// DeleteUser, ListUsers. Same conventions as messages.h: each struct lists its fields once in
// Visit(). The client derives the secrets from the password; a password never travels, and
// ListUsers answers names and mechanisms only, never a secret.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmq/protocol/codec.h"

namespace rdmq::protocol {

// One SCRAM secret (RFC 5802): what the broker keeps to check a password it never sees.
struct ScramSecretEntry {
  std::string mechanism;  // "SCRAM-SHA-256" | "SCRAM-SHA-512"
  Blob salt;              // raw bytes, 16..64
  uint32_t iterations = 0;
  Blob stored_key;  // raw bytes, the hash's size
  Blob server_key;  // raw bytes, the hash's size
  template <class V>
  void Visit(V& v) {
    v(mechanism);
    v(salt);
    v(iterations);
    v(stored_key);
    v(server_key);
  }
  bool operator==(const ScramSecretEntry&) const = default;
};

// --- CreateUser (50), AlterUser (51) ----------------------------------------------------------
struct UserRequest {
  std::string name;
  std::vector<ScramSecretEntry> secrets;  // one per mechanism; AlterUser replaces them all
  template <class V>
  void Visit(V& v) {
    v(name);
    v(secrets);
  }
};

// --- DeleteUser (52) --------------------------------------------------------------------------
struct UserNameRequest {
  std::string name;
  template <class V>
  void Visit(V& v) {
    v(name);
  }
};

// --- ListUsers (53) ---------------------------------------------------------------------------
struct UserListing {
  std::string name;
  std::vector<std::string> mechanisms;  // sorted
  template <class V>
  void Visit(V& v) {
    v(name);
    v(mechanisms);
  }
  bool operator==(const UserListing&) const = default;
};
struct ListUsersResponse {
  std::vector<UserListing> users;  // sorted by name
  template <class V>
  void Visit(V& v) {
    v(users);
  }
};

}  // namespace rdmq::protocol
