// Prometheus text exposition format, version 0.0.4 (docs/metrics.md): what a /metrics scrape
// returns. A family is a name, a type and a help line followed by its samples; every family is
// written once, with all its samples together.
//
//   metrics::Exposition e;
//   e.Family("rdmq_commits_total", metrics::Type::kCounter, "Ranges committed.");
//   e.Sample({}, 42);
//   e.Family("rdmq_partition_high_watermark", metrics::Type::kGauge, "Next offset.");
//   e.Sample({{"topic", "orders"}, {"partition", "0"}}, 1000);
//   std::string body = e.Take();
//
// Label values and help text are escaped as the format requires (backslash, double quote,
// newline); names are the caller's constants and are checked only by assert.
//
// Thread safety: a value; one scrape builds one Exposition.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmq::metrics {

enum class Type { kCounter, kGauge, kHistogram };

using Label = std::pair<std::string_view, std::string_view>;

// A histogram's state at scrape time: per-bucket counts (not cumulative; counts.size() is
// bounds.size() + 1, the last being above every bound) and the sum of the observed values.
struct HistogramSnapshot {
  std::vector<double> bounds;  // ascending upper bounds, in the exposed unit
  std::vector<uint64_t> counts;
  double sum = 0;
};

class Exposition {
 public:
  // Begins a family. A counter's name ends in "_total".
  void Family(std::string_view name, Type type, std::string_view help);
  // One sample of the current counter or gauge family.
  void Sample(std::initializer_list<Label> labels, double value) {
    Sample(std::span(labels.begin(), labels.size()), value);
  }
  void Sample(std::span<const Label> labels, double value);
  // One labelled histogram of the current histogram family: its _bucket lines (cumulative, le=
  // each bound, then +Inf), _sum and _count.
  void Histogram(std::span<const Label> labels, const HistogramSnapshot& h);
  void Histogram(std::initializer_list<Label> labels, const HistogramSnapshot& h) {
    Histogram(std::span(labels.begin(), labels.size()), h);
  }

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Line(std::string_view suffix, std::span<const Label> labels, const Label* extra, double value);

  std::string out_;
  std::string family_;
  Type type_ = Type::kGauge;
};

// A number as the format writes it: integers without a fraction, "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);

}  // namespace rdmq::metrics
