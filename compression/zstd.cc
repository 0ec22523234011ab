// zstd (codec 4) on libzstd. Written as one frame with its content size; read as a stream, so
// frames without a content size (what streaming writers such as zstd-jni produce) and several
// frames back to back decode too. The decoder's window is capped near the output limit (at least
// 8 MiB, at most libzstd's default 128 MiB), so a tiny frame cannot make it allocate more.
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <bit>

#include "codecs.h"

namespace rdmq::compression::internal {

namespace {

constexpr std::string_view kZstdName = "zstd";
constexpr int kMinWindowLog = 23;  // 8 MiB: what compression levels up to 19 use without a size
constexpr int kMaxWindowLog = 27;  // libzstd's default limit

struct ZstdCctx {
  ZSTD_CCtx* p = ZSTD_createCCtx();
  ~ZstdCctx() { ZSTD_freeCCtx(p); }
};
struct ZstdDctx {
  ZSTD_DCtx* p = ZSTD_createDCtx();
  ~ZstdDctx() { ZSTD_freeDCtx(p); }
};

}  // namespace

int ZstdMinLevel() { return ZSTD_minCLevel(); }
int ZstdMaxLevel() { return ZSTD_maxCLevel(); }

Status ZstdCompress(std::span<const std::byte> in, int level, std::string* out) {
  ZstdCctx c;
  if (c.p == nullptr) return Error(CompressionErrc::kLibraryFailure, kZstdName, "cannot create a context");
  const int lvl = level == kDefaultLevel ? ZSTD_CLEVEL_DEFAULT : level;
  if (ZSTD_isError(ZSTD_CCtx_setParameter(c.p, ZSTD_c_compressionLevel, lvl))) {
    return Error(CompressionErrc::kInvalidLevel, kZstdName, "level " + std::to_string(lvl) + " refused");
  }
  out->resize(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress2(c.p, out->data(), out->size(), in.data(), in.size());
  if (ZSTD_isError(n)) {
    return Error(CompressionErrc::kLibraryFailure, kZstdName,
                 std::string("ZSTD_compress2: ") + ZSTD_getErrorName(n));
  }
  out->resize(n);
  return Status::Ok();
}

Status ZstdDecompress(std::span<const std::byte> in, BoundedOutput& out) {
  ZstdDctx d;
  if (d.p == nullptr) return Error(CompressionErrc::kLibraryFailure, kZstdName, "cannot create a context");
  const int want_log = static_cast<int>(std::bit_width(out.max_output()));
  const int window_log = std::clamp(want_log, kMinWindowLog, kMaxWindowLog);
  (void)ZSTD_DCtx_setParameter(d.p, ZSTD_d_windowLogMax, window_log);
  // A frame that announces more than the limit fails before anything is allocated for it.
  const unsigned long long announced = ZSTD_getFrameContentSize(in.data(), in.size());
  if (announced != ZSTD_CONTENTSIZE_UNKNOWN && announced != ZSTD_CONTENTSIZE_ERROR &&
      announced > out.max_output()) {
    return Error(CompressionErrc::kOutputLimit, kZstdName,
                 "the frame announces " + std::to_string(announced) +
                     " bytes: decompressed data exceeds the limit of " + std::to_string(out.max_output()) +
                     " bytes");
  }
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  for (;;) {
    const auto room = out.Room();
    if (room.empty()) return out.LimitError(kZstdName);
    ZSTD_outBuffer ob{room.data(), room.size(), 0};
    const size_t before = ib.pos;
    const size_t ret = ZSTD_decompressStream(d.p, &ob, &ib);
    out.Advance(ob.pos);
    if (ZSTD_isError(ret)) {
      const auto code = ZSTD_getErrorCode(ret);
      const std::string at = " (in the input bytes from " + std::to_string(before) + ")";
      if (code == ZSTD_error_frameParameter_windowTooLarge) {
        return Error(CompressionErrc::kOutputLimit, kZstdName,
                     std::string(ZSTD_getErrorName(ret)) + ": the frame's window exceeds 2^" +
                         std::to_string(window_log) + " bytes, the most allowed for a limit of " +
                         std::to_string(out.max_output()) + " bytes" + at);
      }
      if (code == ZSTD_error_memory_allocation) {
        return Error(CompressionErrc::kLibraryFailure, kZstdName, ZSTD_getErrorName(ret));
      }
      return Error(CompressionErrc::kCorruptInput, kZstdName, ZSTD_getErrorName(ret) + at);
    }
    if (out.over()) return out.LimitError(kZstdName);
    if (ret == 0) {  // a frame ended and is flushed
      if (ib.pos == ib.size) return Status::Ok();
      continue;
    }
    if (ib.pos == ib.size && ob.pos < ob.size) {
      return Error(CompressionErrc::kTruncatedInput, kZstdName,
                   "the frame ends early, after all " + std::to_string(in.size()) + " input bytes");
    }
    if (ib.pos == before && ob.pos == 0 && ib.pos < ib.size) {
      return Error(CompressionErrc::kCorruptInput, kZstdName,
                   "the decoder makes no progress at input byte " + std::to_string(ib.pos));
    }
  }
}

}  // namespace rdmq::compression::internal
