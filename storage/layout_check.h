// Internal: compile-time checks that an on-media layout is the one docs/storage-format.md
// specifies. Each field is written as the doc's table row:
//
//   static_assert(layout::Tiles({{kHdrMagic, 0, 8}, {kHdrVersion, 8, 4}, ...}, 64), "...");
//
// that is (the offset constant the code uses, the documented offset, the documented size).
// Tiles() holds when every constant equals its documented offset and the documented fields lie
// back to back from 0 to `end`, with no gap and no overlap (reserved zero bytes are rows too).
// So a constant that drifts from the doc, or a doc row that moves or resizes a field, fails to
// compile.
#pragma once

#include <cstddef>
#include <initializer_list>

namespace rdmq::storage::layout {

struct Field {
  size_t constant;    // the offset the encoder and decoder use
  size_t documented;  // the offset in the doc's table
  size_t size;        // the size in the doc's table
};

constexpr bool Tiles(std::initializer_list<Field> fields, size_t end) {
  size_t at = 0;
  for (const Field& f : fields) {
    if (f.constant != f.documented || f.documented != at) return false;
    at += f.size;
  }
  return at == end;
}

}  // namespace rdmq::storage::layout
