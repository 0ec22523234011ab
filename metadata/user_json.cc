#include "metadata/user_json.h"

#include <cstdint>
#include <limits>

namespace rdmq::metadata {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

int HexValue(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

Status Bad(const std::string& why) { return Status(MetadataErrc::kBadUser, why); }

Result<ScramSecret> SecretFromJson(const std::string& mechanism, const nlohmann::json& j) {
  if (!j.is_object()) return Bad(mechanism + ": the secret must be a JSON object");
  const auto salt = j.find("salt");
  const auto iterations = j.find("iterations");
  const auto stored = j.find("stored_key");
  const auto server = j.find("server_key");
  if (salt == j.end() || !salt->is_string() || iterations == j.end() || !iterations->is_number_unsigned() ||
      stored == j.end() || !stored->is_string() || server == j.end() || !server->is_string()) {
    return Bad(mechanism + ": the secret needs salt, iterations, stored_key and server_key");
  }
  const uint64_t n = iterations->get<uint64_t>();
  if (n > std::numeric_limits<uint32_t>::max()) return Bad(mechanism + ": iterations out of range");
  ScramSecret s;
  s.iterations = static_cast<uint32_t>(n);
  const auto field = [&](const nlohmann::json& v, const char* what, std::string* out) -> Status {
    auto raw = HexDecode(v.get_ref<const std::string&>());
    if (!raw.ok()) return raw.status().WithContext(mechanism + " " + what);
    *out = std::move(*raw);
    return Status::Ok();
  };
  RDMQ_RETURN_IF_ERROR(field(*salt, "salt", &s.salt));
  RDMQ_RETURN_IF_ERROR(field(*stored, "stored_key", &s.stored_key));
  RDMQ_RETURN_IF_ERROR(field(*server, "server_key", &s.server_key));
  return s;
}

}  // namespace

std::string HexEncode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (const char ch : raw) {
    const auto b = static_cast<unsigned char>(ch);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

Result<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return Bad("odd number of hex digits");
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]);
    const int lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return Bad("not lowercase hex at digit " + std::to_string(hi < 0 ? i : i + 1));
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

nlohmann::json ToJson(const UserInfo& u) {
  nlohmann::json scram = nlohmann::json::object();
  for (const auto& [mechanism, s] : u.scram) {
    scram[mechanism] = {{"salt", HexEncode(s.salt)},
                        {"iterations", s.iterations},
                        {"stored_key", HexEncode(s.stored_key)},
                        {"server_key", HexEncode(s.server_key)}};
  }
  return {{"name", u.name}, {"scram", std::move(scram)}};
}

Result<UserInfo> UserInfoFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Bad("a user must be a JSON object");
  const auto name = j.find("name");
  const auto scram = j.find("scram");
  if (name == j.end() || !name->is_string() || scram == j.end() || !scram->is_object()) {
    return Bad("a user entry needs name and scram");
  }
  UserInfo u;
  u.name = name->get<std::string>();
  for (const auto& [mechanism, secret] : scram->items()) {
    auto s = SecretFromJson(mechanism, secret);
    if (!s.ok()) return s.status().WithContext("user '" + u.name + "'");
    u.scram.emplace(mechanism, std::move(*s));
  }
  RDMQ_RETURN_IF_ERROR(ValidateUser(u));
  return u;
}

std::string EncodeUser(const UserInfo& user) {
  nlohmann::json j = ToJson(user);
  j["version"] = 1;
  return j.dump();
}

Result<UserInfo> DecodeUser(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad("a user record is not a JSON object");
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != 1)
    return Bad("a user record without \"version\": 1");
  j.erase("version");
  return UserInfoFromJson(j);
}

}  // namespace rdmq::metadata
