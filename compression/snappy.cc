// snappy (codec 2) on libsnappy. Kafka clients write either raw snappy (librdkafka) or
// snappy-java's block framing (the Java client, kafka-python); both are read, raw is written.
//
// snappy-java framing, all integers big-endian:
//   0  magic: 82 53 4e 41 50 50 59 00 (0x82 "SNAPPY" NUL)
//   8  version i32 (1), 12 compatible version i32 (1)
//   16 blocks, each: length i32, then that many bytes of raw snappy
#include <snappy.h>

#include <cstring>

#include "codecs.h"
#include "rdmq/common/coding.h"

namespace rdmq::compression::internal {

namespace {

constexpr std::string_view kSnappyName = "snappy";
constexpr unsigned char kJavaMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t kJavaHeaderSize = 16;

const char* Chars(std::span<const std::byte> s) { return reinterpret_cast<const char*>(s.data()); }

// One raw snappy block appended to `out`; `where` names it in errors.
Status RawBlock(std::span<const std::byte> in, BoundedOutput& out, const std::string& where) {
  size_t len = 0;
  if (!snappy::GetUncompressedLength(Chars(in), in.size(), &len)) {
    return Error(CompressionErrc::kCorruptInput, kSnappyName,
                 where + ": the uncompressed-length varint is malformed or missing");
  }
  if (len > out.max_output() - out.used()) {
    return Error(CompressionErrc::kOutputLimit, kSnappyName,
                 where + " says it decompresses to " + std::to_string(len) + " bytes: " +
                     "decompressed data exceeds the limit of " + std::to_string(out.max_output()) + " bytes");
  }
  char* dst = reinterpret_cast<char*>(out.Claim(len));
  if (!snappy::RawUncompress(Chars(in), in.size(), dst)) {
    return Error(CompressionErrc::kCorruptInput, kSnappyName,
                 where + " of " + std::to_string(in.size()) + " bytes does not decompress to the " +
                     std::to_string(len) + " bytes it announces");
  }
  return Status::Ok();
}

}  // namespace

Status SnappyCompress(std::span<const std::byte> in, std::string* out) {
  out->resize(snappy::MaxCompressedLength(in.size()));
  size_t n = 0;
  snappy::RawCompress(Chars(in), in.size(), out->data(), &n);
  out->resize(n);
  return Status::Ok();
}

Status SnappyDecompress(std::span<const std::byte> in, BoundedOutput& out) {
  if (in.size() < sizeof kJavaMagic || std::memcmp(in.data(), kJavaMagic, sizeof kJavaMagic) != 0) {
    return RawBlock(in, out, "raw snappy");
  }
  if (in.size() < kJavaHeaderSize) {
    return Error(CompressionErrc::kTruncatedInput, kSnappyName,
                 "snappy-java header needs 16 bytes, only " + std::to_string(in.size()) + " present");
  }
  const int32_t compat = coding::LoadBE<int32_t>(in.data() + 12);
  if (compat > 1) {
    return Error(CompressionErrc::kCorruptInput, kSnappyName,
                 "snappy-java stream needs reader version " + std::to_string(compat) + "; 1 is known");
  }
  size_t pos = kJavaHeaderSize;
  for (int block = 0; pos < in.size(); ++block) {
    const std::string where =
        "snappy-java block " + std::to_string(block) + " at byte " + std::to_string(pos);
    if (in.size() - pos < 4) {
      return Error(CompressionErrc::kTruncatedInput, kSnappyName, where + ": its 4-byte length is cut off");
    }
    const int32_t len = coding::LoadBE<int32_t>(in.data() + pos);
    pos += 4;
    if (len < 0 || static_cast<size_t>(len) > in.size() - pos) {
      return Error(len < 0 ? CompressionErrc::kCorruptInput : CompressionErrc::kTruncatedInput, kSnappyName,
                   where + ": length " + std::to_string(len) + " but " + std::to_string(in.size() - pos) +
                       " bytes follow");
    }
    RDMQ_RETURN_IF_ERROR(RawBlock(in.subspan(pos, static_cast<size_t>(len)), out, where));
    pos += static_cast<size_t>(len);
  }
  return Status::Ok();
}

}  // namespace rdmq::compression::internal
