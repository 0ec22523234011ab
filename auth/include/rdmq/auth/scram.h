// SASL authentication mechanisms on OpenSSL's primitives (docs/security.md): SCRAM-SHA-256 and
// SCRAM-SHA-512 (RFC 5802, RFC 7677) and PLAIN (RFC 4616), as Kafka clients speak them. The
// exchanges are sans-I/O state machines: bytes in, bytes out; the front doors carry them.
//
// One stored credential serves both mechanisms: a SCRAM credential (salt, iterations, StoredKey,
// ServerKey) never holds the password; PLAIN checks a password by deriving StoredKey from it.
//
//   auto cred = MakeScramCredential(ScramHash::kSha256, "pencil");       // stored by the broker
//   ScramServer s(ScramHash::kSha256, [&](const std::string& user) -> std::optional<ScramCredential> {
//     if (user == "alice") return *cred;
//     return std::nullopt;
//   });
//   auto server_first = s.Step(client_first);   // -> "r=...,s=...,i=4096"
//   auto server_final = s.Step(client_final);   // -> "v=..." once the proof checks out
//   if (s.done()) { /* s.user() is authenticated */ }
//
// Errors: kInvalidArgument for a malformed message (naming what is wrong), kPermissionDenied for a
// wrong password or an unknown user (the same message for both: no user enumeration),
// kFailedPrecondition for a step after the exchange ended.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"

namespace rdmq::auth {

enum class ScramHash { kSha256, kSha512 };

// "SCRAM-SHA-256" / "SCRAM-SHA-512".
const char* MechanismName(ScramHash h);
// The hash of a mechanism name ("SCRAM-SHA-256", "SCRAM-SHA-512"; exact spelling), or nullopt.
std::optional<ScramHash> ScramHashOf(std::string_view mechanism);

struct ScramCredential {
  std::string salt;  // raw bytes
  uint32_t iterations = 0;
  std::string stored_key;  // H(HMAC(SaltedPassword, "Client Key")), raw
  std::string server_key;  // HMAC(SaltedPassword, "Server Key"), raw
};

inline constexpr uint32_t kMinScramIterations = 4096;
inline constexpr uint32_t kMaxScramIterations = 1'000'000;

// A credential for `password`: a random 16-byte salt unless one is given; iterations in
// [kMinScramIterations, kMaxScramIterations] (kInvalidArgument otherwise).
Result<ScramCredential> MakeScramCredential(ScramHash h, std::string_view password,
                                            uint32_t iterations = kMinScramIterations, std::string salt = {});
// Whether `password` is the one `c` was made from (constant time in the key comparison).
bool CheckPassword(ScramHash h, const ScramCredential& c, std::string_view password);

// The server side of one SCRAM exchange.
class ScramServer {
 public:
  using Lookup = std::function<std::optional<ScramCredential>(const std::string& user)>;
  // `nonce` is the server's nonce part (random printable characters when empty; tests pass one).
  ScramServer(ScramHash h, Lookup lookup, std::string nonce = {});

  // The client's next message; returns the server's reply. Two steps: client-first, then
  // client-final.
  Result<std::string> Step(std::string_view client_message);
  bool done() const { return state_ == State::kDone; }
  // The authenticated user (valid once done()).
  const std::string& user() const { return user_; }

 private:
  enum class State { kFirst, kFinal, kDone, kFailed };
  Result<std::string> First(std::string_view m);
  Result<std::string> Final(std::string_view m);

  const ScramHash hash_;
  const Lookup lookup_;
  std::string nonce_;
  State state_ = State::kFirst;
  std::string user_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string client_nonce_;
  std::string full_nonce_;
  ScramCredential cred_;
  bool known_user_ = false;
};

// The client side (rdmq's own clients, and the tests that check the server against it).
class ScramClient {
 public:
  ScramClient(ScramHash h, std::string user, std::string password, std::string nonce = {});
  std::string First();
  // The server-first message in, the client-final message out.
  Result<std::string> Final(std::string_view server_first);
  // Checks the server's signature (the server proved it knows the credential).
  Status Verify(std::string_view server_final) const;

 private:
  const ScramHash hash_;
  std::string user_, password_, nonce_;
  std::string client_first_bare_;
  std::string auth_message_;
  std::string server_key_;
};

// SASL PLAIN: "[authzid] NUL authcid NUL passwd". kInvalidArgument when malformed, or when an
// authorization identity other than the user is asked for.
struct PlainCredentials {
  std::string user;
  std::string password;
};
Result<PlainCredentials> ParsePlain(std::string_view message);

// Base64 (RFC 4648, padded), as SCRAM messages carry binary values.
std::string Base64Encode(std::string_view raw);
Result<std::string> Base64Decode(std::string_view text);

}  // namespace rdmq::auth
