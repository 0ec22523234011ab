// A broker in the test's own process, with an admin client connected to it: what the in-process
// broker tests (leases, topic alter, compression, idle) start.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <utility>

#include "rdmq/auth/scram.h"
#include "rdmq/broker/broker.h"
#include "rdmq/client/admin.h"
#include "rdmq/metadata/store.h"
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

// `alice` (password "alice-secret") with both SCRAM mechanisms, written to the metadata store in
// `dir` before a broker starts there (as `rdmq user add --data-dir` does).
inline void AddAlice(const rdmq::test::TempDir& dir) {
  const auto secret = [](auth::ScramHash h) {
    auto c = auth::MakeScramCredential(h, "alice-secret");
    REQUIRE_OK(c);
    return metadata::ScramSecret{c->salt, c->iterations, c->stored_key, c->server_key};
  };
  metadata::StoreOptions so;
  so.dir = dir.str() + "/meta";
  auto store = metadata::MetadataStore::Open(so);
  REQUIRE_OK(store);
  metadata::UserInfo u{"alice",
                       {{"SCRAM-SHA-256", secret(auth::ScramHash::kSha256)},
                        {"SCRAM-SHA-512", secret(auth::ScramHash::kSha512)}}};
  REQUIRE_OK((*store)->CreateUser(u));
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

}  // namespace rdmq::broker::test
