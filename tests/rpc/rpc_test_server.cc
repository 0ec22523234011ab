// Helper process for the RPC tests: a server in its own process (started with posix_spawn, so
// no fork of a test's address space, which verbs forbids once resources exist), that the tests
// kill to check what clients see when their server dies.
//
// usage: rpc_test_server <shm|tcp|verbs> <directory for the shm socket>
// Prints its fabric address (or "-<why>") and a newline on stdout, then serves until killed:
// handler 1 echoes the request transformed (see rpc_test_util.h), handler 3 never answers.
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "rdmq/fabric/fabric.h"
#include "rdmq/rpc/server.h"

int main(int argc, char** argv) {
  using namespace rdmq;                // NOLINT(google-build-using-namespace)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test that started us
  if (argc != 3) {
    std::fprintf(stderr, "usage: rpc_test_server <shm|tcp|verbs> <dir>\n");
    return 2;
  }
  auto provider = fabric::ParseProvider(argv[1]);
  std::string line = "-";
  std::unique_ptr<fabric::Fabric> fab;
  std::unique_ptr<rpc::Server> server;
  if (!provider.ok()) {
    line += provider.status().ToString();
  } else {
    fabric::FabricOptions o;
    o.provider = *provider;
    o.listen = *provider == fabric::Provider::kShm ? std::string(argv[2]) + "/server.sock"
               : *provider == fabric::Provider::kTcp
                   ? std::string("127.0.0.1:0")
                   : std::string(std::getenv("RDMQ_VERBS_LISTEN") ? std::getenv("RDMQ_VERBS_LISTEN") : ":0");
    auto f = fabric::Fabric::Open(o);
    if (!f.ok()) {
      line += f.status().ToString();
    } else {
      fab = std::move(f).value();
      auto s = rpc::Server::Create(*fab);
      if (!s.ok()) {
        line += s.status().ToString();
      } else {
        server = std::move(s).value();
        // The transform of rpc_test_util.h's EchoTransform: reversed, each byte flipped.
        (void)server->RegisterHandler(
            1, [](const rpc::RequestContext&, std::span<const std::byte> req, rpc::ResponseBuffer& resp) {
              std::byte* p = resp.Grow(req.size());
              for (size_t i = 0; i < req.size(); ++i) p[i] = ~req[req.size() - 1 - i];
              return Status();
            });
        (void)server->RegisterHandler(
            3,
            [](const rpc::RequestContext&, std::span<const std::byte>, rpc::ResponseBuffer&) {
              std::this_thread::sleep_for(std::chrono::hours(1));
              return Status();
            },
            rpc::RunOn::kWorkerPool);
        const Status st = server->Start();
        line = st.ok() ? fab->address() : "-" + st.ToString();
      }
    }
  }
  const bool serving = line[0] != '-';
  line += "\n";
  (void)!::write(1, line.data(), line.size());
  if (!serving) return 1;
  for (;;) ::pause();
}
