// libFuzzer target: the decompressors (compression/codec.h) on untrusted bytes. The first input
// byte picks the codec (its value modulo 8: 0..4 the codecs, 5..7 unknown ids); the rest is the
// compressed input. Properties beyond "no crash, no sanitizer report, bounded memory":
//   * output is never longer than the limit (1 MiB);
//   * what decompresses re-compresses with the same codec and decompresses back to itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rdmq/common/coding.h"
#include "rdmq/compression/codec.h"

using namespace rdmq;
using namespace rdmq::compression;

namespace {

constexpr size_t kLimit = 1 << 20;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz_decompress: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int id = data[0] % 8;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  auto codec = CodecFromId(id);
  std::string out;
  const Status s = DecompressInto(codec.ok() ? *codec : static_cast<Codec>(id), in, kLimit, &out);
  if (!codec.ok()) {
    if (s.ok()) Violation("an unknown codec id decompressed");
    return 0;
  }
  if (out.size() > kLimit + 1) Violation("output grew past the limit + 1");
  if (!s.ok()) return 0;
  if (out.size() > kLimit) Violation("a successful output is longer than the limit");
  auto again = Compress(*codec, coding::AsBytes(out));
  if (!again.ok()) Violation("decompressed output does not compress");
  auto back = Decompress(*codec, coding::AsBytes(*again), kLimit);
  if (!back.ok() || *back != out) Violation("re-compressed output does not round-trip");
  return 0;
}
