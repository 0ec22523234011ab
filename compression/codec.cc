// Codec names, levels and the dispatch to the libraries (codec.h); the bounded output buffer.
#include "rdmq/compression/codec.h"

#include <algorithm>
#include <cstring>

#include "codecs.h"

namespace rdmq::compression {

namespace internal {

BoundedOutput::BoundedOutput(std::string* out, size_t max_output, size_t input_size)
    : out_(out), max_(std::min(max_output, size_t{1} << 62)), cap_(max_ + 1) {
  // A first guess of four times the input (typical ratios are 2 to 10), then doubling.
  const size_t first = std::min(cap_, std::max<size_t>(4096, std::min(input_size, size_t{1} << 40) * 4));
  if (out_->size() < first) out_->resize(first);
}

std::span<std::byte> BoundedOutput::Room() {
  if (used_ == out_->size()) {
    if (used_ >= cap_) return {};
    out_->resize(std::min(cap_, std::max(used_ * 2, used_ + 4096)));
  }
  const size_t end = std::min(out_->size(), cap_);
  return {reinterpret_cast<std::byte*>(out_->data()) + used_, end - used_};
}

std::byte* BoundedOutput::Claim(size_t n) {
  if (out_->size() < used_ + n) out_->resize(used_ + n);
  std::byte* p = reinterpret_cast<std::byte*>(out_->data()) + used_;
  used_ += n;
  return p;
}

Status BoundedOutput::LimitError(std::string_view codec) const {
  return Error(CompressionErrc::kOutputLimit, codec,
               "decompressed data exceeds the limit of " + std::to_string(max_) + " bytes");
}

Status Error(CompressionErrc code, std::string_view codec, const std::string& what) {
  return Status(code, std::string(codec) + ": " + what);
}

}  // namespace internal

namespace {

constexpr std::string_view kNames[] = {"none", "gzip", "snappy", "lz4", "zstd"};

Status TooLarge(Codec codec, size_t n) {
  return internal::Error(CompressionErrc::kInputTooLarge, CodecName(codec),
                         "input of " + std::to_string(n) + " bytes exceeds 2^32 - 1");
}

}  // namespace

std::string_view CodecName(Codec codec) noexcept {
  const auto i = static_cast<size_t>(codec);
  return i < std::size(kNames) ? kNames[i] : std::string_view("unknown");
}

Result<Codec> ParseCodec(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<Codec>(i);
  }
  return Status(CompressionErrc::kUnknownCodec,
                "'" + std::string(name) + "' is not a codec (none, gzip, snappy, lz4 or zstd)");
}

Result<Codec> CodecFromId(int id) {
  if (id >= 0 && id < static_cast<int>(std::size(kNames))) return static_cast<Codec>(id);
  return Status(CompressionErrc::kUnknownCodec,
                "codec id " + std::to_string(id) + " (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)");
}

Status CheckLevel(Codec codec, int level) {
  if (level == kDefaultLevel) return CodecFromId(static_cast<int>(codec)).status();
  int lo = 0;
  int hi = -1;
  switch (codec) {
    case Codec::kGzip:
      lo = 1;
      hi = 9;
      break;
    case Codec::kLz4:
      lo = 0;
      hi = 12;
      break;
    case Codec::kZstd:
      lo = internal::ZstdMinLevel();
      hi = internal::ZstdMaxLevel();
      break;
    case Codec::kNone:
    case Codec::kSnappy:
      return internal::Error(CompressionErrc::kInvalidLevel, CodecName(codec), "takes no level");
    default:
      return CodecFromId(static_cast<int>(codec)).status();
  }
  if (level < lo || level > hi) {
    return internal::Error(
        CompressionErrc::kInvalidLevel, CodecName(codec),
        "level " + std::to_string(level) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return Status::Ok();
}

Result<std::string> Compress(Codec codec, std::span<const std::byte> input, int level) {
  RDMQ_RETURN_IF_ERROR(CheckLevel(codec, level));
  if (input.size() > internal::kMaxInput) return TooLarge(codec, input.size());
  std::string out;
  switch (codec) {
    case Codec::kNone:
      out.assign(reinterpret_cast<const char*>(input.data()), input.size());
      break;
    case Codec::kGzip:
      RDMQ_RETURN_IF_ERROR(internal::GzipCompress(input, level, &out));
      break;
    case Codec::kSnappy:
      RDMQ_RETURN_IF_ERROR(internal::SnappyCompress(input, &out));
      break;
    case Codec::kLz4:
      RDMQ_RETURN_IF_ERROR(internal::Lz4Compress(input, level, &out));
      break;
    case Codec::kZstd:
      RDMQ_RETURN_IF_ERROR(internal::ZstdCompress(input, level, &out));
      break;
  }
  return out;
}

Status DecompressInto(Codec codec, std::span<const std::byte> input, size_t max_output, std::string* out) {
  RDMQ_RETURN_IF_ERROR(CodecFromId(static_cast<int>(codec)).status());
  if (input.size() > internal::kMaxInput) return TooLarge(codec, input.size());
  if (codec == Codec::kNone) {
    const size_t n = std::min(input.size(), max_output);
    out->assign(reinterpret_cast<const char*>(input.data()), n);
    if (n < input.size()) {
      return internal::Error(
          CompressionErrc::kOutputLimit, "none",
          "decompressed data exceeds the limit of " + std::to_string(max_output) + " bytes");
    }
    return Status::Ok();
  }
  internal::BoundedOutput bounded(out, max_output, input.size());
  switch (codec) {
    case Codec::kGzip:
      return internal::GzipDecompress(input, bounded);
    case Codec::kSnappy:
      return internal::SnappyDecompress(input, bounded);
    case Codec::kLz4:
      return internal::Lz4Decompress(input, bounded);
    case Codec::kZstd:
      return internal::ZstdDecompress(input, bounded);
    case Codec::kNone:
      break;
  }
  return Status(Errc::kInternal, "unreachable codec");
}

Result<std::string> Decompress(Codec codec, std::span<const std::byte> input, size_t max_output) {
  std::string out;
  RDMQ_RETURN_IF_ERROR(DecompressInto(codec, input, max_output, &out));
  return out;
}

}  // namespace rdmq::compression
