// What rdmq-bench makes of a Report: a summary on the terminal, a JSON result file, a PNG plot
// (gnuplot), and the comparison table of several results with their ratios.
//
// JSON layout (one object per run; docs/benchmarks.md describes each field):
//   {"version": 1, "system": ..., "description": ..., "label": ..., "machine": {...},
//    "workload": {...}, "counts": {...}, "produce": {...}, "consume": {...},
//    "latency_ns": {"ack": {...}, "e2e": {...}, "sample_every": N}, "vs_mem": {...} | null,
//    "cpu": {...}, "load": {...}, "timeline": [...], "ok": bool}
//
// Threading: stateless functions. Errors: file and gnuplot failures name the path / command.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdmq/bench/driver.h"
#include "rdmq/bench/histogram.h"
#include "rdmq/common/status.h"

namespace rdmq::bench {

// The percentiles every summary and JSON file reports.
inline constexpr double kPercentiles[] = {50, 90, 99, 99.9, 99.99};

nlohmann::json HistogramJson(const LogHistogram& h);
nlohmann::json ReportJson(const Report& r);
Status WriteJson(const nlohmann::json& j, const std::string& path);
Result<nlohmann::json> ReadJson(const std::string& path);

// A few lines: throughput, latencies, CPU, counts check.
void PrintSummary(const Report& r, std::FILE* out);

// Renders the plot with gnuplot into `png_path`: throughput over time (produce and consume) and
// the latency percentile spectrum (ack and end to end). Data and script files go beside the PNG
// as <png>.dat / <png>.gp (kept, so a plot can be re-rendered). kUnavailable when gnuplot is
// not installed, kInternal with its stderr when it fails.
Status WritePlot(const Report& r, const std::string& png_path);

// One row of the comparison table, read from a result JSON file.
struct TableRow {
  std::string name;        // "rdmq", "redis", ...
  std::string durability;  // the label: "persist per commit", "appendfsync always", ...
  std::string klass;       // durability class: "durable" (on media before the ack) | "visibility"
  std::string workload;    // "100 B x 1M, window 1024"
  double records_per_s = 0;
  double mb_per_s = 0;
  double consume_records_per_s = 0;
  double ack_p50_us = 0, ack_p99_us = 0;
  double e2e_p50_us = 0, e2e_p99_us = 0;
  double server_cores = -1;  // CPU s / elapsed s; -1 unknown
  double client_cores = 0;
  bool ok = false;
};
TableRow RowFromJson(const nlohmann::json& j);

// Prints the rows grouped by workload; in each group the ratio column compares every row with
// the group's first row whose name is `reference` (records/s ratio, and latency ratio
// reference / row, so > 1 means the reference is better).
void PrintTable(const std::vector<TableRow>& rows, const std::string& reference, std::FILE* out);
// The same table as GitHub markdown, for docs/benchmarks.md.
void PrintMarkdownTable(const std::vector<TableRow>& rows, const std::string& reference, std::FILE* out);

}  // namespace rdmq::bench
