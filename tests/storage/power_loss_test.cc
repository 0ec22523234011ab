// Simulated power loss with FaultInjectionEnv: the power fails after a random number of
// durability events (inside any operation: a commit, a checkpoint, a seal, a segment creation,
// recovery's own repairs), unpersisted 8-byte words are dropped, kept or torn, and the log is
// recovered. Every acknowledged record must be there with its exact bytes, nothing invalid may be
// readable, and bytes truncated by one recovery must never come back after a later crash.
#include <cstring>
#include <random>

#include "rdmq/storage/log.h"
#include "workload.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::Ack;
using rdmq::storage::test::Checker;
using rdmq::storage::test::Workload;

namespace {

struct TrialConfig {
  LogOptions options;
  bool shared;
  FaultInjectionEnv::LossMode loss;
};

TrialConfig RandomConfig(std::mt19937_64& rng) {
  TrialConfig c;
  c.options.segment_bytes = (rng() % 2) ? 8192 + 4096 : 16384;
  c.options.persist = (rng() % 2) ? PersistMode::kMsync : PersistMode::kPmem;
  c.options.index_interval_bytes = 256;
  c.options.checkpoint_every_commits = 1 + static_cast<uint32_t>(rng() % 8);
  c.options.checkpoint_interval_ms = 1000000;
  c.options.reservation_lease_ns = 1000;
  c.shared = rng() % 2;
  c.loss = static_cast<FaultInjectionEnv::LossMode>(rng() % 3);
  return c;
}

// Runs one round: opens (recovering), checks, then works until the power fails.
// Returns "" or the first problem found.
std::string Round(FaultInjectionEnv& env, const TrialConfig& cfg, Checker& checker, uint32_t round,
                  std::mt19937_64& rng, int64_t budget) {
  {
    env.SetPersistBudget(-1);
    auto log = PartitionLog::Open(&env, "/log", cfg.options);
    if (!log.ok()) return "recovery failed: " + log.status().ToString();
    if (round > 0) {
      std::string problem = checker.CheckAfterCrash(**log, round - 1);
      if (!problem.empty()) return problem;
    }
  }
  // The power fails after `budget` more durability events, possibly during Open itself.
  env.SetPersistBudget(budget);
  auto log = PartitionLog::Open(&env, "/log", cfg.options);
  if (log.ok()) {
    Workload w(log->get(), round, rng(), cfg.shared);
    for (int step = 0; step < 400; ++step) {
      const Status s = w.Step([&](const Ack& a) { checker.OnAck(a); });
      if (s.ok()) continue;
      if (!env.PowerFailed()) return "unexpected error before the power failed: " + s.ToString();
      break;
    }
  } else if (!env.PowerFailed()) {
    return "open failed: " + log.status().ToString();
  }
  log = Status(Errc::kAborted);  // close what is open (its own checkpoint may fail: no power)
  return "";
}

}  // namespace

TEST_CASE("power loss at random points loses nothing acknowledged and shows nothing torn", "[crash][power]") {
  const uint64_t seed = ::rdmq::test::TestSeed();
  std::mt19937_64 rng(seed);
  const int trials = ::rdmq::test::Trials(1000, 50);
  uint64_t acked_total = 0;
  uint64_t words_lost = 0;
  uint64_t process_crashes = 0;
  for (int trial = 0; trial < trials; ++trial) {
    INFO("trial " << trial);
    FaultInjectionEnv env;
    const TrialConfig cfg = RandomConfig(rng);
    Checker checker;
    const uint32_t rounds = 2 + static_cast<uint32_t>(rng() % 2);
    for (uint32_t round = 0; round < rounds; ++round) {
      INFO("round " << round << " shared " << cfg.shared << " mode " << PersistModeName(cfg.options.persist)
                    << " loss " << static_cast<int>(cfg.loss));
      const int64_t budget = static_cast<int64_t>(rng() % 300);
      const std::string problem = Round(env, cfg, checker, round, rng, budget);
      INFO("budget " << budget << ": " << problem);
      REQUIRE(problem.empty());
      // Mostly a power loss; sometimes only the process dies (what was written but not persisted
      // survives in the page cache, and recovery must make it durable before serving it).
      if (rng() % 4 != 0) {
        auto lost = env.SimulatePowerLoss(rng, cfg.loss);
        REQUIRE_OK(lost.status());
        words_lost += *lost;
      } else {
        ++process_crashes;
      }
    }
    // Final recovery (after a power loss) and check.
    REQUIRE_OK(env.SimulatePowerLoss(rng, cfg.loss).status());
    auto log = PartitionLog::Open(&env, "/log", cfg.options);
    REQUIRE_OK(log.status());
    const std::string problem = checker.CheckAfterCrash(**log, rounds - 1);
    INFO(problem);
    REQUIRE(problem.empty());
    acked_total += checker.acked();
  }
  // The trials must have exercised something.
  CHECK(acked_total > static_cast<uint64_t>(trials) * 10);
  CHECK(words_lost > 0);
  WARN("power-loss trials: " << trials << ", records checked " << acked_total << ", unpersisted words "
                             << words_lost << ", process crashes " << process_crashes);
}

TEST_CASE("bytes past a truncation point never come back after a later crash", "[crash]") {
  // A producer wrote two batches past the committed end; the first is torn, the second intact,
  // and nothing was committed. Recovery truncates at the torn one. A later batch of exactly the
  // torn one's size and record count lands at the same position: the intact stale batch right
  // after it would now continue the offsets, and must not be taken for committed data when the
  // log is recovered again.
  MemEnv env;
  LogOptions o;
  o.segment_bytes = 64 << 10;
  o.persist = PersistMode::kMsync;
  auto encode = [](Offset base, char fill) {
    const std::string v(100, fill);
    RecordInput r[2];
    r[0].value = std::string_view(v);
    r[1].value = std::string_view(v);
    BatchOptions bo;
    bo.base_offset = base;
    return EncodeBatch(bo, r);
  };
  uint64_t tail = 0;
  {
    auto log = PartitionLog::Open(&env, "/p", o);
    REQUIRE_OK(log.status());
    const std::string first = encode(Offset(0), 'a');
    REQUIRE_OK((*log)->AppendBatch(coding::AsBytes(first)).status());
    auto seg = (*log)->ActiveSegment();
    tail = seg.committed.value();
    std::string x1 = encode(Offset(2), 'x');
    const std::string x2 = encode(Offset(4), 'y');
    x1[80] ^= 0x01;  // torn
    std::memcpy(seg.data() + tail, x1.data(), x1.size());
    std::memcpy(seg.data() + tail + x1.size(), x2.data(), x2.size());
  }
  {
    auto log = PartitionLog::Open(&env, "/p", o);
    REQUIRE_OK(log.status());
    CHECK((*log)->HighWatermark() == Offset(2));
    CHECK((*log)->recovery().truncated_bytes > 0);
    const std::string y = encode(Offset(2), 'z');
    auto a = (*log)->AppendBatch(coding::AsBytes(y));
    REQUIRE_OK(a.status());
    CHECK(a->position.value() == tail);
  }
  auto log = PartitionLog::Open(&env, "/p", o);
  REQUIRE_OK(log.status());
  CHECK((*log)->HighWatermark() == Offset(4));
  const auto all = rdmq::storage::test::ReadAll(**log);
  REQUIRE(all.size() == 4);
  CHECK(all[3].value == std::string(100, 'z'));
}
