#include "cli/process_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace rdmq::test {

namespace fs = std::filesystem;

std::string BinDir() {
  if (const char* d = std::getenv("RDMQ_TEST_BIN_DIR"); d != nullptr && *d != '\0') return d;
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path().string();
}

std::string Bin(const std::string& name) { return BinDir() + "/" + name; }

namespace {

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// fork + exec with three pipes; feeds `input`, collects both outputs until the child exits.
RunResult Spawn(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
                const std::map<std::string, std::string>& env) {
  RunResult r;
  signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill the test with SIGPIPE
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a timeout kills the whole pipeline it may start
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    signal(SIGPIPE, SIG_DFL);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (input.empty()) {
    close(in[1]);
    in[1] = -1;
  }
  setpgid(pid, pid);  // also here, so the group exists before any kill below
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool out_open = true, err_open = true, killed = false;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[3];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out[0], POLLIN, 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (in[1] >= 0) fds[n++] = {in[1], POLLOUT, 0};
    const int ready = poll(fds, n, 100);
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline && !killed) {
      kill(-pid, SIGKILL);
      killed = true;
      r.err += "\n[test harness: killed after " + std::to_string(timeout_s) + " s]\n";
    }
    // A grandchild that left the group could still hold the pipes open: give up on it.
    if (killed && now > deadline + std::chrono::seconds(5)) break;
    if (ready <= 0) continue;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in[1]) {
        const ssize_t w = write(in[1], input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) written = input.size();  // the child closed stdin
        if (written == input.size()) {
          close(in[1]);
          in[1] = -1;
        }
        continue;
      }
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      std::string& sink = fds[i].fd == out[0] ? r.out : r.err;
      if (got > 0) {
        sink.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        (fds[i].fd == out[0] ? out_open : err_open) = false;
      }
    }
  }
  if (in[1] >= 0) close(in[1]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = DecodeStatus(status);
  return r;
}

}  // namespace

RunResult Run(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
              const std::map<std::string, std::string>& env) {
  return Spawn(argv, input, timeout_s, env);
}

RunResult Shell(const std::string& command, int timeout_s, const std::map<std::string, std::string>& env) {
  auto e = env;
  const char* path = std::getenv("PATH");
  e["PATH"] = BinDir() + ":" + (path ? path : "/usr/bin:/bin");
  return Spawn({"/bin/sh", "-c", command}, "", timeout_s, e);
}

BrokerProcess::BrokerProcess(std::string data_dir, std::vector<std::string> extra)
    : dir_(std::move(data_dir)), extra_(std::move(extra)) {}

BrokerProcess::~BrokerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

std::string BrokerProcess::Log() const {
  std::ifstream in(dir_ + ".log");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool BrokerProcess::Start(std::string* error) {
  fs::create_directories(dir_);
  std::error_code ec;
  fs::remove(dir_ + "/rdmq.addr", ec);
  const std::string log = dir_ + ".log";
  // Tests run in parallel: the Kafka listener takes any free port unless the test says.
  std::vector<std::string> argv = prefix_;
  argv.insert(argv.end(), {Bin("rdmq-broker"), "--data-dir", dir_, "--set", "listen.kafka=127.0.0.1:0",
                           "--set", "listen.http=127.0.0.1:0"});
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  bool kafka_off = false;
  for (const auto& a : extra_) kafka_off = kafka_off || a == "listen.kafka=off";
  for (int i = 0; i < 300; ++i) {
    std::ifstream addr(dir_ + "/rdmq.addr");
    std::string word, value;
    address_.clear();
    kafka_.clear();
    while (addr >> word >> value) {
      if (word == "kafka") kafka_ = value;
      if (word != "control") continue;
      if (value.rfind("unix:", 0) == 0 || value.rfind("tcp:", 0) == 0 || value.rfind("verbs:", 0) == 0) {
        address_ = value;
      } else if (!value.empty() && value[0] == '/') {
        address_ = "unix:" + value;
      } else {
        address_ = "tcp:" + value;
      }
    }
    // (The file is written in one go; a read that raced with it is repeated.)
    if (!address_.empty() && (kafka_off || !kafka_.empty())) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "rdmq-broker exited with status " + std::to_string(DecodeStatus(status)) + ":\n" + Log();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *error = "rdmq-broker did not come up within 30 s:\n" + Log();
  return false;
}

void BrokerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void BrokerProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int BrokerProcess::Stop(int timeout_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  for (int i = 0; i < timeout_s * 10; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return DecodeStatus(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return DecodeStatus(status);
}

}  // namespace rdmq::test
