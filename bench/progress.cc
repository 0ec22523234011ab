#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace rdmq::bench {

std::string Human(double v) {
  char buf[32];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2f G", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f M", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1f k", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  }
  return buf;
}

Progress::Progress(ProgressMode mode, std::string system) : system_(std::move(system)) {
  switch (mode) {
    case ProgressMode::kAuto:
      tty_ = isatty(STDERR_FILENO) != 0;
      break;
    case ProgressMode::kTty:
      tty_ = true;
      break;
    case ProgressMode::kPlain:
      tty_ = false;
      break;
    case ProgressMode::kNone:
      enabled_ = false;
      break;
  }
}

void Progress::Update(const Sample& s, uint64_t sent, uint32_t message_size) {
  if (!enabled_) return;
  // Rates over a window of about half a second, steadier than one 100 ms sample.
  if (window_t_ == 0) {  // before the first window closes, the last sample's rates
    produce_rate_ = s.produce_rate;
    consume_rate_ = s.consume_rate;
  }
  if (s.t_s - window_t_ >= 0.5) {
    const double dt = s.t_s - window_t_;
    produce_rate_ = static_cast<double>(s.acked - window_acked_) / dt;
    consume_rate_ = static_cast<double>(s.consumed - window_consumed_) / dt;
    window_t_ = s.t_s;
    window_acked_ = s.acked;
    window_consumed_ = s.consumed;
  }
  const double every = tty_ ? 0.25 : 1.0;
  if (last_print_ >= 0 && s.t_s - last_print_ < every) return;
  last_print_ = s.t_s;
  char line[256];
  std::snprintf(
      line, sizeof(line), "%s %6.1fs  acked %s (%s/s, %.1f MB/s)  consumed %s (%s/s)  in flight %llu",
      system_.c_str(), s.t_s, Human(static_cast<double>(s.acked)).c_str(), Human(produce_rate_).c_str(),
      produce_rate_ * message_size / 1e6, Human(static_cast<double>(s.consumed)).c_str(),
      Human(consume_rate_).c_str(), static_cast<unsigned long long>(sent - std::min(sent, s.acked)));
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", line);
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
  printed_ = true;
}

void Progress::Finish() {
  if (enabled_ && tty_ && printed_) std::fprintf(stderr, "\n");
}

}  // namespace rdmq::bench
