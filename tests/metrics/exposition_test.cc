// The Prometheus text format as written: exact lines for counters, gauges, escaped labels and
// histograms; histogram buckets; the process families.
#include "rdmq/metrics/exposition.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/metrics/histogram.h"
#include "rdmq/metrics/process.h"

using namespace rdmq::metrics;

TEST_CASE("a counter family is written with HELP and TYPE on its full name", "[metrics]") {
  Exposition e;
  e.Family("rdmq_commits_total", Type::kCounter, "Ranges committed.");
  e.Sample({}, 42);
  e.Sample({{"path", "rpc"}}, 7);
  CHECK(e.text() ==
        "# HELP rdmq_commits_total Ranges committed.\n"
        "# TYPE rdmq_commits_total counter\n"
        "rdmq_commits_total 42\n"
        "rdmq_commits_total{path=\"rpc\"} 7\n");
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
  Exposition e;
  e.Family("rdmq_x", Type::kGauge, "a \\ back\nslash");
  e.Sample({{"topic", "a\"b\\c\nd"}, {"partition", "3"}}, 1.5);
  CHECK(e.text() ==
        "# HELP rdmq_x a \\\\ back\\nslash\n"
        "# TYPE rdmq_x gauge\n"
        "rdmq_x{topic=\"a\\\"b\\\\c\\nd\",partition=\"3\"} 1.5\n");
}

TEST_CASE("values: integers without a fraction, infinities and NaN by name", "[metrics]") {
  CHECK(FormatValue(0) == "0");
  CHECK(FormatValue(-3) == "-3");
  CHECK(FormatValue(18446744073709551615.0) == "18446744073709551616");
  CHECK(FormatValue(0.25) == "0.25");
  CHECK(FormatValue(1.0 / 0.0) == "+Inf");
  CHECK(FormatValue(-1.0 / 0.0) == "-Inf");
  CHECK(FormatValue(0.0 / 0.0) == "NaN");
}

TEST_CASE("a histogram's buckets are cumulative and end with +Inf, _sum and _count", "[metrics]") {
  Histogram h({10, 100, 1000});
  for (uint64_t v : {1, 10, 11, 500, 5000, 6000}) h.Observe(v);
  CHECK(h.count() == 6);
  const HistogramSnapshot s = h.Snapshot(0.5);
  REQUIRE(s.counts == std::vector<uint64_t>{2, 1, 1, 2});
  Exposition e;
  e.Family("rdmq_lat_seconds", Type::kHistogram, "Latency.");
  e.Histogram({{"path", "data"}}, s);
  CHECK(e.text() ==
        "# HELP rdmq_lat_seconds Latency.\n"
        "# TYPE rdmq_lat_seconds histogram\n"
        "rdmq_lat_seconds_bucket{path=\"data\",le=\"5\"} 2\n"
        "rdmq_lat_seconds_bucket{path=\"data\",le=\"50\"} 3\n"
        "rdmq_lat_seconds_bucket{path=\"data\",le=\"500\"} 4\n"
        "rdmq_lat_seconds_bucket{path=\"data\",le=\"+Inf\"} 6\n"
        "rdmq_lat_seconds_sum{path=\"data\"} 5761\n"
        "rdmq_lat_seconds_count{path=\"data\"} 6\n");
}

TEST_CASE("observations from several threads are all counted", "[metrics]") {
  Histogram h(LatencyBoundsNs());
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&h, t] {
      for (uint64_t i = 0; i < 10000; ++i) h.Observe(i * 1000 + static_cast<uint64_t>(t));
    });
  }
  for (auto& t : ts) t.join();
  CHECK(h.count() == 40000);
  const HistogramSnapshot s = h.Snapshot();
  CHECK(s.sum == 4 * (1000.0 * 9999 * 10000 / 2) + 10000.0 * (0 + 1 + 2 + 3));
}

TEST_CASE("the process families report this process", "[metrics]") {
  Exposition e;
  WriteProcessMetrics(e);
  const std::string& t = e.text();
  CHECK(t.find("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ") != std::string::npos);
  CHECK(t.find("\nprocess_resident_memory_bytes ") != std::string::npos);
  CHECK(t.find("\nprocess_open_fds ") != std::string::npos);
  CHECK(t.find("\nprocess_start_time_seconds ") != std::string::npos);
  // Resident memory is at least a page and less than a terabyte.
  const size_t at = t.find("\nprocess_resident_memory_bytes ") + 31;
  const double rss = std::stod(t.substr(at));
  CHECK(rss >= 4096);
  CHECK(rss < 1e12);
}
