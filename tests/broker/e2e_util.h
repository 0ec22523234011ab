// Helpers for the end-to-end tests: a real rdmq-broker in a child process, its addresses, and
// child processes running the e2e peer (producers and consumers to kill at will).
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/client/options.h"
#include "rdmq/fabric/fabric.h"
#include "support/test_util.h"

namespace rdmq::test {

// Directory of the test binaries (rdmq-broker and the peer live there too).
inline std::string BinDir() {
  if (const char* d = std::getenv("RDMQ_TEST_BIN_DIR"); d != nullptr && *d != '\0') return d;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

// The host to listen on: loopback for tcp; for verbs the address of an RDMA-capable interface
// ($RDMQ_VERBS_LISTEN, host:port, as the Soft-RoCE VM sets it).
inline std::string ListenHost(const std::string& fabric) {
  if (fabric == "verbs") {
    if (const char* e = std::getenv("RDMQ_VERBS_LISTEN"); e != nullptr && *e != '\0') {
      std::string s = e;
      return s.substr(0, s.rfind(':'));
    }
  }
  return "127.0.0.1";
}

// True when an RDMA device can be opened here.
inline bool VerbsAvailable() {
  fabric::FabricOptions o;
  o.provider = fabric::Provider::kVerbs;
  return fabric::Fabric::Open(o).ok();
}

// A child process started with execv; killed (SIGKILL) on destruction if still running.
class Child {
 public:
  Child() = default;
  explicit Child(const std::vector<std::string>& argv, const std::string& stdout_file = "") {
    Start(argv, stdout_file);
  }
  ~Child() { Kill(SIGKILL); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }

  void Start(const std::vector<std::string>& argv, const std::string& stdout_file = "") {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::fflush(nullptr);  // the child must not repeat what this process buffered
    pid_ = fork();
    if (pid_ == 0) {
      // Dies with the test process, whatever kills it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (!stdout_file.empty()) {
        FILE* f = std::freopen(stdout_file.c_str(), "w", stdout);
        (void)f;
        dup2(fileno(stdout), STDERR_FILENO);
      }
      execv(args[0], args.data());
      _exit(127);
    }
  }
  pid_t pid() const { return pid_; }
  bool running() {
    if (pid_ <= 0) return false;
    int st = 0;
    const pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      pid_ = -1;
      return false;
    }
    return true;
  }
  // Sends `sig` and waits for the exit. Returns the wait status.
  int Kill(int sig) {
    if (pid_ <= 0) return status_;
    ::kill(pid_, sig);
    return Wait();
  }
  int Wait() {
    if (pid_ <= 0) return status_;
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    status_ = st;
    return st;
  }
  // Waits up to `timeout` for the exit; true if it exited.
  bool WaitFor(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (!running()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return !running();
  }
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
};

// A broker process on a data directory. The broker writes <data dir>/rdmq.addr once it serves.
class BrokerProcess {
 public:
  BrokerProcess(std::string data_dir, std::string fabric, std::vector<std::string> sets = {})
      : dir_(std::move(data_dir)), fabric_(std::move(fabric)), sets_(std::move(sets)) {}

  // Starts the broker and waits until it serves. False (with the log tail in `why`) if not.
  bool Start(std::string* why = nullptr) {
    std::filesystem::remove(dir_ + "/rdmq.addr");
    std::vector<std::string> argv = {BinDir() + "/rdmq-broker", "--data-dir", dir_, "--fabric", fabric_};
    if (fabric_ != "shm") {
      const std::string host = ListenHost(fabric_);
      argv.insert(argv.end(),
                  {"--set", "listen.control=" + host + ":0", "--set", "listen.data=" + host + ":0"});
      // The Soft-RoCE VM's verbs device has no loopback address: the broker must listen on the
      // VM's own, which it refuses without this (nothing authenticates clients yet).
      if (host.rfind("127.", 0) != 0) argv.insert(argv.end(), {"--set", "security.allow.anonymous=true"});
    }
    // Under emulation (the Soft-RoCE VM runs on TCG) a commit poller spinning its default 1 ms
    // after every commit starves the test's own processes; the tests keep the short spin they
    // were written against (a test's own --set comes later and wins).
    if (fabric_ == "verbs") argv.insert(argv.end(), {"--set", "data.spin.us=100"});
    // Tests run in parallel: the Kafka and HTTP listeners take any free port (rdmq.addr names them).
    argv.insert(argv.end(), {"--set", "listen.kafka=127.0.0.1:0", "--set", "listen.http=127.0.0.1:0"});
    for (const auto& s : sets_) argv.insert(argv.end(), {"--set", s});
    log_ = dir_ + ".broker.log";
    child_.Start(argv, log_);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      std::ifstream in(dir_ + "/rdmq.addr");
      std::string key, addr;
      if (in >> key >> addr && key == "control") {
        control_ = addr;
        while (in >> key >> addr) {
          if (key == "kafka") kafka_ = addr;
          if (key == "http") http_ = addr;
        }
        return true;
      }
      if (!child_.running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (why != nullptr) {
      std::ifstream in(log_);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      *why = "broker did not start (status " + std::to_string(child_.status()) + "); its log ends:\n" +
             text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
    }
    return false;
  }
  void Kill() { child_.Kill(SIGKILL); }
  // Makes later Start()s listen where this run listens (tcp/verbs: the ports picked at the first
  // start), so that a restarted broker is found at the same addresses. Call after Start().
  void PinAddresses() {
    std::ifstream in(dir_ + "/rdmq.addr");
    std::string key, addr;
    while (in >> key >> addr) {
      if (key == "kafka") sets_.push_back("listen.kafka=" + addr);
      if (fabric_ == "shm") continue;  // the socket paths are in the data directory already
      const std::string hostport = addr.substr(addr.find(':') + 1);  // "tcp:host:port" -> "host:port"
      if (key == "control") sets_.push_back("listen.control=" + hostport);
      if (key == "data") sets_.push_back("listen.data=" + hostport);
    }
  }
  // Graceful stop; returns the exit code (-1 if killed by a signal).
  int Stop() {
    const int st = child_.Kill(SIGTERM);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  bool running() { return child_.running(); }
  const std::string& control() const { return control_; }
  // The Kafka listener's host:port (empty if the broker wrote none).
  const std::string& kafka() const { return kafka_; }
  // The HTTP endpoint's host:port (/metrics, /healthz, /readyz).
  const std::string& http() const { return http_; }
  const std::string& dir() const { return dir_; }
  client::ClientOptions Options() const {
    client::ClientOptions o;
    o.bootstrap = control_;
    o.request_timeout = std::chrono::seconds(10);
    return o;
  }

 private:
  std::string dir_, fabric_;
  std::vector<std::string> sets_;
  std::string log_;
  std::string control_;
  std::string kafka_;
  std::string http_;
  Child child_;
};

}  // namespace rdmq::test

// Each test runs on shm and tcp, or (in the verbs build of the file) on verbs.
#ifdef RDMQ_E2E_VERBS
#define E2E_BOTH(name, title, tags)                                                      \
  static void name(const std::string& fabric);                                           \
  TEST_CASE(title " (verbs)", tags "[verbs]") {                                          \
    if (!VerbsAvailable()) RDMQ_SKIP("no RDMA device (run tests/verbs/softroce-vm.sh)"); \
    name("verbs");                                                                       \
  }                                                                                      \
  static void name(const std::string& fabric)
#else
#define E2E_BOTH(name, title, tags)                        \
  static void name(const std::string& fabric);             \
  TEST_CASE(title " (shm)", tags "[shm]") { name("shm"); } \
  TEST_CASE(title " (tcp)", tags "[tcp]") { name("tcp"); } \
  static void name(const std::string& fabric)
#endif

#define START_BROKER(var, dir, fabric, ...)                                      \
  BrokerProcess var((dir / "data").string(), fabric __VA_OPT__(, ) __VA_ARGS__); \
  {                                                                              \
    std::string why_;                                                            \
    const bool started_ = var.Start(&why_);                                      \
    INFO(why_);                                                                  \
    REQUIRE(started_);                                                           \
  }
