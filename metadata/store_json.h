// Internal: the JSON in the metadata store's files (docs/metadata-format.md): the payload of a
// metadata.wal record (one mutation) and the checkpoint metadata.json (the whole state).
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "metadata/store_state.h"
#include "rdmq/common/status.h"

namespace rdmq::metadata::internal {

std::string EncodeMutation(const Mutation& m);
// kCorruptLog when the payload is not a mutation, or holds a bad user; a bad topic entry keeps
// its own code (kBadConfig, kUnknownConfig, kBadTopicName). `log` and `seq` name the record in
// the error.
Result<Mutation> DecodeMutation(std::string_view payload, const std::string& log, uint64_t seq);

// The text of metadata.json for `s` (indented, newline-terminated).
std::string EncodeCheckpoint(const StoreState& s);
// Fills `s` (fresh) from the text of metadata.json. kCorruptCheckpoint naming `path`.
Status DecodeCheckpoint(std::string_view text, const std::string& path, StoreState* s);

}  // namespace rdmq::metadata::internal
