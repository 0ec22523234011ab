// ProducerConfig::Set (producer.h): the Kafka-named producer keys, then the client's.
#include <charconv>
#include <string>

#include "rdmq/producer/producer.h"

namespace rdmq::producer {
namespace {

Status Bad(std::string_view key, std::string_view value, std::string_view why) {
  return Status(Errc::kInvalidArgument,
                std::string(key) + "=" + std::string(value) + ": " + std::string(why));
}

template <class T>
Status ParseInt(std::string_view key, std::string_view value, T lo, T hi, T* out) {
  T v{};
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || value.empty())
    return Bad(key, value, "not an integer");
  if (v < lo || v > hi)
    return Bad(key, value, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *out = v;
  return Status::Ok();
}

}  // namespace

Status ProducerConfig::Set(std::string_view key, std::string_view value) {
  if (key == "batch.size") return ParseInt<uint32_t>(key, value, 128, 64u << 20, &batch_size);
  if (key == "linger.ms") {
    double ms = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec != std::errc() || p != value.data() + value.size() || ms < 0 || ms > 3'600'000) {
      return Bad(key, value, "must be a number of milliseconds in [0, 3600000] (fractions allowed)");
    }
    linger = std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    return Status::Ok();
  }
  if (key == "acks") {
    if (value == "all" || value == "-1") {
      acks = -1;
      return Status::Ok();
    }
    return ParseInt<int>(key, value, 0, 1, &acks);
  }
  if (key == "enable.idempotence") {
    if (value == "true") {
      enable_idempotence = true;
    } else if (value == "false") {
      enable_idempotence = false;
    } else {
      return Bad(key, value, "must be true or false");
    }
    return Status::Ok();
  }
  if (key == "partition.mode") {
    if (value == "exclusive") {
      mode = PartitionMode::kExclusive;
    } else if (value == "shared") {
      mode = PartitionMode::kShared;
    } else {
      return Bad(key, value, "must be exclusive or shared");
    }
    return Status::Ok();
  }
  if (key == "max.in.flight.requests.per.connection")
    return ParseInt<uint32_t>(key, value, 1, 1024, &max_in_flight);
  if (key == "buffer.memory")
    return ParseInt<uint64_t>(key, value, 1u << 20, uint64_t{1} << 40, &buffer_memory);
  if (key == "max.block.ms") {
    int64_t ms = 0;
    RDMQ_RETURN_IF_ERROR(ParseInt<int64_t>(key, value, 0, 86'400'000, &ms));
    max_block = std::chrono::milliseconds(ms);
    return Status::Ok();
  }
  if (key == "rdmq.wait.spin.us") {
    int64_t us = 0;
    RDMQ_RETURN_IF_ERROR(ParseInt<int64_t>(key, value, 0, 10'000'000, &us));
    spin = std::chrono::microseconds(us);
    return Status::Ok();
  }
  if (key == "delivery.timeout.ms") {
    int64_t ms = 0;
    RDMQ_RETURN_IF_ERROR(ParseInt<int64_t>(key, value, 1, 86'400'000, &ms));
    delivery_timeout = std::chrono::milliseconds(ms);
    return Status::Ok();
  }
  Status s = client.Set(key, value);
  if (s.ok()) return s;
  return Status(
      Errc::kInvalidArgument,
      "unknown producer config key '" + std::string(key) +
          "' (known: batch.size, linger.ms, acks, enable.idempotence, partition.mode, "
          "max.in.flight.requests.per.connection, buffer.memory, max.block.ms, delivery.timeout.ms, "
          "rdmq.wait.spin.us, bootstrap.servers, client.id, request.timeout.ms, rdma.device)");
}

}  // namespace rdmq::producer
