// The fabric conformance suite's fixture. The suite (conformance_test.cc) is compiled once and
// linked into one binary per provider (fabric_conformance_shm, _tcp, _verbs); each binary defines
// kProvider.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "peer_util.h"
#include "rdmq/fabric/fabric.h"
#include "support/test_util.h"

namespace rdmq::fabric::test {

extern const Provider kProvider;

// Why kProvider cannot run here ("" if it can): verbs without an RDMA device.
std::string ProviderUnavailable();

#define FABRIC_CONFORMANCE_PRELUDE()                                           \
  do {                                                                         \
    const std::string rdmq_why_ = ::rdmq::fabric::test::ProviderUnavailable(); \
    if (!rdmq_why_.empty()) RDMQ_SKIP(rdmq_why_);                              \
  } while (0)

struct Side {
  std::unique_ptr<Fabric> fabric;
  std::unique_ptr<CompletionQueue> scq, rcq;
};

// Two fabrics in this process: `a` listens, `b` connects; ea is a's endpoint, eb is b's.
class Pair {
 public:
  explicit Pair(uint32_t max_send_wr = 256, uint32_t max_recv_wr = 256);
  ~Pair();

  EndpointOptions OptionsA() const;
  EndpointOptions OptionsB() const;
  // Another connected pair of endpoints between the same fabrics (each with its own CQs when
  // `own_cqs`, stored in extra_cqs).
  std::pair<std::unique_ptr<Endpoint>, std::unique_ptr<Endpoint>> ConnectMore(CompletionQueue* a_scq,
                                                                              CompletionQueue* a_rcq,
                                                                              CompletionQueue* b_scq,
                                                                              CompletionQueue* b_rcq);

  rdmq::test::TempDir dir{"rdmq-fabric"};
  Side a, b;
  std::unique_ptr<Endpoint> ea, eb;
  uint32_t max_send_wr, max_recv_wr;
};

// Sends `d` from `from` as a control message; `to` receives, decodes and attaches it.
std::unique_ptr<RemoteRegion> ShareAndAttach(Endpoint& from, Endpoint& to, const RegionDescriptor& d);
// Same, returning the attach result (for descriptors that are expected to fail).
Result<std::unique_ptr<RemoteRegion>> TryShareAndAttach(Endpoint& from, Endpoint& to,
                                                        const RegionDescriptor& d);

WorkRequest MakeWrite(const Region& local, size_t local_off, size_t len, const RemoteRegion* r, uint64_t roff,
                      uint64_t tag, bool signaled = true);
WorkRequest MakeRead(const Region& local, size_t local_off, size_t len, const RemoteRegion* r, uint64_t roff,
                     uint64_t tag, bool signaled = true);
WorkRequest MakeAtomic(Opcode op, const Region& local, size_t local_off, const RemoteRegion* r, uint64_t roff,
                       uint64_t operand, uint64_t swap, uint64_t tag);

// Posts `wr` (signalled) and waits for its completion (REQUIREs exactly one, with its tag).
Completion Run(Endpoint& ep, CompletionQueue& cq, WorkRequest wr);

}  // namespace rdmq::fabric::test
