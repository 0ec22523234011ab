// The progress line rdmq-bench prints while a run goes on: on a terminal one line rewritten in
// place (carriage return), otherwise a plain line every second, so logs stay readable.
// Threading: used by the driver's sampling loop only.
#pragma once

#include <cstdint>
#include <string>

#include "rdmq/bench/driver.h"

namespace rdmq::bench {

class Progress {
 public:
  Progress(ProgressMode mode, std::string system);
  // A new sample; prints when it is time to.
  void Update(const Sample& s, uint64_t sent, uint32_t message_size);
  // Ends the line (terminal mode).
  void Finish();

 private:
  bool tty_ = false;
  bool enabled_ = true;
  std::string system_;
  double last_print_ = -1;
  double window_t_ = 0;  // start of the rate window
  uint64_t window_acked_ = 0;
  uint64_t window_consumed_ = 0;
  double produce_rate_ = 0, consume_rate_ = 0;
  bool printed_ = false;
};

// "1.23 M", "456.7 k", "89": a rate or count, short.
std::string Human(double v);

}  // namespace rdmq::bench
