#include "rdmq/auth/scram.h"

#include <openssl/evp.h>

#include <charconv>
#include <utility>
#include <vector>

#include "crypto.h"

namespace rdmq::auth {

using internal::DigestSize;
using internal::Hash;
using internal::Hmac;
using internal::Pbkdf2;
using internal::RandomBytes;
using internal::SameBytes;

namespace {

Status Malformed(std::string_view why) {
  return Status(Errc::kInvalidArgument, "malformed SCRAM message: " + std::string(why));
}

Status Refused() {
  return Status(Errc::kPermissionDenied, "authentication failed: unknown user or wrong password");
}

// "k=v,k=v,...": the attributes in order. A value runs to the next comma.
bool SplitAttributes(std::string_view m, std::vector<std::pair<std::string_view, std::string_view>>* out) {
  while (!m.empty()) {
    const size_t comma = m.find(',');
    const std::string_view part = m.substr(0, comma);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    out->emplace_back(part.substr(0, eq), part.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    m.remove_prefix(comma + 1);
    if (m.empty()) return false;  // a trailing comma
  }
  return true;
}

// saslname: "=2C" is ',', "=3D" is '='; any other '=' is malformed.
bool DecodeName(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=') {
      out->push_back(s[i]);
      continue;
    }
    const std::string_view esc = s.substr(i, 3);
    if (esc == "=2C") {
      out->push_back(',');
    } else if (esc == "=3D") {
      out->push_back('=');
    } else {
      return false;
    }
    i += 2;
  }
  return !out->empty();
}

std::string EncodeName(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ',') {
      out += "=2C";
    } else if (c == '=') {
      out += "=3D";
    } else {
      out += c;
    }
  }
  return out;
}

// A nonce: printable ASCII but ','.
bool ValidNonce(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  }
  return true;
}

std::string RandomNonce() {
  // 24 random bytes as base64 minus ',' (base64 has none): 32 printable characters.
  return Base64Encode(RandomBytes(24));
}

std::string Xor(std::string_view a, std::string_view b) {
  std::string out(a.size(), '\0');
  for (size_t i = 0; i < a.size(); ++i) out[i] = static_cast<char>(a[i] ^ b[i]);
  return out;
}

}  // namespace

const char* MechanismName(ScramHash h) { return h == ScramHash::kSha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512"; }

std::optional<ScramHash> ScramHashOf(std::string_view mechanism) {
  for (const ScramHash h : {ScramHash::kSha256, ScramHash::kSha512}) {
    if (mechanism == MechanismName(h)) return h;
  }
  return std::nullopt;
}

std::string Base64Encode(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3), '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Status(Errc::kInvalidArgument, "base64: length not a multiple of 4");
  for (char c : text) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                    c == '/' || c == '=';
    if (!ok) return Status(Errc::kInvalidArgument, "base64: a character outside the alphabet");
  }
  const size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  if (text.substr(0, text.size() - pad).find('=') != std::string_view::npos) {
    return Status(Errc::kInvalidArgument, "base64: padding inside the text");
  }
  std::string out(3 * (text.size() / 4), '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return Status(Errc::kInvalidArgument, "base64: not decodable");
  out.resize(static_cast<size_t>(n) - pad);  // EVP_DecodeBlock counts the padding as zero bytes
  // Only the canonical spelling (unused bits zero), so that one value has one text.
  if (Base64Encode(out) != text)
    return Status(Errc::kInvalidArgument, "base64: not canonical (unused bits set)");
  return out;
}

Result<ScramCredential> MakeScramCredential(ScramHash h, std::string_view password, uint32_t iterations,
                                            std::string salt) {
  if (iterations < kMinScramIterations || iterations > kMaxScramIterations) {
    return Status(Errc::kInvalidArgument, "SCRAM iterations " + std::to_string(iterations) + " outside [" +
                                              std::to_string(kMinScramIterations) + ", " +
                                              std::to_string(kMaxScramIterations) + "]");
  }
  if (salt.empty()) salt = RandomBytes(16);
  const std::string salted = Pbkdf2(h, password, salt, iterations);
  ScramCredential c;
  c.salt = std::move(salt);
  c.iterations = iterations;
  c.stored_key = Hash(h, Hmac(h, salted, "Client Key"));
  c.server_key = Hmac(h, salted, "Server Key");
  return c;
}

bool CheckPassword(ScramHash h, const ScramCredential& c, std::string_view password) {
  if (c.iterations < kMinScramIterations || c.iterations > kMaxScramIterations) return false;
  const std::string salted = Pbkdf2(h, password, c.salt, c.iterations);
  return SameBytes(Hash(h, Hmac(h, salted, "Client Key")), c.stored_key);
}

ScramServer::ScramServer(ScramHash h, Lookup lookup, std::string nonce)
    : hash_(h), lookup_(std::move(lookup)), nonce_(nonce.empty() ? RandomNonce() : std::move(nonce)) {}

Result<std::string> ScramServer::Step(std::string_view client_message) {
  Result<std::string> r = Status(Errc::kFailedPrecondition, "the SCRAM exchange is over");
  switch (state_) {
    case State::kFirst:
      r = First(client_message);
      break;
    case State::kFinal:
      r = Final(client_message);
      break;
    case State::kDone:
    case State::kFailed:
      return r;
  }
  if (!r.ok()) state_ = State::kFailed;
  return r;
}

Result<std::string> ScramServer::First(std::string_view m) {
  // gs2-header: cbind flag "n" or "y" (no channel binding), ",", optional "a=authzid", ",".
  if (m.starts_with("p=")) return Status(Errc::kInvalidArgument, "SCRAM channel binding is not supported");
  if (!m.starts_with("n,") && !m.starts_with("y,"))
    return Malformed("the gs2 header must start with n, or y,");
  const size_t second = m.find(',', 2);
  if (second == std::string_view::npos) return Malformed("no end of the gs2 header");
  const std::string_view authzid = m.substr(2, second - 2);
  gs2_header_ = std::string(m.substr(0, second + 1));
  client_first_bare_ = std::string(m.substr(second + 1));
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  if (!SplitAttributes(client_first_bare_, &attrs) || attrs.size() < 2 || attrs[0].first != "n" ||
      attrs[1].first != "r") {
    return Malformed("client-first must be n=USER,r=NONCE[,extensions]");
  }
  if (!DecodeName(attrs[0].second, &user_)) return Malformed("a bad user name");
  if (!ValidNonce(attrs[1].second)) return Malformed("a bad client nonce");
  for (size_t i = 2; i < attrs.size(); ++i) {
    if (attrs[i].first == "m") return Malformed("an unknown mandatory extension");
    if (attrs[i].first == "tokenauth") {
      return Status(Errc::kInvalidArgument, "SCRAM delegation tokens (tokenauth) are not supported");
    }
  }
  if (!authzid.empty()) {
    std::string az;
    if (!authzid.starts_with("a=") || !DecodeName(authzid.substr(2), &az)) return Malformed("a bad authzid");
    if (az != user_)
      return Status(Errc::kPermissionDenied, "authentication failed: authzid differs from the user");
  }
  if (std::optional<ScramCredential> c = lookup_(user_)) {
    cred_ = std::move(*c);
    known_user_ = cred_.iterations >= kMinScramIterations && cred_.iterations <= kMaxScramIterations &&
                  cred_.stored_key.size() == DigestSize(hash_) &&
                  cred_.server_key.size() == DigestSize(hash_);
  }
  if (!known_user_) {
    // Answer as for a real user, so that a client cannot tell unknown users from wrong passwords.
    cred_.salt = Hash(hash_, "rdmq-unknown-user:" + user_).substr(0, 16);
    cred_.iterations = kMinScramIterations;
    cred_.stored_key = RandomBytes(DigestSize(hash_));
    cred_.server_key = RandomBytes(DigestSize(hash_));
  }
  client_nonce_ = std::string(attrs[1].second);
  full_nonce_ = client_nonce_ + nonce_;
  server_first_ =
      "r=" + full_nonce_ + ",s=" + Base64Encode(cred_.salt) + ",i=" + std::to_string(cred_.iterations);
  state_ = State::kFinal;
  return server_first_;
}

Result<std::string> ScramServer::Final(std::string_view m) {
  const size_t p = m.rfind(",p=");
  if (p == std::string_view::npos) return Malformed("client-final without a proof");
  const std::string_view without_proof = m.substr(0, p);
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  if (!SplitAttributes(without_proof, &attrs) || attrs.size() < 2 || attrs[0].first != "c" ||
      attrs[1].first != "r") {
    return Malformed("client-final must be c=BINDING,r=NONCE[,extensions],p=PROOF");
  }
  if (attrs[0].second != Base64Encode(gs2_header_))
    return Malformed("the channel binding differs from the gs2 header");
  // RFC 5802: the nonce is the server's r (client nonce + server nonce). librdkafka sends the
  // client nonce once more in front of it (as Kafka's broker allows); the proof covers what was
  // sent either way.
  if (attrs[1].second != full_nonce_ && attrs[1].second != client_nonce_ + full_nonce_) {
    return Malformed("the nonce differs from the server's");
  }
  auto proof = Base64Decode(m.substr(p + 3));
  if (!proof.ok() || proof->size() != DigestSize(hash_)) return Malformed("a bad proof");
  const std::string auth_message =
      client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
  const std::string client_key = Xor(*proof, Hmac(hash_, cred_.stored_key, auth_message));
  if (!known_user_ || !SameBytes(Hash(hash_, client_key), cred_.stored_key)) return Refused();
  state_ = State::kDone;
  return "v=" + Base64Encode(Hmac(hash_, cred_.server_key, auth_message));
}

ScramClient::ScramClient(ScramHash h, std::string user, std::string password, std::string nonce)
    : hash_(h),
      user_(std::move(user)),
      password_(std::move(password)),
      nonce_(nonce.empty() ? RandomNonce() : std::move(nonce)) {}

std::string ScramClient::First() {
  client_first_bare_ = "n=" + EncodeName(user_) + ",r=" + nonce_;
  return "n,," + client_first_bare_;
}

Result<std::string> ScramClient::Final(std::string_view server_first) {
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  if (!SplitAttributes(server_first, &attrs) || attrs.size() < 3 || attrs[0].first != "r" ||
      attrs[1].first != "s" || attrs[2].first != "i") {
    return Malformed("server-first must be r=NONCE,s=SALT,i=ITERATIONS");
  }
  if (!attrs[0].second.starts_with(nonce_) || !ValidNonce(attrs[0].second))
    return Malformed("a bad server nonce");
  auto salt = Base64Decode(attrs[1].second);
  if (!salt.ok() || salt->empty()) return Malformed("a bad salt");
  uint32_t iterations = 0;
  const auto [end, ec] =
      std::from_chars(attrs[2].second.data(), attrs[2].second.data() + attrs[2].second.size(), iterations);
  if (ec != std::errc() || end != attrs[2].second.data() + attrs[2].second.size() ||
      iterations < kMinScramIterations || iterations > kMaxScramIterations) {
    return Malformed("iterations outside [4096, 1000000]");
  }
  const std::string salted = Pbkdf2(hash_, password_, *salt, iterations);
  const std::string client_key = Hmac(hash_, salted, "Client Key");
  const std::string without_proof = "c=" + Base64Encode("n,,") + ",r=" + std::string(attrs[0].second);
  auth_message_ = client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const std::string signature = Hmac(hash_, Hash(hash_, client_key), auth_message_);
  server_key_ = Hmac(hash_, salted, "Server Key");
  return without_proof + ",p=" + Base64Encode(Xor(client_key, signature));
}

Status ScramClient::Verify(std::string_view server_final) const {
  if (server_final.starts_with("e=")) {
    return Status(Errc::kPermissionDenied, "the server refused: " + std::string(server_final.substr(2)));
  }
  if (!server_final.starts_with("v=")) return Malformed("server-final must be v=SIGNATURE or e=ERROR");
  const std::string want = Base64Encode(Hmac(hash_, server_key_, auth_message_));
  if (!SameBytes(server_final.substr(2), want)) {
    return Status(Errc::kPermissionDenied,
                  "the server's signature is wrong: it does not hold this credential");
  }
  return Status::Ok();
}

Result<PlainCredentials> ParsePlain(std::string_view message) {
  const size_t a = message.find('\0');
  const size_t b = a == std::string_view::npos ? a : message.find('\0', a + 1);
  if (b == std::string_view::npos || message.find('\0', b + 1) != std::string_view::npos) {
    return Status(Errc::kInvalidArgument,
                  "malformed SASL PLAIN message: must be [authzid] NUL user NUL password");
  }
  PlainCredentials c;
  const std::string_view authzid = message.substr(0, a);
  c.user = std::string(message.substr(a + 1, b - a - 1));
  c.password = std::string(message.substr(b + 1));
  if (c.user.empty() || c.password.empty()) {
    return Status(Errc::kInvalidArgument, "malformed SASL PLAIN message: empty user or password");
  }
  if (!authzid.empty() && authzid != c.user) {
    return Status(Errc::kPermissionDenied, "authentication failed: authzid differs from the user");
  }
  return c;
}

}  // namespace rdmq::auth
