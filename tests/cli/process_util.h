// Running the tools as separate processes in end-to-end tests: a broker process per test and a
// helper that runs a command line with given stdin and captures stdout, stderr and exit status.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rdmq::test {

// Where the tools live: $RDMQ_TEST_BIN_DIR (set under CTest), else this test binary's folder.
std::string BinDir();
std::string Bin(const std::string& name);

struct RunResult {
  int code = -1;  // exit status, or 128 + signal
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with `input` on stdin; waits at most `timeout_s` (then SIGKILL, code 137).
RunResult Run(const std::vector<std::string>& argv, const std::string& input = "", int timeout_s = 120,
              const std::map<std::string, std::string>& env = {});
// Runs a /bin/sh command line (pipelines), with the tools' folder first on PATH.
RunResult Shell(const std::string& command, int timeout_s = 120,
                const std::map<std::string, std::string>& env = {});

// An rdmq-broker process on its own data directory (fabric shm unless `extra` says otherwise).
class BrokerProcess {
 public:
  explicit BrokerProcess(std::string data_dir, std::vector<std::string> extra = {});
  ~BrokerProcess();  // SIGKILL if still running
  BrokerProcess(const BrokerProcess&) = delete;
  BrokerProcess& operator=(const BrokerProcess&) = delete;

  // Starts it and waits until it listens (<data dir>/rdmq.addr written). False (with the log in
  // `error`) if it exits or does not come up within 30 s.
  bool Start(std::string* error);
  // SIGTERM and wait; returns the exit status (128 + signal if killed).
  int Stop(int timeout_s = 30);
  // SIGKILL (a crash) and wait.
  void Kill();
  // Sends `sig` without waiting (SIGSTOP / SIGCONT: a broker that stalls and comes back).
  void Signal(int sig);
  // Later Start()s run the broker through `prefix`, a command that execs it (NetLab::Prefix: in
  // a network namespace), so that Stop and Kill reach the broker itself.
  void RunIn(std::vector<std::string> prefix) { prefix_ = std::move(prefix); }
  // Later Start()s listen for Kafka clients where this run does (call after Start()).
  void PinKafkaAddress() { extra_.insert(extra_.end(), {"--set", "listen.kafka=" + kafka_}); }
  const std::string& address() const { return address_; }      // e.g. "unix:/tmp/.../rdmq.sock"
  const std::string& kafka_address() const { return kafka_; }  // host:port of the Kafka listener
  const std::string& data_dir() const { return dir_; }
  std::string Log() const;

 private:
  std::string dir_;
  std::vector<std::string> extra_;
  std::vector<std::string> prefix_;
  pid_t pid_ = -1;
  std::string address_;
  std::string kafka_;
};

}  // namespace rdmq::test
