// Fuzz target: a benchmark result file as `rdmq-bench table` reads it. Arbitrary bytes are
// parsed as JSON (without exceptions) and turned into a table row and both table formats; no
// input may crash or throw, whatever fields are missing or of the wrong type.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "rdmq/bench/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  const rdmq::bench::TableRow row = rdmq::bench::RowFromJson(j);
  static std::FILE* sink = std::fopen("/dev/null", "w");
  if (sink == nullptr) return 0;
  rdmq::bench::TableRow ref = row;
  ref.name = "rdmq";
  rdmq::bench::PrintTable({ref, row}, "rdmq", sink);
  rdmq::bench::PrintMarkdownTable({row, ref}, "rdmq", sink);
  return 0;
}
