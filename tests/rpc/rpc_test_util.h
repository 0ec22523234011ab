// Helpers for the RPC layer's I/O tests: a server and clients on a real fabric provider, in one
// process (two Fabric instances) or with the server in a child process.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "rdmq/fabric/fabric.h"
#include "rdmq/rpc/client.h"
#include "rdmq/rpc/server.h"
#include "support/test_util.h"

namespace rdmq::rpc::test {

using namespace std::chrono_literals;

inline std::span<const std::byte> B(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
inline std::string S(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Opens a listening fabric of `provider` (a Unix socket in `dir` for shm, an ephemeral loopback
// port otherwise) and a connecting one. Returns an error the caller turns into a skip when the
// provider is not available here.
struct FabricPair {
  std::unique_ptr<fabric::Fabric> server;
  std::unique_ptr<fabric::Fabric> client;
};

inline Result<std::unique_ptr<fabric::Fabric>> OpenListening(fabric::Provider p,
                                                             const rdmq::test::TempDir& dir,
                                                             const std::string& name = "rpc.sock") {
  fabric::FabricOptions o;
  o.provider = p;
  switch (p) {
    case fabric::Provider::kShm:
      o.listen = (dir / name).string();
      break;
    case fabric::Provider::kTcp:
      o.listen = "127.0.0.1:0";
      break;
    case fabric::Provider::kVerbs: {
      // The Soft-RoCE VM sets the address of its rxe device; elsewhere the first one found.
      const char* e = std::getenv("RDMQ_VERBS_LISTEN");
      o.listen = e != nullptr ? e : ":0";
      break;
    }
  }
  return fabric::Fabric::Open(o);
}

inline Result<std::unique_ptr<fabric::Fabric>> OpenConnecting(fabric::Provider p) {
  fabric::FabricOptions o;
  o.provider = p;
  return fabric::Fabric::Open(o);
}

inline Result<FabricPair> OpenPair(fabric::Provider p, const rdmq::test::TempDir& dir) {
  FabricPair fp;
  RDMQ_ASSIGN_OR_RETURN(fp.server, OpenListening(p, dir));
  RDMQ_ASSIGN_OR_RETURN(fp.client, OpenConnecting(p));
  return fp;
}

// The transform every echo-style handler in the tests applies: reverse the bytes, then flip
// each one. A caller checks the response against it, so a response routed to the wrong call or
// carrying the wrong bytes cannot pass.
inline std::string Transform(std::span<const std::byte> in) {
  std::string out(in.size(), '\0');
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = static_cast<char>(~static_cast<unsigned char>(in[in.size() - 1 - i]));
  return out;
}

inline Handler EchoTransform() {
  return [](const RequestContext&, std::span<const std::byte> req, ResponseBuffer& resp) {
    std::byte* p = resp.Grow(req.size());
    for (size_t i = 0; i < req.size(); ++i) p[i] = ~req[req.size() - 1 - i];
    return Status();
  };
}

inline std::string ProviderTag(fabric::Provider p) { return std::string(fabric::ProviderName(p)); }

}  // namespace rdmq::rpc::test

// Defines `void name(fabric::Provider)` and one test case per provider, so that CTest lists and
// skips them separately: shm and tcp in rpc_io_tests, verbs in rpc_verbs_tests (the same
// sources built with RDMQ_RPC_TEST_VERBS, labelled `verbs` so the Soft-RoCE VM runs them).
#ifdef RDMQ_RPC_TEST_VERBS
#define RPC_TEST_BOTH(name, title, tags)                                                  \
  static void name(::rdmq::fabric::Provider provider);                                    \
  TEST_CASE(title " (verbs)", tags "[verbs]") { name(::rdmq::fabric::Provider::kVerbs); } \
  static void name(::rdmq::fabric::Provider provider)
#else
#define RPC_TEST_BOTH(name, title, tags)                                            \
  static void name(::rdmq::fabric::Provider provider);                              \
  TEST_CASE(title " (shm)", tags "[shm]") { name(::rdmq::fabric::Provider::kShm); } \
  TEST_CASE(title " (tcp)", tags "[tcp]") { name(::rdmq::fabric::Provider::kTcp); } \
  static void name(::rdmq::fabric::Provider provider)
#endif

// Opens the fabric pair or skips the test when the provider is unavailable.
#define OPEN_PAIR_OR_SKIP(var, provider, dir)                                                               \
  auto var##_r = ::rdmq::rpc::test::OpenPair(provider, dir);                                                \
  if (!var##_r.ok()) RDMQ_SKIP(std::string("fabric provider unavailable: ") + var##_r.status().ToString()); \
  auto var = std::move(var##_r).value()
