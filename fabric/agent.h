// The agent: one thread per Fabric running a Boost.Asio io_context. It is the "software NIC" of
// the tcp provider and the control server of shm and verbs: every bootstrap connection (conn.h)
// and listener (listener.h) of the fabric is served on it.
//
// Threading: Post and InThread from any thread; Stop not from the agent thread itself.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>
#include <thread>

namespace rdmq::fabric::internal {

class Agent {
 public:
  // Starts the thread, named `name` (at most 15 characters are kept).
  explicit Agent(std::string name);
  ~Agent();  // Stop(); pending handlers are destroyed with the io_context
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Stops the io_context and joins the thread. Idempotent; not from the agent thread.
  void Stop();

  boost::asio::io_context& io() noexcept { return io_; }
  bool InThread() const noexcept { return std::this_thread::get_id() == thread_id_.load(); }
  // Runs `f` on the agent thread.
  void Post(std::function<void()> f);

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
};

}  // namespace rdmq::fabric::internal
