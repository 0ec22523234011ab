#include "rdmq/client/options.h"

#include <charconv>
#include <cstdlib>

namespace rdmq::client {
namespace {

Status Bad(std::string_view key, std::string_view value, std::string_view why) {
  return Status(Errc::kInvalidArgument,
                std::string(key) + "=" + std::string(value) + ": " + std::string(why));
}

}  // namespace

Status ClientOptions::Set(std::string_view key, std::string_view value) {
  if (key == "bootstrap.servers") {
    if (value.empty()) return Bad(key, value, "must not be empty");
    // Kafka allows a list; one broker is all rdmq needs, so take the first entry.
    const auto comma = value.find(',');
    bootstrap = std::string(value.substr(0, comma));
  } else if (key == "client.id") {
    client_name = value;
  } else if (key == "request.timeout.ms") {
    int64_t ms = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec != std::errc() || p != value.data() + value.size() || ms <= 0 || ms > 86'400'000) {
      return Bad(key, value, "must be an integer in [1, 86400000]");
    }
    request_timeout = std::chrono::milliseconds(ms);
  } else if (key == "rdma.device") {
    device = value;
  } else {
    return Status(Errc::kInvalidArgument,
                  "unknown client config key '" + std::string(key) +
                      "' (known: bootstrap.servers, client.id, request.timeout.ms, rdma.device)");
  }
  return Status::Ok();
}

std::string ClientOptions::ResolvedBootstrap() const {
  if (!bootstrap.empty()) return bootstrap;
  if (const char* env = std::getenv("RDMQ_BROKER"); env != nullptr && *env != '\0') return env;
  return "unix:./rdmq-data/rdmq.sock";
}

}  // namespace rdmq::client
