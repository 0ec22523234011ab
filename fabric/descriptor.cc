// RegionDescriptor byte format (docs/fabric.md, "Region descriptor"), little-endian:
//
//   0   4  magic "RDMR"
//   4   1  version (1)
//   5   1  provider (1 shm, 2 tcp, 3 verbs)
//   6   2  node length n (at most kMaxNode)
//   8   4  access bits (only kLocalWrite..kRemoteAtomic)
//   12  4  reserved, zero
//   16  8  key
//   24  8  base
//   32  8  length
//   40  n  node address, "<scheme>:..." matching the provider, or empty
//   40+n 4 CRC-32C of bytes [0, 40+n)
#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric {
namespace {

constexpr char kMagic[4] = {'R', 'D', 'M', 'R'};
constexpr uint8_t kVersion = 1;
constexpr size_t kFixed = 40;
constexpr size_t kMaxNode = 1024;
constexpr uint32_t kAllAccess = kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic;

Status Bad(const std::string& what) {
  return Status(FabricErrc::kBadDescriptor, "region descriptor: " + what);
}

}  // namespace

std::string RegionDescriptor::Encode() const {
  std::string out;
  out.reserve(kFixed + node.size() + 4);
  coding::Writer w(&out);
  w.Bytes(kMagic, sizeof kMagic);
  w.U8(kVersion);
  w.U8(static_cast<uint8_t>(provider));
  w.LE<uint16_t>(static_cast<uint16_t>(node.size()));
  w.LE<uint32_t>(access);
  w.LE<uint32_t>(0);
  w.LE<uint64_t>(key);
  w.LE<uint64_t>(base);
  w.LE<uint64_t>(length);
  w.Bytes(node);
  w.LE<uint32_t>(crc32c::Value(out.data(), out.size()));
  return out;
}

Result<RegionDescriptor> RegionDescriptor::Decode(std::span<const std::byte> bytes) {
  if (bytes.size() < kFixed + 4) {
    return Bad("too short (" + std::to_string(bytes.size()) + " bytes, need at least " +
               std::to_string(kFixed + 4) + ")");
  }
  coding::Reader r(bytes);
  const auto magic = r.Bytes(4);
  if (std::memcmp(magic.data(), kMagic, 4) != 0) return Bad("bad magic");
  const uint8_t version = r.U8();
  if (version != kVersion) return Bad("unsupported version " + std::to_string(version));
  const uint8_t provider = r.U8();
  if (provider < 1 || provider > 3) return Bad("unknown provider " + std::to_string(provider));
  const uint16_t node_len = r.LE<uint16_t>();
  if (node_len > kMaxNode) return Bad("node address of " + std::to_string(node_len) + " bytes");
  if (bytes.size() != kFixed + node_len + 4) {
    return Bad("length " + std::to_string(bytes.size()) + " does not match node length " +
               std::to_string(node_len));
  }
  RegionDescriptor d;
  d.provider = static_cast<Provider>(provider);
  d.access = r.LE<uint32_t>();
  if ((d.access & ~kAllAccess) != 0) return Bad("unknown access bits " + std::to_string(d.access));
  if (r.LE<uint32_t>() != 0) return Bad("reserved field is not zero");
  d.key = r.LE<uint64_t>();
  d.base = r.LE<uint64_t>();
  d.length = r.LE<uint64_t>();
  if (d.base + d.length < d.base) return Bad("base + length overflows");
  const auto node = r.Bytes(node_len);
  const uint32_t stored_crc = r.LE<uint32_t>();
  if (!r.ok()) return Bad("truncated");
  const uint32_t crc = crc32c::Value(bytes.data(), kFixed + node_len);
  if (crc != stored_crc) return Bad("CRC mismatch");
  d.node.assign(coding::AsChars(node));
  for (char c : d.node) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return Bad("control character in node address");
  }
  if (!d.node.empty()) {
    const std::string_view scheme = d.provider == Provider::kShm   ? "unix:"
                                    : d.provider == Provider::kTcp ? "tcp:"
                                                                   : "verbs:";
    if (d.node.compare(0, scheme.size(), scheme) != 0) {
      return Bad("node address '" + d.node + "' does not match provider " +
                 std::string(ProviderName(d.provider)));
    }
  }
  return d;
}

}  // namespace rdmq::fabric
