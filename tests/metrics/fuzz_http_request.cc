// libFuzzer target: the HTTP request decoder (HttpConversation::Feed, Boost.Beast's parser behind
// it) on untrusted bytes. Properties beyond "no crash, no sanitizer report":
//   * a step consumes no more than it was given, and consumes something whenever it answers;
//   * every answer is a whole HTTP/1.1 response whose Content-Length matches its body;
//   * feeding the rest again after each step terminates (the conversation makes progress).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rdmq/metrics/http.h"

using namespace rdmq::metrics;

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz_http_request: property violated: %s\n", what);
  std::abort();
}

void CheckResponse(const std::string& out, bool head) {
  if (out.rfind("HTTP/1.1 ", 0) != 0) Violation("response without a status line");
  const size_t end = out.find("\r\n\r\n");
  if (end == std::string::npos) Violation("response without the end of its header");
  const size_t cl = out.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) Violation("response without Content-Length");
  const size_t len = std::strtoul(out.c_str() + cl + 16, nullptr, 10);
  if (!head && out.size() - end - 4 != len) Violation("Content-Length does not match the body");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HttpConversation c([](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", r.method + " " + r.path + " " + r.query};
  });
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (int steps = 0; !in.empty(); ++steps) {
    if (steps > 10000) Violation("no progress");
    auto s = c.Feed(in);
    if (s.consumed > in.size()) Violation("consumed more than given");
    if (s.output.empty()) {
      if (s.consumed != 0) Violation("consumed without answering");
      break;  // waits for more input
    }
    if (s.consumed == 0) Violation("answered without consuming");
    CheckResponse(s.output, in.starts_with("HEAD "));
    in.remove_prefix(s.consumed);
    if (s.close) break;
  }
  return 0;
}
