// libFuzzer target for the RPC message decoder: arbitrary bytes as ring contents and as a
// message. The decoder must never read outside the bytes it was given nor crash; every entry it
// accepts must lie inside the message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmq/common/coding.h"
#include "rpc/ring.h"
#include "rpc/wire.h"

namespace {

void CheckEntries(const rdmq::rpc::MessageView& v, const std::byte* begin, size_t len) {
  uint32_t n = 0;
  auto cur = v.entries();
  for (rdmq::rpc::Entry e; cur.Next(&e);) {
    ++n;
    if (e.data.data() < begin || e.data.data() + e.data.size() > begin + len) std::abort();
  }
  if (n != v.header().count) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmq::rpc;
  // The ring: the input rounded up to whole slots, at least two of them, 64-byte aligned.
  const size_t cap = std::max<size_t>(2 * kMessageAlign, AlignUp(size, kMessageAlign));
  std::vector<uint64_t> storage(cap / 8 + 8, 0);
  auto* ring = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) / 64 * 64);
  if (size > 0) std::memcpy(ring, data, size);
  for (bool response : {false, true}) {
    RingReader reader(ring, cap, response);
    const Probe p = reader.Peek();
    if (p.state == ProbeState::kReady) {
      auto v = reader.Parse(p.length);
      if (v.ok()) {
        CheckEntries(*v, ring, p.length);
        reader.Release(p.length);
        (void)reader.Peek();
      }
    }
  }
  // The whole input as one message, at the position its header claims.
  if (size >= kHeaderSize) {
    const size_t len = size / kMessageAlign * kMessageAlign;
    const uint64_t pos = rdmq::coding::LoadLE<uint64_t>(data + 16);
    std::vector<uint64_t> copy(len / 8 + 1);
    if (len > 0) std::memcpy(copy.data(), data, len);
    auto* m = reinterpret_cast<const std::byte*>(copy.data());
    for (bool response : {false, true}) {
      auto v = ParseMessage({m, len}, pos, response);
      if (v.ok()) CheckEntries(*v, m, len);
    }
  }
  return 0;
}
