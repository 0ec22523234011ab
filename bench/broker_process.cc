#include "broker_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

namespace rdmq::bench {

using namespace std::chrono_literals;

BrokerProcess::BrokerProcess(const Workload& w)
    : dir_(w.broker_dir.empty()
               ? std::filesystem::temp_directory_path() / ("rdmq-bench-broker-" + std::to_string(getpid()))
               : std::filesystem::path(w.broker_dir)),
      keep_dir_(!w.broker_dir.empty()) {}

std::string BrokerProcess::Address(const std::string& key) const {
  std::ifstream in(dir_ / "rdmq.addr");
  std::string k, addr;
  while (in >> k >> addr) {
    if (k == key) return addr;
  }
  return "";
}

Status BrokerProcess::Start(const Workload& w, const std::string& wait_for) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::FromErrno(ec.value(), "find rdmq-bench's own path (/proc/self/exe)");
  const std::filesystem::path broker = self.parent_path() / "rdmq-broker";
  if (!std::filesystem::exists(broker)) {
    return Status(Errc::kNotFound, "--start-broker: " + broker.string() + " is not built");
  }
  std::filesystem::remove_all(dir_, ec);
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::FromErrno(ec.value(), "create the broker's data directory " + dir_.string());
  const std::string log = (dir_ / "broker.log").string();
  std::vector<std::string> args = {broker.string(),
                                   "--data-dir",
                                   dir_.string(),
                                   "--fabric",
                                   w.fabric,
                                   "--set",
                                   "durability=" + w.durability,
                                   "--set",
                                   "listen.kafka=127.0.0.1:0",
                                   "--set",
                                   "listen.http=127.0.0.1:0"};
  if (w.fabric != "shm") {
    args.insert(args.end(), {"--set", "listen.control=127.0.0.1:0", "--set", "listen.data=127.0.0.1:0"});
  }
  const pid_t pid = fork();
  if (pid < 0) return Status::FromErrno(errno, "fork for rdmq-broker");
  if (pid == 0) {
    setsid();  // not in the terminal's process group: Ctrl-C reaches rdmq-bench, which stops it
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f != nullptr) dup2(fileno(stdout), STDERR_FILENO);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  for (int i = 0; i < 800; ++i) {
    if (!Address(wait_for).empty()) return Status::Ok();
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid_ = 0;
      return Status(Errc::kUnavailable, "rdmq-broker exited while starting; see " + log);
    }
    std::this_thread::sleep_for(25ms);
  }
  return Status(Errc::kTimeout, "rdmq-broker did not write its " + wait_for + " address to " +
                                    (dir_ / "rdmq.addr").string() + " within 20 s; see " + log);
}

void BrokerProcess::Stop() {
  if (pid_ == 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) break;
    std::this_thread::sleep_for(25ms);
    if (i == 199) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  pid_ = 0;
  if (!keep_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

}  // namespace rdmq::bench
