// Clusters of rdmq-broker processes on a ZooKeeper the test starts (tcp fabric, loopback, unless
// the test says another fabric and host), for the cluster end-to-end tests: brokers made and
// started by id, `rdmq` and kcat aimed at any of them.
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
  explicit Cluster(const ZooKeeperServer& server, std::vector<std::string> extra_args = {})
      : Cluster(server.connect(), std::move(extra_args)) {}
  // On a ZooKeeper somebody else runs (the Soft-RoCE VM's host: tests/verbs/softroce-vm.sh).
  explicit Cluster(std::string zookeeper, std::vector<std::string> extra_args = {})
      : zk_connect(std::move(zookeeper)), extra(std::move(extra_args)) {}
  std::string zk_connect;          // host:port of the ZooKeeper (a restarted test server keeps it)
  std::vector<std::string> extra;  // more broker arguments
  std::string fabric = "tcp";
  std::string host = "127.0.0.1";  // where the brokers listen for rdmq's clients
  TempDir tmp{"rdmq-cluster"};
  std::map<int, std::unique_ptr<BrokerProcess>> brokers;

  std::unique_ptr<BrokerProcess> Make(int id, const std::string& dir = "") {
    std::vector<std::string> args{"--set", "fabric=" + fabric,
                                  "--set", "listen.control=" + host + ":0",
                                  "--set", "listen.data=" + host + ":0",
                                  "--set", "broker.id=" + std::to_string(id),
                                  "--set", "cluster.zookeeper.connect=" + zk_connect,
                                  "--set", "cluster.zookeeper.session.timeout.ms=2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<BrokerProcess>(
        tmp.str() + "/" + (dir.empty() ? "broker" + std::to_string(id) : dir), std::move(args));
  }
  void Start(int id) {
    if (!brokers[id]) brokers[id] = Make(id);
    std::string error;
    const bool started = brokers[id]->Start(&error);
    INFO(error);
    REQUIRE(started);
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

// Waits until `ok` holds (every 100 ms, up to `limit`).
inline bool Eventually(const std::function<bool()>& ok,
                       std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ok();
}

#define START_CLUSTER(c)    \
  RDMQ_START_ZOOKEEPER(zk); \
  Cluster c(zk);

}  // namespace rdmq::test
