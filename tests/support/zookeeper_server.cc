#include "support/zookeeper_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

namespace rdmq::test {
namespace {

constexpr char kJar[] = "/usr/share/java/zookeeper.jar";

// A port nobody listens on now (the kernel's pick for port 0 on loopback).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// ZooKeeper's "ruok" four-letter word, answered "imok" once it serves.
bool Ok(const std::string& host, int port, const std::vector<std::string>& prefix) {
  if (!prefix.empty()) {
    // Inside a namespace: ask from there.
    std::string cmd;
    for (const auto& p : prefix) cmd += p + " ";
    cmd += "bash -c 'exec 3<>/dev/tcp/" + host + "/" + std::to_string(port) +
           " && printf ruok >&3 && timeout 2 cat <&3' 2>/dev/null | grep -q imok";
    return std::system(cmd.c_str()) == 0;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::write(fd, "ruok", 4) == 4) {
    char buf[8] = {};
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ok = ::read(fd, buf, 4) == 4 && std::string(buf, 4) == "imok";
  }
  ::close(fd);
  return ok;
}

}  // namespace

bool ZooKeeperServer::Available() {
  return ::access(kJar, R_OK) == 0 && ::access("/usr/bin/java", X_OK) == 0;
}

ZooKeeperServer::ZooKeeperServer(std::string host, std::vector<std::string> prefix)
    : host_(std::move(host)), prefix_(std::move(prefix)) {
  std::filesystem::create_directories(dir_ / "data");
}

ZooKeeperServer::~ZooKeeperServer() { Stop(); }

bool ZooKeeperServer::Start(std::string* error) {
  if (running()) return true;
  if (port_ == 0) port_ = FreePort();
  {
    std::ofstream cfg(dir_ / "zoo.cfg", std::ios::trunc);
    cfg << "tickTime=500\ninitLimit=10\nsyncLimit=5\n"
        << "dataDir=" << (dir_ / "data").string() << "\n"
        << "clientPort=" << port_ << "\nclientPortAddress=" << host_ << "\n"
        << "maxSessionTimeout=60000\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n";
  }
  // A small heap and the quick JIT: a test's ZooKeeper holds a few hundred znodes.
  std::vector<std::string> argv = prefix_;
  for (const std::string& a :
       {std::string("/usr/bin/java"), std::string("-Xmx256m"), std::string("-XX:+UseSerialGC"),
        std::string("-XX:TieredStopAtLevel=1"), "-Dzookeeper.log.dir=" + dir_.str(), std::string("-cp"),
        std::string("/etc/zookeeper/conf:") + kJar,
        std::string("org.apache.zookeeper.server.quorum.QuorumPeerMain"), (dir_ / "zoo.cfg").string()}) {
    argv.push_back(a);
  }
  const std::string log = (dir_ / "server.log").string();
  // The child's freopen would flush a copy of what this process has buffered into the test log.
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    std::FILE* f = std::freopen(log.c_str(), "a", stdout);
    (void)f;
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  for (int i = 0; i < 300; ++i) {
    if (Ok(host_, port_, prefix_)) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (error != nullptr) {
    const std::string text = Slurp(log);
    *error = "ZooKeeper did not start on " + connect() + "; its log ends:\n" +
             text.substr(text.size() > 2000 ? text.size() - 2000 : 0);
  }
  Stop();
  return false;
}

void ZooKeeperServer::Stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace rdmq::test
