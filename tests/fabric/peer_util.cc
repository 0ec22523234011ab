#include "peer_util.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "rdmq/common/clock.h"

extern char** environ;

namespace rdmq::fabric::test {

std::string ListenAddress(Provider p, const std::string& dir, const std::string& name) {
  switch (p) {
    case Provider::kShm:
      return "unix:" + dir + "/" + name + ".sock";
    case Provider::kTcp:
      return "127.0.0.1:0";
    case Provider::kVerbs:
      if (const char* e = std::getenv("RDMQ_VERBS_LISTEN")) return e;
      return ":0";
  }
  return "";
}

std::string PeerBinary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "fabric_test_peer").string();
}

pid_t SpawnPeer(const std::vector<std::string>& args) {
  std::vector<std::string> all{PeerBinary()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

int WaitChild(pid_t pid, std::chrono::milliseconds timeout) {
  const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(timeout.count()) * 1'000'000;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -2;
    }
    if (r < 0 && errno != EINTR) return -3;
    if (MonoNanos() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<Completion> PollCompletions(CompletionQueue& cq, size_t n, std::chrono::milliseconds timeout) {
  std::vector<Completion> got;
  const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(timeout.count()) * 1'000'000;
  Completion buf[64];
  while (got.size() < n) {
    const size_t k = cq.Poll(std::span<Completion>(buf, std::min<size_t>(64, n - got.size())));
    got.insert(got.end(), buf, buf + k);
    if (k > 0) continue;
    const uint64_t now = MonoNanos();
    if (now >= deadline) break;
    (void)cq.Wait(std::chrono::nanoseconds(deadline - now));
  }
  return got;
}

}  // namespace rdmq::fabric::test
