// libFuzzer target: the tools' command-line decoders fed arbitrary text. The input is split at
// NUL bytes into words: the first is a kcat-style format string, the second an offset spec, the
// third a delimiter with escapes, the fourth a line to split at it, and every word together an
// argument list for a command spec with flags, valued and repeated options.
// Properties: nothing crashes; a format that compiles renders; an offset spec that parses
// resolves into [log start, high watermark]; positional arguments are words of the input, in
// order.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/cli/records.h"

using namespace rdmq;
using namespace rdmq::cli;

namespace {
[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz_cli_parsers: property violated: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.emplace_back();
    } else {
      words.back().push_back(static_cast<char>(data[i]));
    }
  }
  auto word = [&](size_t i) -> std::string { return i < words.size() ? words[i] : std::string(); };

  const std::string w1 = word(1), w2 = word(2), w3 = word(3);  // RecordFields holds views
  if (auto f = RecordFormatter::Compile(word(0)); f.ok()) {
    RecordFields r;
    r.topic = "t";
    r.key = w1;
    r.value = w2;
    r.headers = {{"h", std::nullopt}, {"k", w3}};
    std::string out;
    f->Append(r, &out);
    (void)RecordToJson(r);
  }
  if (auto s = ParseOffsetSpec(word(1)); s.ok()) {
    const int64_t at = ResolveStartOffset(*s, 10, 20);
    if (at < 10 || at > 20) Violation("resolved offset outside [log start, high watermark]");
  }
  if (auto d = Unescape(word(2), "fuzz"); d.ok() && !d->empty()) {
    (void)SplitLine(word(3), *d);
  }
  (void)ParseKeyValue(word(3), "fuzz");
  (void)ParseInt(word(1), "fuzz", -5, 5);

  CommandSpec spec;
  spec.path = "fuzz";
  spec.options = {
      {"flag", 'f', "", "a flag"}, {"value", 'v', "V", "a value"}, {"many", 'm', "M", "repeated", true}};
  spec.max_positional = 1000;
  auto a = spec.Parse(words);
  if (a.ok() && !a->help()) {
    // Every positional argument is one of the words, in order.
    size_t at = 0;
    for (const auto& pos : a->positional()) {
      while (at < words.size() && words[at] != pos) ++at;
      if (at == words.size()) Violation("a positional argument that was not on the command line");
      ++at;
    }
    (void)a->GetInt("value", 0, -100, 100);
  }
  (void)spec.HelpText();
  return 0;
}
