// The fabric conformance suite's fixture and helpers. The suite (conformance_*_test.cc, one file
// per concept: data, messages, atomics, errors, failure) is compiled once and linked into one
// binary per provider (fabric_conformance_shm, _tcp, _verbs); each binary defines kProvider.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "peer_util.h"
#include "rdmq/fabric/fabric.h"
#include "support/test_util.h"

namespace rdmq::fabric::test {

extern const Provider kProvider;

// Why kProvider cannot run here ("" if it can): verbs without an RDMA device.
std::string ProviderUnavailable();

// The options the suite's fabrics open with in this binary: the provider, and in the tcp+TLS
// binary TLS (the listener with the test CA's server certificate, asking for client
// certificates; connectors trusting that CA and presenting its client certificate).
FabricOptions SuiteOptions(bool listening);
// The provider argument that tells fabric_test_peer to connect the same way ("tcp", or
// "tcp+tls=<directory of the test CA>").
std::string PeerProvider();
// SuiteOptions and PeerProvider of the binaries without TLS.
inline FabricOptions PlainOptions() {
  FabricOptions o;
  o.provider = kProvider;
  return o;
}

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
// Posts `wrs`, polling `cq` into `done` whenever the send queue is full.
void PostRetrying(Endpoint& ep, CompletionQueue& cq, std::span<const WorkRequest> wrs,
                  std::vector<Completion>* done);

inline constexpr uint32_t kAll = kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic;
// A region of `n` bytes allocated on `f` (REQUIREs success).
std::unique_ptr<Region> Alloc(Fabric& f, size_t n, uint32_t access = kAll);
inline bool IsError(const Completion& c, FabricErrc e) { return c.status == make_error_code(e); }
inline bool IsCondition(const Completion& c, Errc e) { return Status(c.status).is(e); }
// The 8-byte word at `off` (acquire).
uint64_t LoadWord(const Region& r, size_t off);
// A copy of the region's bytes, and whether the region still holds them.
std::vector<std::byte> Snapshot(const Region& r);
bool Unchanged(const Region& r, const std::vector<std::byte>& snapshot);
// `n` bytes of anonymous memory (REQUIREs success; never unmapped).
void* MapAnonymousForTest(size_t n);

}  // namespace rdmq::fabric::test
