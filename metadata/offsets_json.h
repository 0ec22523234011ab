// Internal: the offset store's state and the JSON of its files (docs/metadata-format.md,
// "Offset store"): the payload of an offsets.wal record and the checkpoint offsets.json.
// Not thread-safe: OffsetStore guards it. Pure functions otherwise.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/metadata/offsets.h"

namespace rdmq::metadata::internal {

// One record of offsets.wal.
struct OffsetMutation {
  enum class Op : uint8_t { kCommit, kDeleteGroup, kDeleteTopic };
  Op op = Op::kCommit;
  std::string name;      // the group (kCommit, kDeleteGroup) or the topic (kDeleteTopic)
  GroupOffsets offsets;  // kCommit
};

struct OffsetState {
  uint64_t seq = 0;
  std::map<std::string, GroupOffsets> groups;
  // The one Apply that live commits and replay share.
  void Apply(const OffsetMutation& m);
};

std::string EncodeOffsetMutation(const OffsetMutation& m);
// kCorruptLog naming `log` and `seq` when the payload is not a valid mutation.
Result<OffsetMutation> DecodeOffsetMutation(std::string_view payload, const std::string& log, uint64_t seq);
std::string EncodeOffsetCheckpoint(const OffsetState& s);
// Fills `s` (fresh). kCorruptCheckpoint naming `path`.
Status DecodeOffsetCheckpoint(std::string_view text, const std::string& path, OffsetState* s);

}  // namespace rdmq::metadata::internal
