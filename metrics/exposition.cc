#include "rdmq/metrics/exposition.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace rdmq::metrics {
namespace {

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Help text escapes backslash and newline; label values also the double quote.
void Escape(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

[[maybe_unused]] bool ValidName(std::string_view n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::to_chars_result r{};
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v);
  }
  return std::string(buf, r.ptr);
}

void Exposition::Family(std::string_view name, Type type, std::string_view help) {
  assert(ValidName(name));
  assert(type != Type::kCounter || name.ends_with("_total"));
  family_ = name;
  type_ = type;
  // (Text format 0.0.4 names a counter with its _total in HELP and TYPE; OpenMetrics would not.)
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  Escape(out_, help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += TypeName(type);
  out_ += '\n';
}

void Exposition::Line(std::string_view suffix, std::span<const Label> labels, const Label* extra,
                      double value) {
  out_ += family_;
  out_ += suffix;
  if (!labels.empty() || extra != nullptr) {
    out_ += '{';
    bool first = true;
    auto add = [&](const Label& l) {
      assert(ValidName(l.first));
      if (!first) out_ += ',';
      first = false;
      out_ += l.first;
      out_ += "=\"";
      Escape(out_, l.second, true);
      out_ += '"';
    };
    for (const Label& l : labels) add(l);
    if (extra != nullptr) add(*extra);
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

void Exposition::Sample(std::span<const Label> labels, double value) {
  assert(type_ != Type::kHistogram);
  Line("", labels, nullptr, value);
}

void Exposition::Histogram(std::span<const Label> labels, const HistogramSnapshot& h) {
  assert(type_ == Type::kHistogram);
  assert(h.counts.size() == h.bounds.size() + 1);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    const std::string le = FormatValue(h.bounds[i]);
    const Label l{"le", le};
    Line("_bucket", labels, &l, static_cast<double>(cumulative));
  }
  cumulative += h.counts.back();
  const Label inf{"le", "+Inf"};
  Line("_bucket", labels, &inf, static_cast<double>(cumulative));
  Line("_sum", labels, nullptr, h.sum);
  Line("_count", labels, nullptr, static_cast<double>(cumulative));
}

}  // namespace rdmq::metrics
