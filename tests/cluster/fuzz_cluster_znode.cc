// Decodes arbitrary bytes as every znode rdmq writes (a broker, a topic, a partition state, the
// controller, a group's committed offsets of a topic) and as an escaped group znode name;
// whatever decodes must encode and decode again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rdmq/cluster/group_offsets.h"
#include "rdmq/cluster/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmq::cluster;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto b = DecodeBroker(in, "b"); b.ok()) {
    auto again = DecodeBroker(EncodeBroker(*b), "b");
    if (!again.ok() || !(*again == *b)) std::abort();
  }
  if (auto t = DecodeTopic(in, "t", "t"); t.ok()) {
    auto again = DecodeTopic(EncodeTopic(*t), "t", "t");
    if (!again.ok() || again->replicas != t->replicas || again->reassigning != t->reassigning ||
        again->id != t->id)
      std::abort();
  }
  if (auto s = DecodeState(in, "s"); s.ok()) {
    auto again = DecodeState(EncodeState(*s), "s");
    if (!again.ok() || !(*again == *s)) std::abort();
  }
  if (auto c = DecodeController(in, "c"); c.ok()) {
    auto again = DecodeController(EncodeController(c->first, c->second), "c");
    if (!again.ok() || *again != *c) std::abort();
  }
  if (auto o = DecodeTopicOffsets(in, "o"); o.ok()) {
    auto again = DecodeTopicOffsets(EncodeTopicOffsets(*o), "o");
    if (!again.ok() || *again != *o) std::abort();
  }
  if (auto g = UnescapeName(in); g.ok()) {
    auto again = UnescapeName(EscapeName(*g));
    if (!again.ok() || *again != *g) std::abort();
  }
  return 0;
}
