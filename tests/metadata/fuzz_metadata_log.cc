// Fuzzes the metadata log decoder and the JSON mutation/checkpoint decoders over arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "metadata/wal.h"
#include "rdmq/metadata/topic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto r = rdmq::metadata::wal::DecodeLog(bytes, "fuzz");
  if (r.ok()) {
    for (const auto& rec : r->records) {
      auto j = nlohmann::json::parse(rec.payload, nullptr, false);
      if (!j.is_discarded() && j.is_object()) {
        auto t = j.find("topic");
        if (t != j.end()) (void)rdmq::metadata::TopicInfoFromJson(*t);
      }
    }
  }
  auto j = nlohmann::json::parse(bytes, nullptr, false);
  if (!j.is_discarded()) {
    (void)rdmq::metadata::TopicInfoFromJson(j);
    (void)rdmq::metadata::TopicConfigFromJson(j, rdmq::metadata::TopicConfig{});
  }
  return 0;
}
