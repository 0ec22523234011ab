// lz4 (codec 3) on liblz4's frame API (LZ4F), the format of Kafka's v2 batches. Written as
// independent 64 KiB blocks without content size or checksums (Kafka's Java client reads only
// independent blocks); any valid frame is read, several frames back to back too.
#include <lz4frame.h>

#include "codecs.h"

namespace rdmq::compression::internal {

namespace {

constexpr std::string_view kLz4Name = "lz4";

struct Lz4Dctx {
  LZ4F_dctx* p = nullptr;
  ~Lz4Dctx() {
    if (p != nullptr) LZ4F_freeDecompressionContext(p);
  }
};

}  // namespace

Status Lz4Compress(std::span<const std::byte> in, int level, std::string* out) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
  prefs.compressionLevel = level == kDefaultLevel ? 0 : level;
  out->resize(LZ4F_compressFrameBound(in.size(), &prefs));
  const size_t n = LZ4F_compressFrame(out->data(), out->size(), in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) {
    return Error(CompressionErrc::kLibraryFailure, kLz4Name,
                 std::string("LZ4F_compressFrame: ") + LZ4F_getErrorName(n));
  }
  out->resize(n);
  return Status::Ok();
}

Status Lz4Decompress(std::span<const std::byte> in, BoundedOutput& out) {
  Lz4Dctx d;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&d.p, LZ4F_VERSION))) {
    return Error(CompressionErrc::kLibraryFailure, kLz4Name, "cannot create a decompression context");
  }
  size_t pos = 0;
  for (;;) {
    const auto room = out.Room();
    if (room.empty()) return out.LimitError(kLz4Name);
    size_t src = in.size() - pos;
    size_t dst = room.size();
    const size_t hint = LZ4F_decompress(d.p, room.data(), &dst, in.data() + pos, &src, nullptr);
    if (LZ4F_isError(hint)) {
      return Error(
          CompressionErrc::kCorruptInput, kLz4Name,
          std::string(LZ4F_getErrorName(hint)) + " (in the input bytes from " + std::to_string(pos) + ")");
    }
    pos += src;
    out.Advance(dst);
    if (out.over()) return out.LimitError(kLz4Name);
    if (hint == 0) {  // a frame ended
      if (pos == in.size()) return Status::Ok();
      continue;
    }
    if (pos == in.size() && dst < room.size()) {
      return Error(CompressionErrc::kTruncatedInput, kLz4Name,
                   "the frame ends early, after all " + std::to_string(in.size()) + " input bytes");
    }
    if (src == 0 && dst == 0 && pos < in.size()) {
      return Error(CompressionErrc::kCorruptInput, kLz4Name,
                   "the decoder makes no progress at input byte " + std::to_string(pos));
    }
  }
}

}  // namespace rdmq::compression::internal
