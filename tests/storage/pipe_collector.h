// PipeCollector: the crash tests' parent side of a pipe from a forked writer. A thread of its own
// reads the fixed-size messages (acknowledgements) the child writes, until EOF (the child is
// gone), so that the moment the test kills the child is unrelated to where the child is in its
// loop. count() follows how many have arrived; Join() waits for EOF and hands them over.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace rdmq::storage::test {

template <class Msg>
class PipeCollector {
  static_assert(std::is_trivially_copyable_v<Msg>);

 public:
  explicit PipeCollector(int fd) : thread_([this, fd] { Collect(fd); }) {}
  ~PipeCollector() {
    if (thread_.joinable()) thread_.join();
  }
  PipeCollector(const PipeCollector&) = delete;
  PipeCollector& operator=(const PipeCollector&) = delete;

  uint64_t count() const { return count_.load(); }
  std::vector<Msg> Join() {
    thread_.join();
    return std::move(msgs_);
  }

 private:
  void Collect(int fd) {
    Msg m;
    size_t have = 0;
    auto* buf = reinterpret_cast<char*>(&m);
    while (true) {
      const ssize_t n = ::read(fd, buf + have, sizeof m - have);
      if (n <= 0) break;  // EOF: the writer is gone
      have += static_cast<size_t>(n);
      if (have == sizeof m) {
        msgs_.push_back(m);
        count_.fetch_add(1);
        have = 0;
      }
    }
  }

  std::vector<Msg> msgs_;  // the thread's until Join
  std::atomic<uint64_t> count_{0};
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace rdmq::storage::test
