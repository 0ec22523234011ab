// A peer process for the fabric conformance tests. It connects to a listening fabric and plays
// one role:
//
//   fabric_test_peer atomics <provider> <address> <fetch_adds> <cas_increments>
//       receives a descriptor as a control message, attaches it and adds 1 to its word 0 with
//       FETCH_ADD `fetch_adds` times and to its word 1 with COMPARE_SWAP loops `cas_increments` times, then
//       sends "done" and waits for the peer to close.
//   fabric_test_peer target <provider> <address> <bytes>
//       allocates a region of `bytes` (filled with 0x5a), sends its descriptor and waits until
//       the peer goes away (the test kills it with SIGKILL).
//   fabric_test_peer writer <provider> <address> <bytes> <value>
//       receives a descriptor, posts one WRITE of `bytes` bytes of `value` to offset 0 and
//       kills itself with SIGKILL right after posting.
//
// <provider> is a provider name, or "tcp+tls=DIR": tcp with TLS, trusting DIR/ca.pem and
// presenting DIR/client.pem (the test CA of support/pki.h).
//
// Exit status 0 on success; 2 for bad arguments; 1 with a message on stderr otherwise.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "peer_util.h"
#include "rdmq/common/coding.h"
#include "rdmq/fabric/fabric.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace std::chrono_literals;

namespace {

[[noreturn]] void Die(const std::string& what, const Status& s = Status::Ok()) {
  std::fprintf(stderr, "fabric_test_peer: %s%s%s\n", what.c_str(), s.ok() ? "" : ": ",
               s.ok() ? "" : s.ToString().c_str());
  std::exit(1);
}

template <class T>
T Must(Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what, r.status());
  return std::move(r).value();
}

struct Conn {
  std::unique_ptr<Fabric> fabric;
  std::unique_ptr<CompletionQueue> scq, rcq;
  std::unique_ptr<Endpoint> ep;
};

FabricOptions Options(const std::string& provider) {
  FabricOptions fo;
  constexpr std::string_view kTls = "tcp+tls=";
  if (provider.starts_with(kTls)) {
    const std::string dir = provider.substr(kTls.size());
    fo.provider = Provider::kTcp;
    fo.tls.enabled = true;
    fo.tls.ca = dir + "/ca.pem";
    fo.tls.certificate = dir + "/client.pem";
    fo.tls.key = dir + "/client.key";
    return fo;
  }
  auto p = ParseProvider(provider);
  if (!p.ok()) Die("provider", p.status());
  fo.provider = *p;
  return fo;
}

Conn Connect(const FabricOptions& fo, const std::string& address) {
  Conn c;
  c.fabric = Must(Fabric::Open(fo), "open fabric");
  c.scq = Must(c.fabric->CreateCompletionQueue(256), "create cq");
  c.rcq = Must(c.fabric->CreateCompletionQueue(256), "create cq");
  EndpointOptions eo;
  eo.send_cq = c.scq.get();
  eo.recv_cq = c.rcq.get();
  eo.connect_timeout = 20s;
  c.ep = Must(c.fabric->Connect(address, eo), "connect to " + address);
  return c;
}

std::unique_ptr<RemoteRegion> ReceiveAndAttach(Conn& c) {
  const std::string bytes = Must(c.ep->RecvControl(20s), "receive descriptor");
  const RegionDescriptor d = Must(RegionDescriptor::Decode(coding::AsBytes(bytes)), "decode descriptor");
  return Must(c.ep->Attach(d), "attach");
}

uint64_t RunAtomic(Conn& c, WorkRequest wr) {
  wr.signaled = true;
  if (Status s = c.ep->Post(std::span<const WorkRequest>(&wr, 1)); !s.ok()) Die("post atomic", s);
  auto got = test::PollCompletions(*c.scq, 1, 20s);
  if (got.size() != 1) Die("atomic did not complete");
  if (got[0].status) Die("atomic failed", Status(got[0].status));
  return *static_cast<uint64_t*>(wr.local.addr);
}

int Atomics(const FabricOptions& p, const std::string& address, long fadds, long cas) {
  Conn c = Connect(p, address);
  auto remote = ReceiveAndAttach(c);
  auto local = Must(c.fabric->Allocate(4096, kLocalWrite), "allocate");
  WorkRequest wr;
  wr.remote = remote.get();
  wr.local = {local->data(), 8, local.get()};
  for (long i = 0; i < fadds; ++i) {
    wr.opcode = Opcode::kFetchAdd;
    wr.operand = 1;
    RunAtomic(c, wr);
  }
  uint64_t v = 0;
  for (long i = 0; i < cas;) {
    wr.opcode = Opcode::kCompareSwap;
    wr.remote_offset = 8;
    wr.operand = v;
    wr.swap = v + 1;
    const uint64_t old = RunAtomic(c, wr);
    if (old == v) {
      ++i;
      ++v;
    } else {
      v = old;
    }
  }
  const std::string done = "done";
  if (Status s = c.ep->SendControl(coding::AsBytes(done)); !s.ok()) Die("send done", s);
  (void)c.ep->RecvControl(60s);  // until the test closes the connection
  return 0;
}

int Target(const FabricOptions& p, const std::string& address, size_t bytes) {
  Conn c = Connect(p, address);
  auto region =
      Must(c.fabric->Allocate(bytes, kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic), "allocate");
  std::memset(region->data(), 0x5a, bytes);
  const std::string d = region->Descriptor().Encode();
  if (Status s = c.ep->SendControl(coding::AsBytes(d)); !s.ok()) Die("send descriptor", s);
  for (;;) {
    auto m = c.ep->RecvControl(3600s);
    if (!m.ok()) return 0;
  }
}

int Writer(const FabricOptions& p, const std::string& address, size_t bytes, int value) {
  Conn c = Connect(p, address);
  auto remote = ReceiveAndAttach(c);
  auto local = Must(c.fabric->Allocate(bytes, kLocalWrite), "allocate");
  std::memset(local->data(), value, bytes);
  WorkRequest wr;
  wr.opcode = Opcode::kWrite;
  wr.signaled = false;
  wr.remote = remote.get();
  wr.local = {local->data(), bytes, local.get()};
  if (Status s = c.ep->Post(std::span<const WorkRequest>(&wr, 1)); !s.ok()) Die("post write", s);
  ::raise(SIGKILL);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: fabric_test_peer atomics|target|writer <provider> <address> ...\n");
    return 2;
  }
  const std::string mode = argv[1];
  const FabricOptions p = Options(argv[2]);
  const std::string address = argv[3];
  if (mode == "atomics" && argc == 6) return Atomics(p, address, std::atol(argv[4]), std::atol(argv[5]));
  if (mode == "target" && argc == 5) return Target(p, address, std::strtoul(argv[4], nullptr, 10));
  if (mode == "writer" && argc == 6) {
    return Writer(p, address, std::strtoul(argv[4], nullptr, 10), std::atoi(argv[5]));
  }
  std::fprintf(stderr, "fabric_test_peer: bad arguments for mode %s\n", mode.c_str());
  return 2;
}
