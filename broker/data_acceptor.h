// DataAcceptor: accepts clients' data endpoints on the data listener and runs their handshake
// (the 8-byte client id of a session that said Hello; answered with a ResponseHeader or an
// error), then posts their receives and binds the endpoint to the session.
//
// Threading: its own thread, accepting in 100 ms slices until Stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "rdmq/fabric/fabric.h"
#include "session.h"

namespace rdmq::broker::internal {

class DataAcceptor {
 public:
  // Endpoints share `send_cq` and `recv_cq`; `recv_depth` receives are posted on each.
  DataAcceptor(fabric::Fabric& fabric, fabric::CompletionQueue& send_cq, fabric::CompletionQueue& recv_cq,
               uint32_t recv_depth, SessionTable& sessions)
      : fabric_(fabric), send_cq_(send_cq), recv_cq_(recv_cq), recv_depth_(recv_depth), sessions_(sessions) {}
  ~DataAcceptor() { Stop(); }
  DataAcceptor(const DataAcceptor&) = delete;
  DataAcceptor& operator=(const DataAcceptor&) = delete;

  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    accepting_.store(false, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop();
  void Handshake(std::unique_ptr<fabric::Endpoint> e);

  fabric::Fabric& fabric_;
  fabric::CompletionQueue& send_cq_;
  fabric::CompletionQueue& recv_cq_;
  const uint32_t recv_depth_;
  SessionTable& sessions_;
  std::atomic<bool> accepting_{true};
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
