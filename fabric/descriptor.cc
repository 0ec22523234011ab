// RegionDescriptor byte format (docs/fabric.md, "Region descriptor"): wire::DescriptorImage (40
// bytes, little-endian), the n bytes of the node address ("<scheme>:..." matching the provider,
// or empty), then the CRC-32C of the bytes before it.
#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "rdmq/fabric/fabric.h"
#include "wire.h"

namespace rdmq::fabric {
namespace {

using Image = internal::wire::DescriptorImage;
constexpr char kMagic[4] = {'R', 'D', 'M', 'R'};
constexpr uint8_t kVersion = 1;
constexpr size_t kFixed = sizeof(Image);
constexpr size_t kCrcSize = 4;
constexpr size_t kMaxNode = 1024;
constexpr uint32_t kAllAccess = kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic;

Status Bad(const std::string& what) {
  return Status(FabricErrc::kBadDescriptor, "region descriptor: " + what);
}

}  // namespace

std::string RegionDescriptor::Encode() const {
  const Image image{{kMagic[0], kMagic[1], kMagic[2], kMagic[3]},
                    kVersion,
                    static_cast<uint8_t>(provider),
                    static_cast<uint16_t>(node.size()),
                    access,
                    0,
                    key,
                    base,
                    length};
  std::string out(reinterpret_cast<const char*>(&image), sizeof image);
  out.reserve(kFixed + node.size() + kCrcSize);
  out.append(node);
  char crc[kCrcSize];
  coding::StoreLE<uint32_t>(crc, crc32c::Value(out.data(), out.size()));
  out.append(crc, sizeof crc);
  return out;
}

Result<RegionDescriptor> RegionDescriptor::Decode(std::span<const std::byte> bytes) {
  if (bytes.size() < kFixed + kCrcSize) {
    return Bad("too short (" + std::to_string(bytes.size()) + " bytes, need at least " +
               std::to_string(kFixed + kCrcSize) + ")");
  }
  Image image;
  std::memcpy(&image, bytes.data(), sizeof image);
  if (std::memcmp(image.magic, kMagic, sizeof kMagic) != 0) return Bad("bad magic");
  if (image.version != kVersion) return Bad("unsupported version " + std::to_string(image.version));
  if (image.provider < 1 || image.provider > 3)
    return Bad("unknown provider " + std::to_string(image.provider));
  const uint16_t node_len = image.node_length;
  if (node_len > kMaxNode) return Bad("node address of " + std::to_string(node_len) + " bytes");
  if (bytes.size() != kFixed + node_len + kCrcSize) {
    return Bad("length " + std::to_string(bytes.size()) + " does not match node length " +
               std::to_string(node_len));
  }
  RegionDescriptor d;
  d.provider = static_cast<Provider>(image.provider);
  d.access = image.access;
  if ((d.access & ~kAllAccess) != 0) return Bad("unknown access bits " + std::to_string(d.access));
  if (image.reserved != 0) return Bad("reserved field is not zero");
  d.key = image.key;
  d.base = image.base;
  d.length = image.length;
  if (d.base + d.length < d.base) return Bad("base + length overflows");
  const uint32_t stored_crc = coding::LoadLE<uint32_t>(bytes.data() + kFixed + node_len);
  if (crc32c::Value(bytes.data(), kFixed + node_len) != stored_crc) return Bad("CRC mismatch");
  d.node.assign(reinterpret_cast<const char*>(bytes.data() + kFixed), node_len);
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
