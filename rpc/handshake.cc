#include "rpc/handshake.h"

#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/rpc/errors.h"

namespace rdmq::rpc::internal {
namespace {

enum MessageType : uint8_t { kTypeHello = 1, kTypeWelcome = 2 };

void PutString(coding::Writer& w, std::string_view s) {
  w.LE<uint32_t>(static_cast<uint32_t>(s.size()));
  w.Bytes(s);
}

bool GetString(coding::Reader& r, std::string* out, size_t max) {
  const uint32_t n = r.LE<uint32_t>();
  if (!r.ok() || n > max) return false;
  auto b = r.Bytes(n);
  if (!r.ok()) return false;
  out->assign(reinterpret_cast<const char*>(b.data()), b.size());
  return true;
}

bool GetDescriptor(coding::Reader& r, fabric::RegionDescriptor* out) {
  std::string bytes;
  if (!GetString(r, &bytes, 4096)) return false;
  auto d = fabric::RegionDescriptor::Decode(coding::AsBytes(bytes));
  if (!d.ok()) return false;
  *out = std::move(d).value();
  return true;
}

Status Bad(std::string_view what, std::string_view why) {
  return Status(RpcErrc::kHandshake, std::string(what) + ": " + std::string(why));
}

bool CheckPreamble(coding::Reader& r, uint8_t type) {
  auto magic = r.Bytes(sizeof kMagic);
  if (!r.ok() || std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) return false;
  return r.U8() == type && r.U8() == kHandshakeVersion && r.ok();
}

}  // namespace

std::string EncodeHello(const Hello& h) {
  std::string out;
  coding::Writer w(&out);
  w.Bytes(kMagic, sizeof kMagic);
  w.U8(kTypeHello);
  w.U8(kHandshakeVersion);
  w.U8(static_cast<uint8_t>(h.kind));
  w.LE<uint16_t>(h.channel);
  w.LE<uint32_t>(h.channels);
  w.LE<uint64_t>(h.client_id);
  w.LE<uint64_t>(h.token);
  w.LE<uint64_t>(h.request_ring);
  w.LE<uint64_t>(h.response_ring);
  PutString(w, h.response_region.Encode());
  PutString(w, h.wake_region.Encode());
  return out;
}

Result<Hello> DecodeHello(std::string_view bytes) {
  coding::Reader r(bytes.data(), bytes.size());
  if (!CheckPreamble(r, kTypeHello)) return Bad("hello", "not an rdmq RPC hello (magic, type or version)");
  Hello h;
  const uint8_t kind = r.U8();
  h.channel = r.LE<uint16_t>();
  h.channels = r.LE<uint32_t>();
  h.client_id = r.LE<uint64_t>();
  h.token = r.LE<uint64_t>();
  h.request_ring = r.LE<uint64_t>();
  h.response_ring = r.LE<uint64_t>();
  if (!r.ok()) return Bad("hello", "truncated");
  if (kind != static_cast<uint8_t>(HelloKind::kNew) && kind != static_cast<uint8_t>(HelloKind::kJoin)) {
    return Bad("hello", "unknown kind " + std::to_string(kind));
  }
  h.kind = static_cast<HelloKind>(kind);
  if (!GetDescriptor(r, &h.response_region)) return Bad("hello", "bad response region descriptor");
  if (!GetDescriptor(r, &h.wake_region)) return Bad("hello", "bad wake region descriptor");
  if (r.remaining() != 0) return Bad("hello", "trailing bytes");
  return h;
}

std::string EncodeWelcome(const Welcome& wl) {
  std::string out;
  coding::Writer w(&out);
  w.Bytes(kMagic, sizeof kMagic);
  w.U8(kTypeWelcome);
  w.U8(kHandshakeVersion);
  w.LE<uint16_t>(wl.error);
  PutString(w, wl.message);
  w.LE<uint64_t>(wl.client_id);
  w.LE<uint64_t>(wl.token);
  w.LE<uint32_t>(wl.credits);
  w.U8(wl.active ? 1 : 0);
  w.LE<uint64_t>(wl.credit_limit);
  w.LE<uint64_t>(wl.request_ring);
  PutString(w, wl.error == 0 ? wl.request_region.Encode() : std::string());
  PutString(w, wl.error == 0 ? wl.wake_region.Encode() : std::string());
  return out;
}

Result<Welcome> DecodeWelcome(std::string_view bytes) {
  coding::Reader r(bytes.data(), bytes.size());
  if (!CheckPreamble(r, kTypeWelcome))
    return Bad("welcome", "not an rdmq RPC welcome (magic, type or version)");
  Welcome wl;
  wl.error = r.LE<uint16_t>();
  if (!GetString(r, &wl.message, 65536)) return Bad("welcome", "truncated message");
  wl.client_id = r.LE<uint64_t>();
  wl.token = r.LE<uint64_t>();
  wl.credits = r.LE<uint32_t>();
  wl.active = r.U8() != 0;
  wl.credit_limit = r.LE<uint64_t>();
  wl.request_ring = r.LE<uint64_t>();
  if (!r.ok()) return Bad("welcome", "truncated");
  if (wl.error != 0) return wl;
  if (!GetDescriptor(r, &wl.request_region)) return Bad("welcome", "bad request region descriptor");
  if (!GetDescriptor(r, &wl.wake_region)) return Bad("welcome", "bad wake region descriptor");
  if (r.remaining() != 0) return Bad("welcome", "trailing bytes");
  return wl;
}

}  // namespace rdmq::rpc::internal
