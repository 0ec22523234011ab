// A ZooKeeper server of a test's own: Debian's zookeeper package (Java), listening on a free port
// of `host` (loopback, or an address inside a network namespace the test made, with `prefix` =
// {"ip", "netns", "exec", NAME}), its data in a temporary directory. The tests of the cluster
// start one, stop it, restart it (same port, same data) and kill it on the way out.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace rdmq::test {

class ZooKeeperServer {
 public:
  // Whether Debian's zookeeper (its jar) and a Java runtime are installed.
  static bool Available();

  explicit ZooKeeperServer(std::string host = "127.0.0.1", std::vector<std::string> prefix = {});
  ~ZooKeeperServer();  // kills it
  ZooKeeperServer(const ZooKeeperServer&) = delete;
  ZooKeeperServer& operator=(const ZooKeeperServer&) = delete;

  // Starts it and waits (up to 30 s) until it answers "ruok"; false with the reason and the
  // server's log tail otherwise.
  bool Start(std::string* error);
  // Kills it (SIGKILL: as a crash) and waits for it.
  void Stop();
  bool running() const { return pid_ > 0; }
  // "host:port", the connect string.
  std::string connect() const { return host_ + ":" + std::to_string(port_); }

 private:
  TempDir dir_{"rdmq-zk"};
  std::string host_;
  std::vector<std::string> prefix_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace rdmq::test

// In a test case: skips it when Debian's zookeeper is missing, else starts a ZooKeeperServer
// named `zk` on loopback (a failure to start fails the test with the server's log).
#define RDMQ_START_ZOOKEEPER(zk)                                               \
  if (!::rdmq::test::ZooKeeperServer::Available())                             \
    RDMQ_SKIP("Debian's zookeeper is not installed (deploy/install-deps.sh)"); \
  ::rdmq::test::ZooKeeperServer zk;                                            \
  {                                                                            \
    std::string zk_error;                                                      \
    const bool zk_up = zk.Start(&zk_error);                                    \
    INFO(zk_error);                                                            \
    REQUIRE(zk_up);                                                            \
  }
