// Clusters of rdmq-broker processes on a ZooKeeper the test starts (tcp fabric, loopback), for
// the cluster end-to-end tests: brokers made and started by id, `rdmq` and kcat aimed at any of
// them.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_fixture.h"
#include "support/zookeeper_server.h"

namespace rdmq::test {

struct Cluster {
  using json = nlohmann::json;
  explicit Cluster(ZooKeeperServer& server, std::vector<std::string> extra_args = {})
      : zk(server), extra(std::move(extra_args)) {}
  ZooKeeperServer& zk;
  std::vector<std::string> extra;  // more broker arguments
  TempDir tmp{"rdmq-cluster"};
  std::map<int, std::unique_ptr<BrokerProcess>> brokers;

  std::unique_ptr<BrokerProcess> Make(int id, const std::string& dir = "") {
    std::vector<std::string> args{"--set", "fabric=tcp",
                                  "--set", "listen.control=127.0.0.1:0",
                                  "--set", "listen.data=127.0.0.1:0",
                                  "--set", "broker.id=" + std::to_string(id),
                                  "--set", "cluster.zookeeper.connect=" + zk.connect(),
                                  "--set", "cluster.zookeeper.session.timeout.ms=2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<BrokerProcess>(
        tmp.str() + "/" + (dir.empty() ? "broker" + std::to_string(id) : dir), std::move(args));
  }
  void Start(int id) {
    if (!brokers[id]) brokers[id] = Make(id);
    std::string error;
    INFO(error);
    REQUIRE(brokers[id]->Start(&error));
  }
  RunResult Rdmq(int via, std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {Bin("rdmq"), "--broker", brokers.at(via)->address()});
    return Run(args, input);
  }
  json Json(int via, std::vector<std::string> args) {
    args.push_back("--json");
    const RunResult r = Rdmq(via, std::move(args));
    REQUIRE_RUN(r, 0);
    return ParseJson(r);
  }
  RunResult Kcat(int via, std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"/usr/bin/kcat", "-b", brokers.at(via)->kafka_address()});
    return Run(args, input, 120);
  }
};

// Waits until `ok` holds (every 100 ms, up to 30 s).
inline bool Eventually(const std::function<bool()>& ok) {
  for (int i = 0; i < 300; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ok();
}

#define START_CLUSTER(c)    \
  RDMQ_START_ZOOKEEPER(zk); \
  Cluster c(zk);

}  // namespace rdmq::test
