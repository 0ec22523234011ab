#include "agent.h"

#include <pthread.h>

#include <boost/asio/post.hpp>

namespace rdmq::fabric::internal {

namespace asio = boost::asio;

Agent::Agent(std::string name) : guard_(asio::make_work_guard(io_)) {
  thread_ = std::thread([this, name = std::move(name)] {
    thread_id_.store(std::this_thread::get_id());
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    io_.run();
  });
}

Agent::~Agent() { Stop(); }

void Agent::Stop() {
  guard_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void Agent::Post(std::function<void()> f) { asio::post(io_, std::move(f)); }

}  // namespace rdmq::fabric::internal
