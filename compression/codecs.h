// Internals of the codecs (codec.h): the growing, bounded output every decompressor writes into,
// and one compress/decompress pair per library (gzip.cc, snappy.cc, lz4.cc, zstd.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/compression/codec.h"
#include "rdmq/compression/errors.h"

namespace rdmq::compression::internal {

// Compressed and uncompressed sizes the codecs' own length fields can describe.
inline constexpr size_t kMaxInput = 0xffffffffu;

// The output of a decompressor: `*out` grows by doubling toward max_output + 1 bytes, so that a
// decoder asked for more than max_output bytes is caught having produced one byte too many, never
// more. Room() hands out the unused tail; Advance(n) says n bytes of it were written.
class BoundedOutput {
 public:
  BoundedOutput(std::string* out, size_t max_output, size_t input_size);
  ~BoundedOutput() { out_->resize(used_); }
  BoundedOutput(const BoundedOutput&) = delete;
  BoundedOutput& operator=(const BoundedOutput&) = delete;

  // The writable tail; empty only when max_output + 1 bytes are already written.
  std::span<std::byte> Room();
  void Advance(size_t n) { used_ += n; }
  // Appends `n` bytes for the caller to fill and returns them; the caller checked that
  // used() + n <= max_output().
  std::byte* Claim(size_t n);
  size_t used() const { return used_; }
  // True once more than max_output bytes were written.
  bool over() const { return used_ > max_; }
  size_t max_output() const { return max_; }
  // kOutputLimit naming the codec and the limit.
  Status LimitError(std::string_view codec) const;

 private:
  std::string* out_;
  size_t max_;
  size_t cap_;  // max_ + 1
  size_t used_ = 0;
};

// "<codec>: <what>" with the code.
Status Error(CompressionErrc code, std::string_view codec, const std::string& what);

Status GzipCompress(std::span<const std::byte> in, int level, std::string* out);
Status GzipDecompress(std::span<const std::byte> in, BoundedOutput& out);
Status SnappyCompress(std::span<const std::byte> in, std::string* out);
Status SnappyDecompress(std::span<const std::byte> in, BoundedOutput& out);
Status Lz4Compress(std::span<const std::byte> in, int level, std::string* out);
Status Lz4Decompress(std::span<const std::byte> in, BoundedOutput& out);
Status ZstdCompress(std::span<const std::byte> in, int level, std::string* out);
Status ZstdDecompress(std::span<const std::byte> in, BoundedOutput& out);
// zstd's level range (the library's).
int ZstdMinLevel();
int ZstdMaxLevel();

}  // namespace rdmq::compression::internal
