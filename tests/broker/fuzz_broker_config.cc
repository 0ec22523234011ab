// Broker JSON config files and key=value overrides from arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rdmq/broker/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  rdmq::broker::BrokerConfig c;
  if (rdmq::broker::ApplyJson(&c, text, "fuzz").ok()) (void)rdmq::broker::Validate(c);
  rdmq::broker::BrokerConfig d;
  (void)rdmq::broker::ApplySetting(&d, text);
  return 0;
}
