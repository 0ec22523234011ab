// libFuzzer target: the SASL decoders (auth/scram.h) on untrusted bytes. The first byte picks:
//   0: a SCRAM server's whole exchange; the rest split at the first '\n' into client-first and
//      client-final; 1: ParsePlain; 2: Base64Decode.
// Properties beyond "no crash, no sanitizer report":
//   * a server never completes an exchange without the password (the fuzzer cannot know it);
//   * after a refused step the server refuses every later one;
//   * what Base64Decode accepts re-encodes to the same text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rdmq/auth/scram.h"

using namespace rdmq;
using namespace rdmq::auth;

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz_sasl: property violated: %s\n", what);
  std::abort();
}

const ScramCredential& Credential() {
  static const ScramCredential c = *MakeScramCredential(ScramHash::kSha256, "not-guessable-by-a-fuzzer",
                                                        kMinScramIterations, std::string(16, 's'));
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      ScramServer s(
          ScramHash::kSha256,
          [](const std::string& user) -> std::optional<ScramCredential> {
            if (user == "alice") return Credential();
            return std::nullopt;
          },
          "servernonce");
      const size_t nl = in.find('\n');
      auto first = s.Step(in.substr(0, nl));
      if (!first.ok()) {
        if (s.Step("n,,n=alice,r=x").ok()) Violation("a refused exchange went on");
        break;
      }
      if (nl == std::string_view::npos) break;
      auto fin = s.Step(in.substr(nl + 1));
      if (fin.ok() || s.done()) Violation("authenticated without the password");
      break;
    }
    case 1:
      (void)ParsePlain(in);
      break;
    default: {
      auto raw = Base64Decode(in);
      if (raw.ok() && Base64Encode(*raw) != in) Violation("base64 does not round-trip");
      break;
    }
  }
  return 0;
}
