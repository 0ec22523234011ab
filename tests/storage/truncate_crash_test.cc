// Crashes during PartitionLog::TruncateTo.
//
// Power loss (FaultInjectionEnv): the power fails at every durability event of a truncation in
// turn (the truncation record, the directory sync after the later segments' deletion, the seal's
// clearing, the tail's zeroing, the reservation word, the checkpoint, the record's clearing), the
// unpersisted words are dropped, kept or torn (or the process alone dies), sometimes the recovery
// that follows is cut short by another power failure too, and the log is reopened. It must hold
// exactly what it held before the truncation or exactly what the truncation left, the latter
// whenever TruncateTo returned OK, and it must take appends and survive another power loss with
// nothing cut off coming back.
//
// SIGKILL: a child process appends and truncates at random batch boundaries (across segments),
// reporting every acknowledged record and every truncation it starts and finishes; the parent kills
// it at a random moment, reopens the log and checks it: acknowledged records present unless the
// truncation under way when it died took them (and then the log ends exactly at its cut), and no
// record a finished truncation (or an earlier recovery) removed ever back.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "pipe_collector.h"
#include "rdmq/common/clock.h"
#include "rdmq/storage/log.h"
#include "truncate_util.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::AppendBatches;
using rdmq::storage::test::Expected;
using rdmq::storage::test::Values;

namespace {

// --- power loss ---------------------------------------------------------------------------------

struct PowerTrial {
  LogOptions options;
  bool reopen_first = false;  // sealed segments mapped read-only when the truncation runs
  int cut_kind = 0;           // 0 any batch, 1 a segment's first offset, 2 in the active segment, 3 the start
  uint64_t cut_pick = 0;
  int loss = 0;  // a FaultInjectionEnv::LossMode, or 3: the process dies, the page cache survives
  // The recoveries after the crash are themselves cut short: after how many durability events,
  // and how (a loss mode, or 3).
  std::vector<std::pair<int64_t, int>> recovery_crashes;
};

// Builds the same log for every run of a trial: five segments and a little more, then the cut.
Offset Build(FaultInjectionEnv& env, const PowerTrial& t, Expected* e, std::unique_ptr<PartitionLog>* out) {
  auto log = PartitionLog::Open(&env, "/log", t.options);
  REQUIRE_OK(log.status());
  while ((*log)->Segments().size() < 5) REQUIRE_OK(AppendBatches(**log, *e, 1, 3, 90));
  REQUIRE_OK(AppendBatches(**log, *e, 2, 3, 90));
  if (t.reopen_first) {
    REQUIRE_OK((*log)->Close());
    log = PartitionLog::Open(&env, "/log", t.options);
    REQUIRE_OK(log.status());
  }
  const std::vector<SegmentInfo> segs = (*log)->Segments();
  Offset cut = e->start;
  switch (t.cut_kind) {
    case 0:
      cut = e->batches[t.cut_pick % e->batches.size()];
      break;
    case 1:
      cut = segs[t.cut_pick % segs.size()].base_offset;
      break;
    case 2:
      cut = e->batches[e->batches.size() - 1 - t.cut_pick % 2];
      break;
    default:
      break;
  }
  *out = std::move(*log);
  return cut;
}

void Crash(FaultInjectionEnv& env, int loss, std::mt19937_64& rng) {
  if (loss == 3) {
    env.SetPersistBudget(-1);  // a process crash: what was written stays, durable or not
  } else {
    REQUIRE_OK(env.SimulatePowerLoss(rng, static_cast<FaultInjectionEnv::LossMode>(loss)).status());
  }
}

TEST_CASE("power loss at every durability event of a truncation: before or after, never anything else",
          "[truncate][crash][power]") {
  std::mt19937_64 rng(::rdmq::test::TestSeed());
  const int trials = ::rdmq::test::Trials(120, 16);
  uint64_t runs = 0, befores = 0, afters = 0, finished_by_open = 0;
  for (int trial = 0; trial < trials; ++trial) {
    PowerTrial t;
    t.options.segment_bytes = 8192 + 4096 * (rng() % 3);
    t.options.persist = rng() % 2 ? PersistMode::kMsync : PersistMode::kPmem;
    t.options.index_interval_bytes = 256;
    t.options.checkpoint_every_commits = 1 + static_cast<uint32_t>(rng() % 8);
    t.options.checkpoint_interval_ms = 1000000;
    t.reopen_first = rng() % 2;
    t.cut_kind = static_cast<int>(rng() % 4);
    t.cut_pick = rng();
    t.loss = static_cast<int>(rng() % 4);
    // How many durability events the truncation takes, when nothing fails.
    uint64_t events = 0;
    {
      FaultInjectionEnv env;
      Expected e;
      std::unique_ptr<PartitionLog> log;
      const Offset cut = Build(env, t, &e, &log);
      const uint64_t before = env.persist_events();
      REQUIRE_OK(log->TruncateTo(cut));
      events = env.persist_events() - before;
    }
    for (uint64_t k = 0; k <= events; ++k) {
      t.recovery_crashes.clear();
      while (t.recovery_crashes.size() < 2 && rng() % 3 == 0) {
        t.recovery_crashes.emplace_back(static_cast<int64_t>(rng() % 12), static_cast<int>(rng() % 4));
      }
      INFO("trial " << trial << " budget " << k << " of " << events << " events; cut kind " << t.cut_kind
                    << ", reopened first " << t.reopen_first << ", segment " << t.options.segment_bytes
                    << ", " << PersistModeName(t.options.persist) << ", loss " << t.loss
                    << ", recoveries cut short " << t.recovery_crashes.size());
      std::string cut_short;
      for (const auto& [budget, loss] : t.recovery_crashes) {
        cut_short += " after " + std::to_string(budget) + " events, loss " + std::to_string(loss) + ";";
      }
      INFO("recoveries cut short:" << cut_short);
      FaultInjectionEnv env;
      Expected e;
      std::unique_ptr<PartitionLog> log;
      const Offset cut = Build(env, t, &e, &log);
      const std::vector<std::string> before = e.values;
      e.TruncateTo(cut);
      const std::vector<std::string> after = e.values;
      env.SetPersistBudget(static_cast<int64_t>(k));
      const Status s = log->TruncateTo(cut);
      CHECK(s.ok() == (k == events));
      log.reset();  // its own checkpoint at close may fail: no power
      Crash(env, t.loss, rng);
      for (const auto& [budget, loss] : t.recovery_crashes) {
        env.SetPersistBudget(budget);
        (void)PartitionLog::Open(&env, "/log", t.options);
        Crash(env, loss, rng);
      }
      env.SetPersistBudget(-1);
      auto reopened = PartitionLog::Open(&env, "/log", t.options);
      REQUIRE_OK(reopened.status());
      finished_by_open += (*reopened)->recovery().truncation_finished;
      const std::vector<std::string> now = Values(**reopened);
      const bool is_after = now == after;
      REQUIRE((is_after || now == before));
      if (s.ok()) REQUIRE(is_after);
      CHECK((*reopened)->LogEndOffset() == (is_after ? cut : Offset(static_cast<int64_t>(before.size()))));
      ++runs;
      (is_after ? afters : befores) += 1;
      // The log takes appends where it ends, and nothing it cut off comes back after another crash.
      Expected more;
      more.values = now;
      more.batches.clear();
      REQUIRE_OK(AppendBatches(**reopened, more, 2, 3, 90, 1));
      reopened = Status(Errc::kAborted);
      REQUIRE_OK(env.SimulatePowerLoss(rng, FaultInjectionEnv::LossMode::kTearWords).status());
      reopened = PartitionLog::Open(&env, "/log", t.options);
      REQUIRE_OK(reopened.status());
      REQUIRE(Values(**reopened) == more.values);
    }
  }
  CHECK(befores > 0);
  CHECK(afters > 0);
  CHECK(finished_by_open > 0);
  WARN("truncation power-loss runs: " << runs << " (" << befores << " before, " << afters << " after, "
                                      << finished_by_open << " finished by the next open)");
}

// --- SIGKILL ------------------------------------------------------------------------------------

struct Msg {
  char type;       // 'A' acknowledged record, 'T' truncation started, 'D' truncation done
  int64_t offset;  // the record's offset, or the truncation's end
  uint64_t id;     // the record's id, or the first id not yet used when the truncation started
};

constexpr uint64_t kSalt = 4242;

std::string IdKey(uint64_t id) {
  std::string k("t");
  k += std::to_string(id);
  return k;
}

// The first offsets of the log's batches (what the child may truncate to).
std::vector<Offset> BatchStarts(const PartitionLog& log) {
  std::vector<Offset> out;
  Offset at = log.LogStartOffset();
  while (at < log.HighWatermark()) {
    auto r = log.Read(at, 1 << 20);
    if (!r.ok()) break;
    BatchScanner sc(r->bytes, Validation::kCrc);
    BatchView b;
    while (sc.Next(&b)) out.push_back(b.header.base_offset);
    at = r->next_offset;
  }
  return out;
}

// The child: appends and truncates until killed. Exit codes: 2 open failed, 3 a step failed.
[[noreturn]] void RunTruncator(const std::string& dir, const LogOptions& options, uint32_t round,
                               uint64_t seed, int fd) {
  ::signal(SIGSEGV, SIG_DFL);
  ::signal(SIGABRT, SIG_DFL);
  auto log = PartitionLog::Open(DefaultEnv(), dir, options);
  if (!log.ok()) std::_Exit(2);
  PartitionLog& l = **log;
  std::mt19937_64 rng(seed);
  std::vector<Offset> starts = BatchStarts(l);
  uint64_t id = uint64_t{round} * 1'000'000'000;
  auto send = [&](const Msg& m) {
    if (::write(fd, &m, sizeof m) != static_cast<ssize_t>(sizeof m)) std::_Exit(4);
  };
  while (true) {
    if (starts.empty() || rng() % 10 < 7) {
      const int n = 1 + static_cast<int>(rng() % 8);
      std::vector<std::string> keys, values;
      for (int i = 0; i < n; ++i) {
        keys.push_back(IdKey(id + i));
        values.push_back(rdmq::storage::test::ValueFor(kSalt, id + i, 400));
      }
      std::vector<RecordInput> recs(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        recs[static_cast<size_t>(i)].key = std::string_view(keys[static_cast<size_t>(i)]);
        recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
      }
      auto r = l.Append(recs);
      if (!r.ok()) std::_Exit(3);
      starts.push_back(r->base_offset);
      for (int i = 0; i < n; ++i) send(Msg{'A', r->base_offset.value() + i, id + i});
      id += static_cast<uint64_t>(n);
    } else {
      // Mostly a few batches back, sometimes far (across segments).
      const size_t back =
          1 + (rng() % 4 == 0 ? rng() % starts.size() : rng() % std::min<size_t>(starts.size(), 6));
      const Offset cut = starts[starts.size() - back];
      send(Msg{'T', cut.value(), id});
      if (!l.TruncateTo(cut).ok()) std::_Exit(3);
      starts.resize(starts.size() - back);
      send(Msg{'D', cut.value(), id});
    }
  }
}

// What the parent knows: acknowledged records, and cuts nothing below their id floor may cross.
struct KillModel {
  std::map<int64_t, uint64_t> acked;                    // offset -> id
  std::vector<std::pair<int64_t, uint64_t>> cuts;       // no record at >= first with id < second
  std::optional<std::pair<int64_t, uint64_t>> pending;  // a truncation the child started last

  void Apply(const Msg& m) {
    if (m.type == 'A') {
      acked[m.offset] = m.id;
    } else if (m.type == 'T') {
      pending = {m.offset, m.id};
    } else {
      acked.erase(acked.lower_bound(m.offset), acked.end());
      cuts.emplace_back(m.offset, m.id);
      pending.reset();
    }
  }

  // Checks the reopened log; returns "" or the first problem. Then what it holds is durable.
  std::string Check(const PartitionLog& log, uint32_t round) {
    const auto all = rdmq::storage::test::ReadAll(log);
    std::map<int64_t, uint64_t> seen;
    int64_t expect = log.LogStartOffset().value();
    for (const auto& r : all) {
      if (r.offset != expect)
        return "offset " + std::to_string(r.offset) + " follows " + std::to_string(expect - 1);
      ++expect;
      if (!r.key || r.key->size() < 2 || (*r.key)[0] != 't') return "a record without an id";
      const uint64_t id = std::stoull(r.key->substr(1));
      if (r.value != rdmq::storage::test::ValueFor(kSalt, id, 400)) return "wrong bytes in " + *r.key;
      for (const auto& [end, floor] : cuts) {
        if (r.offset >= end && id < floor) {
          return *r.key + " at offset " + std::to_string(r.offset) + " came back past the cut at " +
                 std::to_string(end);
        }
      }
      seen[r.offset] = id;
    }
    const int64_t log_end = log.LogEndOffset().value();
    bool cut_applied = false;
    if (pending && log_end == pending->first) {
      cut_applied = true;  // the truncation under way at the kill reached its commit point
      acked.erase(acked.lower_bound(pending->first), acked.end());
    }
    for (const auto& [off, id] : acked) {
      auto it = seen.find(off);
      if (it == seen.end()) return "acknowledged offset " + std::to_string(off) + " is missing";
      if (it->second != id) return "acknowledged offset " + std::to_string(off) + " holds another record";
    }
    if (cut_applied) cuts.emplace_back(pending->first, pending->second);
    pending.reset();
    acked = seen;
    // What this recovery cut off (torn appends) must not come back either.
    cuts.emplace_back(log_end, uint64_t{round + 1} * 1'000'000'000);
    return "";
  }
};

TEST_CASE("a writer killed with SIGKILL while it truncates leaves a log before or after each cut",
          "[truncate][crash][kill]") {
  std::mt19937_64 rng(::rdmq::test::TestSeed());
  const int trials = ::rdmq::test::Trials(24, 4);
  uint64_t acks = 0, truncations = 0, applied_at_kill = 0;
  for (int trial = 0; trial < trials; ++trial) {
    ::rdmq::test::TempDir dir("rdmq-truncate-kill");
    LogOptions o;
    o.segment_bytes = (rng() % 2) ? 16 << 10 : 64 << 10;
    o.persist = rng() % 3 == 0 ? PersistMode::kMsync : PersistMode::kNone;
    o.index_interval_bytes = 1024;
    o.checkpoint_every_commits = 1 + static_cast<uint32_t>(rng() % 16);
    KillModel model;
    const uint32_t rounds = 2 + static_cast<uint32_t>(rng() % 2);
    for (uint32_t round = 0; round < rounds; ++round) {
      INFO("trial " << trial << " round " << round << " segment " << o.segment_bytes << " "
                    << PersistModeName(o.persist));
      int fds[2];
      REQUIRE(::pipe(fds) == 0);
      const uint64_t seed = rng();
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(fds[0]);
        RunTruncator(dir.str(), o, round, seed, fds[1]);
      }
      ::close(fds[1]);
      rdmq::storage::test::PipeCollector<Msg> collector(fds[0]);
      const uint64_t give_up = MonoNanos() + 5'000'000'000ULL;
      while (collector.count() == 0 && MonoNanos() < give_up)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      std::this_thread::sleep_for(std::chrono::nanoseconds(rng() % 30'000'000));
      ::kill(pid, SIGKILL);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      const std::vector<Msg> msgs = collector.Join();
      ::close(fds[0]);
      INFO("child status " << status);
      REQUIRE(WIFSIGNALED(status));
      REQUIRE(WTERMSIG(status) == SIGKILL);
      for (const Msg& m : msgs) {
        model.Apply(m);
        acks += m.type == 'A';
        truncations += m.type == 'D';
      }
      const bool was_pending = model.pending.has_value();
      auto log = PartitionLog::Open(DefaultEnv(), dir.str(), o);
      REQUIRE_OK(log.status());
      applied_at_kill += was_pending && (*log)->LogEndOffset().value() == model.pending->first;
      const std::string problem = model.Check(**log, round);
      INFO(problem);
      REQUIRE(problem.empty());
    }
  }
  CHECK(acks > 0);
  CHECK(truncations > 0);
  WARN("truncation SIGKILL trials: " << trials << ", acknowledged records " << acks << ", truncations "
                                     << truncations << ", killed inside one and found applied "
                                     << applied_at_kill);
}

}  // namespace
