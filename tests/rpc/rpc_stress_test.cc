// Stress: 32 client threads share 2 channels of one connection handle, 25,000 calls each with
// random payloads of 0 B to 8 KiB, while the server's channel scheduler keeps deactivating and
// reactivating a channel (MAX_AQP toggles between 1 and 2) so threads migrate. Every response
// must match its call (the handler returns a transform of the request, which carries the thread
// and call number), and none may be lost (a lost one times out) or duplicated (a duplicate
// would arrive for a call no longer waiting: late_responses).
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "rdmq/common/coding.h"
#include "rpc_test_util.h"

namespace rdmq::rpc {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace)

constexpr uint16_t kEcho = 1;

void Stress(fabric::Provider provider, int threads, int calls_per_thread) {
  rdmq::test::TempDir dir("rdmq-rpc-stress");
  OPEN_PAIR_OR_SKIP(fp, provider, dir);
  ServerOptions so;
  so.schedule_interval = std::chrono::milliseconds(5);
  auto sr = Server::Create(*fp.server, so);
  REQUIRE_OK(sr);
  auto server = std::move(sr).value();
  REQUIRE_OK(server->RegisterHandler(kEcho, EchoTransform()));
  REQUIRE_OK(server->Start());
  ClientOptions co;
  co.channels = 2;
  co.schedule_interval = std::chrono::milliseconds(5);
  auto cr = Client::Connect(*fp.client, fp.server->address(), co);
  REQUIRE_OK(cr);
  auto client = std::move(cr).value();

  const uint64_t seed = rdmq::test::TestSeed();
  std::atomic<uint64_t> bad{0}, failed{0}, done{0};
  std::atomic<bool> stop_toggle{false};
  std::string first_error;
  std::mutex err_mu;
  // Channel deactivation and reactivation throughout the run.
  std::thread toggler([&] {
    uint32_t aqp = 1;
    while (!stop_toggle.load()) {
      server->SetMaxActiveChannels(aqp);
      aqp = 3 - aqp;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    server->SetMaxActiveChannels(2);
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      std::string req;
      for (int i = 0; i < calls_per_thread; ++i) {
        const size_t body = rng() % (8192 + 1);
        req.resize(std::max<size_t>(body, 16));
        req.resize(body);
        if (body >= 12) {
          coding::StoreLE<uint32_t>(req.data(), static_cast<uint32_t>(t));
          coding::StoreLE<uint64_t>(req.data() + 4, static_cast<uint64_t>(i));
          for (size_t k = 12; k < body; k += 8) {
            const uint64_t v = rng();
            std::memcpy(req.data() + k, &v, std::min<size_t>(8, body - k));
          }
        } else {
          for (auto& c : req) c = static_cast<char>(rng());
        }
        auto r = client->Call(kEcho, req, std::chrono::seconds(60));
        if (!r.ok()) {
          failed.fetch_add(1);
          std::lock_guard<std::mutex> g(err_mu);
          if (first_error.empty()) first_error = r.status().ToString();
          continue;
        }
        if (*r != Transform(B(req))) bad.fetch_add(1);
        done.fetch_add(1);
      }
    });
  }
  for (auto& th : ts) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop_toggle = true;
  toggler.join();
  const uint64_t total = static_cast<uint64_t>(threads) * static_cast<uint64_t>(calls_per_thread);
  const auto cs = client->stats();
  const auto ss = server->stats();
  std::printf(
      "rpc stress (%s): %d threads x %d calls in %.1f s = %.0f calls/s; coalescing %.2f requests/message; "
      "renewals %lu, deactivations %lu, activations %lu, migrations %lu, head reads %lu\n",
      ProviderTag(provider).c_str(), threads, calls_per_thread, secs, static_cast<double>(total) / secs,
      static_cast<double>(cs.requests) / static_cast<double>(std::max<uint64_t>(1, cs.messages)),
      static_cast<unsigned long>(cs.renewals), static_cast<unsigned long>(ss.deactivations),
      static_cast<unsigned long>(ss.activations), static_cast<unsigned long>(cs.migrations),
      static_cast<unsigned long>(cs.head_reads));
  INFO("first error: " << first_error);
  CHECK(failed.load() == 0);
  CHECK(bad.load() == 0);
  CHECK(done.load() == total);
  // Exactly one request and one response per call: nothing lost, nothing duplicated.
  CHECK(cs.requests == total);
  CHECK(ss.requests == total);
  CHECK(cs.responses == total);
  CHECK(cs.late_responses == 0);
  CHECK(cs.timeouts == 0);
  // The run did exercise what it claims to.
  CHECK(ss.deactivations > 0);
  CHECK(ss.activations > 0);
  CHECK(cs.migrations > 0);
  CHECK(cs.renewals > 0);
  CHECK(ss.protocol_errors == 0);
}

// 25,000 calls per thread (800,000 in all: a few hundred channel toggles, about 30 s on 2 cores),
// scaled by RDMQ_TEST_SCALE (the sanitizer stage runs a quarter), or exactly
// RDMQ_RPC_STRESS_CALLS (a longer soak: RDMQ_RPC_STRESS_CALLS=100000 or more).
int CallsPerThread(int nominal = 25000) {
  if (const char* e = std::getenv("RDMQ_RPC_STRESS_CALLS")) return std::max(1, std::atoi(e));
  return rdmq::test::Trials(nominal, 200);
}

#ifdef RDMQ_RPC_TEST_VERBS
// In the Soft-RoCE VM (an emulated CPU, and the RDMA stack in its kernel) a tenth of the calls.
TEST_CASE("stress: 32 threads over 2 channels with deactivation and migration (verbs)",
          "[rpc][stress][verbs]") {
  Stress(fabric::Provider::kVerbs, 32, CallsPerThread(2500));
}
#else
TEST_CASE("stress: 32 threads over 2 channels with deactivation and migration (shm)", "[rpc][stress][shm]") {
  Stress(fabric::Provider::kShm, 32, CallsPerThread());
}

TEST_CASE("stress: 32 threads over 2 channels with deactivation and migration (tcp)", "[rpc][stress][tcp]") {
  Stress(fabric::Provider::kTcp, 32, CallsPerThread());
}
#endif

}  // namespace
}  // namespace rdmq::rpc
