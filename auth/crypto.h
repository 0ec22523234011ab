// OpenSSL's primitives as SCRAM uses them: hash, HMAC, PBKDF2, random bytes. Values are raw bytes
// in std::string.
#pragma once

#include <string>
#include <string_view>

#include "rdmq/auth/scram.h"

namespace rdmq::auth::internal {

size_t DigestSize(ScramHash h);
std::string Hash(ScramHash h, std::string_view data);
std::string Hmac(ScramHash h, std::string_view key, std::string_view data);
std::string Pbkdf2(ScramHash h, std::string_view password, std::string_view salt, uint32_t iterations);
std::string RandomBytes(size_t n);
// Constant-time equality of two byte strings (false when the lengths differ).
bool SameBytes(std::string_view a, std::string_view b);

}  // namespace rdmq::auth::internal
