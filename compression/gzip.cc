// gzip (codec 1) on zlib: a gzip stream (RFC 1952). Decompression also takes zlib streams (as
// librdkafka does) and several members back to back (as Java's GZIPInputStream does).
#include <zlib.h>

#include <algorithm>

#include "codecs.h"

namespace rdmq::compression::internal {

namespace {

constexpr std::string_view kGzipName = "gzip";
constexpr int kGzipWindow = 15 + 16;  // 32 KiB window, gzip header and trailer
constexpr int kAutoWindow = 15 + 32;  // gzip or zlib header, detected

Bytef* In(std::span<const std::byte> in) {
  // zlib's next_in is not const-qualified; it does not write through it.
  return reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
}

std::string ZMessage(const z_stream& zs, int ret) {
  return zs.msg != nullptr ? std::string(zs.msg) : "zlib error " + std::to_string(ret);
}

struct Inflater {
  z_stream zs{};
  bool open = false;
  ~Inflater() {
    if (open) inflateEnd(&zs);
  }
};

struct Deflater {
  z_stream zs{};
  bool open = false;
  ~Deflater() {
    if (open) deflateEnd(&zs);
  }
};

}  // namespace

Status GzipCompress(std::span<const std::byte> in, int level, std::string* out) {
  Deflater d;
  const int lvl = level == kDefaultLevel ? Z_DEFAULT_COMPRESSION : level;
  if (deflateInit2(&d.zs, lvl, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Error(CompressionErrc::kLibraryFailure, kGzipName, "deflateInit2 failed");
  }
  d.open = true;
  out->resize(deflateBound(&d.zs, static_cast<uLong>(in.size())));
  d.zs.next_in = In(in);
  d.zs.avail_in = static_cast<uInt>(in.size());
  d.zs.next_out = reinterpret_cast<Bytef*>(out->data());
  d.zs.avail_out = static_cast<uInt>(out->size());
  const int ret = deflate(&d.zs, Z_FINISH);
  if (ret != Z_STREAM_END) {
    return Error(CompressionErrc::kLibraryFailure, kGzipName, "deflate: " + ZMessage(d.zs, ret));
  }
  out->resize(d.zs.total_out);
  return Status::Ok();
}

Status GzipDecompress(std::span<const std::byte> in, BoundedOutput& out) {
  Inflater f;
  if (inflateInit2(&f.zs, kAutoWindow) != Z_OK) {
    return Error(CompressionErrc::kLibraryFailure, kGzipName, "inflateInit2 failed");
  }
  f.open = true;
  f.zs.next_in = In(in);
  f.zs.avail_in = static_cast<uInt>(in.size());
  for (;;) {
    const auto room = out.Room();
    if (room.empty()) return out.LimitError(kGzipName);
    const uInt avail = static_cast<uInt>(std::min<size_t>(room.size(), 1u << 30));
    f.zs.next_out = reinterpret_cast<Bytef*>(room.data());
    f.zs.avail_out = avail;
    const int ret = inflate(&f.zs, Z_NO_FLUSH);
    out.Advance(avail - f.zs.avail_out);
    if (out.over()) return out.LimitError(kGzipName);
    const size_t consumed = in.size() - f.zs.avail_in;
    switch (ret) {
      case Z_STREAM_END:
        if (f.zs.avail_in == 0) return Status::Ok();
        // Another member follows (or garbage, which its header check reports).
        if (inflateReset(&f.zs) != Z_OK) {
          return Error(CompressionErrc::kLibraryFailure, kGzipName, "inflateReset failed");
        }
        break;
      case Z_OK:
        break;
      case Z_BUF_ERROR:
        // No progress with output room available: the input ended inside the stream.
        if (f.zs.avail_in == 0) {
          return Error(CompressionErrc::kTruncatedInput, kGzipName,
                       "the stream ends early, after all " + std::to_string(in.size()) + " input bytes");
        }
        return Error(CompressionErrc::kCorruptInput, kGzipName,
                     "inflate makes no progress at input byte " + std::to_string(consumed));
      case Z_MEM_ERROR:
        return Error(CompressionErrc::kLibraryFailure, kGzipName, "zlib ran out of memory");
      case Z_NEED_DICT:
        return Error(CompressionErrc::kCorruptInput, kGzipName,
                     "the stream asks for a preset dictionary (byte " + std::to_string(consumed) + ")");
      default:
        return Error(CompressionErrc::kCorruptInput, kGzipName,
                     ZMessage(f.zs, ret) + " (near input byte " + std::to_string(consumed) + ")");
    }
  }
}

}  // namespace rdmq::compression::internal
