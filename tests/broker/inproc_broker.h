// A broker in the test's own process, with an admin client connected to it: what the in-process
// broker tests (leases, topic alter, compression, idle) start.
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "rdmq/broker/broker.h"
#include "rdmq/client/admin.h"
#include "support/test_util.h"

namespace rdmq::broker::test {

// A broker configuration for a test: data in `dir`, the fabric given (tcp listens on free
// loopback ports), Kafka and HTTP on free loopback ports (never 9092 or 9194, which another
// broker may hold),
// warnings and errors logged only.
inline BrokerConfig TestConfig(const rdmq::test::TempDir& dir, const std::string& fabric = "shm") {
  BrokerConfig cfg;
  cfg.data_dir = dir.str();
  cfg.fabric = fabric;
  if (fabric == "tcp") {
    cfg.listen_control = "127.0.0.1:0";
    cfg.listen_data = "127.0.0.1:0";
  }
  cfg.listen_kafka = "127.0.0.1:0";
  cfg.listen_http = "127.0.0.1:0";
  cfg.log_level = "warn";
  return cfg;
}

struct Running {
  std::unique_ptr<Broker> broker;
  std::unique_ptr<client::AdminClient> admin;
  client::ClientOptions client;  // bootstrap set to the broker's control address
};

inline Running Start(const BrokerConfig& cfg) {
  auto b = Broker::Start(cfg);
  REQUIRE_OK(b);
  Running r;
  r.broker = std::move(*b);
  r.client.bootstrap = r.broker->control_address();
  auto a = client::AdminClient::Connect(r.client);
  REQUIRE_OK(a);
  r.admin = std::move(*a);
  return r;
}

// How many partition directories of `topic` are in the broker's data directory.
inline size_t PartitionDirs(const rdmq::test::TempDir& dir, const std::string& topic) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.str() + "/topics")) {
    if (e.path().filename().string().rfind(topic + "-", 0) == 0) ++n;
  }
  return n;
}

}  // namespace rdmq::broker::test
