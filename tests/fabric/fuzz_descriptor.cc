// libFuzzer target: RegionDescriptor::Decode on arbitrary bytes. Whatever decodes must encode
// back to the same bytes.
#include <cstdlib>
#include <cstring>

#include "rdmq/fabric/fabric.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  auto d = rdmq::fabric::RegionDescriptor::Decode(in);
  if (d.ok()) {
    const std::string again = d->Encode();
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  }
  return 0;
}
