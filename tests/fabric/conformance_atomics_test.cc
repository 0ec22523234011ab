// The fabric conformance suite (every provider must pass it; conformance.h): Remote atomics: FETCH_ADD and
// COMPARE_SWAP from many threads and several processes.
#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"
#include "rdmq/common/coding.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace rdmq::fabric::test;
using namespace std::chrono_literals;

TEST_CASE("conformance: FETCH_ADD and COMPARE_SWAP from many threads sum exactly") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  const int threads = 4;
  const int fadds = rdmq::test::Trials(1000, 50);
  const int cas = rdmq::test::Trials(200, 20);
  auto target = Alloc(*p.a.fabric, 4096);
  const auto desc = target->Descriptor();
  struct Worker {
    std::unique_ptr<CompletionQueue> scq, rcq;
    std::unique_ptr<Endpoint> a_side, b_side;
    std::unique_ptr<RemoteRegion> remote;
    std::unique_ptr<Region> local;
    std::vector<uint64_t> olds;
    int failures = 0;
  };
  std::vector<Worker> ws(threads);
  for (auto& w : ws) {
    w.scq = std::move(p.b.fabric->CreateCompletionQueue(256)).value();
    w.rcq = std::move(p.b.fabric->CreateCompletionQueue(256)).value();
    auto [x, y] = p.ConnectMore(p.a.scq.get(), p.a.rcq.get(), w.scq.get(), w.rcq.get());
    w.a_side = std::move(x);
    w.b_side = std::move(y);
    w.remote = ShareAndAttach(*w.a_side, *w.b_side, desc);
    w.local = Alloc(*p.b.fabric, 4096, kLocalWrite);
  }
  auto run = [&](Worker& w, WorkRequest wr) -> uint64_t {
    if (!w.b_side->Post(std::span(&wr, 1)).ok()) {
      ++w.failures;
      return 0;
    }
    auto got = PollCompletions(*w.scq, 1, 20s);
    if (got.size() != 1 || got[0].status || got[0].byte_len != 8) ++w.failures;
    return *reinterpret_cast<uint64_t*>(w.local->data());
  };
  // The owner adds too, with its own CPU atomics (the fabric's atomics must interoperate).
  // Soft-RoCE executes remote atomics under a kernel lock, not as CPU atomics, so verbs skips it.
  const int owner_adds = kProvider == Provider::kVerbs ? 0 : fadds;
  std::vector<std::thread> ts;
  for (auto& w : ws) {
    ts.emplace_back([&] {
      for (int i = 0; i < fadds; ++i) {
        w.olds.push_back(run(w, MakeAtomic(Opcode::kFetchAdd, *w.local, 0, w.remote.get(), 0, 1, 0, i)));
      }
      uint64_t v = 0;
      for (int i = 0; i < cas;) {
        const uint64_t old =
            run(w, MakeAtomic(Opcode::kCompareSwap, *w.local, 0, w.remote.get(), 8, v, v + 1, i));
        if (old == v) {
          ++i;
          ++v;
        } else {
          v = old;
        }
        if (w.failures > 0) break;
      }
    });
  }
  for (int i = 0; i < owner_adds; ++i) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(target->data())).fetch_add(1);
  }
  for (auto& t : ts) t.join();
  std::vector<uint64_t> all;
  for (auto& w : ws) {
    CHECK(w.failures == 0);
    all.insert(all.end(), w.olds.begin(), w.olds.end());
  }
  CHECK(LoadWord(*target, 0) == static_cast<uint64_t>(threads * fadds + owner_adds));
  CHECK(LoadWord(*target, 8) == static_cast<uint64_t>(threads * cas));
  // Every FETCH_ADD saw a distinct old value.
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  if (owner_adds == 0) {
    std::vector<uint64_t> want(all.size());
    std::iota(want.begin(), want.end(), 0);
    CHECK(all == want);
  }
}

TEST_CASE("conformance: FETCH_ADD and COMPARE_SWAP from several processes sum exactly") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  const int procs = 3;
  const int fadds = rdmq::test::Trials(500, 50);
  const int cas = rdmq::test::Trials(100, 10);
  auto target = Alloc(*p.a.fabric, 4096);
  std::vector<pid_t> pids;
  for (int i = 0; i < procs; ++i) {
    pids.push_back(SpawnPeer(
        {"atomics", PeerProvider(), p.a.fabric->address(), std::to_string(fadds), std::to_string(cas)}));
    REQUIRE(pids.back() > 0);
  }
  std::vector<std::unique_ptr<Endpoint>> eps;
  for (int i = 0; i < procs; ++i) {
    auto ep = p.a.fabric->Accept(p.OptionsA(), 30s);
    REQUIRE_OK(ep);
    const std::string d = target->Descriptor().Encode();
    REQUIRE_OK((*ep)->SendControl(coding::AsBytes(d)));
    eps.push_back(std::move(ep).value());
  }
  // This process adds too, through its own endpoint.
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  auto local = Alloc(*p.b.fabric, 4096, kLocalWrite);
  for (int i = 0; i < fadds; ++i) {
    Completion c = Run(*p.eb, *p.b.scq, MakeAtomic(Opcode::kFetchAdd, *local, 0, remote.get(), 0, 1, 0, i));
    REQUIRE(!c.status);
  }
  for (auto& ep : eps) {
    auto m = ep->RecvControl(120s);
    REQUIRE_OK(m);
    CHECK(*m == "done");
  }
  CHECK(LoadWord(*target, 0) == static_cast<uint64_t>((procs + 1) * fadds));
  CHECK(LoadWord(*target, 8) == static_cast<uint64_t>(procs * cas));
  eps.clear();
  for (pid_t pid : pids) CHECK(WaitChild(pid, 30s) == 0);
}
