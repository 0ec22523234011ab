// The compression codecs of Kafka record batches (attributes bits 0-2 of a RecordBatch v2, see
// docs/storage-format.md "Compression"), on Debian's libraries: zlib, libsnappy, liblz4, libzstd.
// What each codec's bytes are, as Kafka clients put them on the wire:
//
//   gzip    a gzip stream (RFC 1952; several members are read one after another). Compress
//           writes one member.
//   snappy  either raw snappy (librdkafka, Go clients) or snappy-java's block framing (Java,
//           kafka-python): the 8 bytes 82 'S' 'N' 'A' 'P' 'P' 'Y' 00, a big-endian i32 version
//           and i32 compatible version, then blocks of a big-endian i32 length and that many
//           bytes of raw snappy. Decompress reads both; Compress writes raw snappy.
//   lz4     the LZ4 frame format (LZ4F; Kafka's v2 batches). Compress writes independent 64 KiB
//           blocks without content size or checksums, what Kafka's Java client writes and reads.
//   zstd    zstd frames (the content size may be absent: decoded as a stream).
//
// Decompression is bounded: more than `max_output` bytes of output is kOutputLimit (naming the
// limit) after at most max_output + 1 bytes were produced, so a small "bomb" cannot make it
// allocate more. Input is untrusted: any bytes give a Status, never a crash or an unbounded
// allocation.
//
// Threading: every function is a pure function of its arguments (each call uses its own library
// context). Errors: CompressionErrc (errors.h), context naming the codec and the fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/compression/errors.h"

namespace rdmq::compression {

// The value is the codec's id in a batch's attributes (bits 0-2).
enum class Codec : uint8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

// "none", "gzip", "snappy", "lz4", "zstd".
std::string_view CodecName(Codec codec) noexcept;
// The inverse of CodecName (exact, lower case); kUnknownCodec listing the names otherwise.
Result<Codec> ParseCodec(std::string_view name);
// The codec of a batch's attributes bits 0-2 (0..4); kUnknownCodec for 5, 6, 7.
Result<Codec> CodecFromId(int id);

// The codec's own default level (gzip 6, lz4 0 = fast, zstd 3; snappy has none).
inline constexpr int kDefaultLevel = std::numeric_limits<int>::min();
// OK if `level` is kDefaultLevel or in the codec's range: gzip 1..9, lz4 0..12 (3 and up: HC),
// zstd the library's (ZSTD_minCLevel()..ZSTD_maxCLevel()); snappy and none take only the default.
Status CheckLevel(Codec codec, int level);

// Compresses `input`. kNone returns a copy. kInvalidLevel; kInputTooLarge past 2^32 - 1 bytes
// (the codecs' own length fields); kLibraryFailure.
Result<std::string> Compress(Codec codec, std::span<const std::byte> input, int level = kDefaultLevel);

// Decompresses `input` (all of it: bytes after the last complete stream, frame or block are
// kCorruptInput). kNone returns a copy (still bounded by max_output).
Result<std::string> Decompress(Codec codec, std::span<const std::byte> input, size_t max_output);
// The same into `*out` (replacing its contents, reusing its capacity). On error `*out` holds
// whatever was decoded so far.
Status DecompressInto(Codec codec, std::span<const std::byte> input, size_t max_output, std::string* out);

}  // namespace rdmq::compression
