// Decodes arbitrary bytes as every RPC message type, bare and as a response; re-encodes whatever
// decodes and checks it decodes to the same bytes. Also the data plane's ack block and
// notification (data_plane.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "rdmq/protocol/data_plane.h"
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

void DataPlane(const std::byte* p, size_t size) {
  using namespace rdmq::protocol;
  if (size >= kAckBlockSize) {
    AckBlock a;
    if (DecodeAckBlock(p, &a)) {
      std::byte again[kAckBlockSize];
      EncodeAckBlock(a, again);
      AckBlock b;
      if (!DecodeAckBlock(again, &b) || b.generation != a.generation ||
          b.acked_position != a.acked_position || b.next_offset != a.next_offset ||
          b.segment_base != a.segment_base || b.credit_end != a.credit_end || b.error != a.error ||
          b.flags != a.flags) {
        std::abort();
      }
    }
  }
  Notification n;
  if (DecodeNotification(p, size, &n)) {
    std::byte again[kNotificationSize];
    EncodeNotification(n, again);
    Notification m;
    if (!DecodeNotification(again, kNotificationSize, &m) || m.topic_id != n.topic_id ||
        m.partition != n.partition || m.generation != n.generation) {
      std::abort();
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmq::protocol::testing::ForEachMessageType(TryAll{{reinterpret_cast<const std::byte*>(data), size}});
  DataPlane(reinterpret_cast<const std::byte*>(data), size);
  return 0;
}
