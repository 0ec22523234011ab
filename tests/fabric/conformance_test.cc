// The fabric conformance suite: every provider must pass it (DESIGN.md section 3). Built into
// one binary per provider; kProvider says which.
#include "conformance.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace rdmq::fabric::test;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kAll = kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic;

std::unique_ptr<Region> Alloc(Fabric& f, size_t n, uint32_t access = kAll) {
  auto r = f.Allocate(n, access);
  REQUIRE_OK(r);
  return std::move(r).value();
}

bool IsError(const Completion& c, FabricErrc e) { return c.status == make_error_code(e); }
bool IsCondition(const Completion& c, Errc e) { return Status(c.status).is(e); }

// Posts `wrs`, polling `cq` into `done` whenever the send queue is full.
void PostRetrying(Endpoint& ep, CompletionQueue& cq, std::span<const WorkRequest> wrs,
                  std::vector<Completion>* done) {
  const uint64_t deadline = MonoNanos() + 30'000'000'000ULL;
  for (;;) {
    Status s = ep.Post(wrs);
    if (s.ok()) return;
    INFO("post: " << s.ToString());
    REQUIRE(s.is(FabricErrc::kQueueFull));
    REQUIRE(MonoNanos() < deadline);
    auto got = PollCompletions(cq, 1, 100ms);
    done->insert(done->end(), got.begin(), got.end());
  }
}

uint64_t LoadWord(const Region& r, size_t off) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(r.data() + off))
      .load(std::memory_order_acquire);
}

bool Unchanged(const Region& r, const std::vector<std::byte>& snapshot) {
  return std::memcmp(r.data(), snapshot.data(), snapshot.size()) == 0;
}

std::vector<std::byte> Snapshot(const Region& r) {
  return std::vector<std::byte>(r.data(), r.data() + r.size());
}

void* MapAnonymousForTest(size_t n) {
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  return p;
}

}  // namespace

TEST_CASE("conformance: WRITE and READ round trips from 1 B to 4 MiB, data checked") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  constexpr size_t kRegion = 8u << 20;
  auto target = Alloc(*p.a.fabric, kRegion);
  auto local = Alloc(*p.b.fabric, kRegion, kLocalWrite);
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  CHECK(remote->descriptor() == target->Descriptor());
  std::mt19937_64 rng(rdmq::test::TestSeed());
  const size_t sizes[] = {
      1, 2, 7, 8, 63, 64, 65, 4095, 4096, 4097, 65536, 65537, (1u << 20), (1u << 20) + 3, 4u << 20};
  uint64_t tag = 1;
  for (size_t n : sizes) {
    INFO("size " << n);
    const uint64_t off = rng() % (kRegion - n + 1);
    for (size_t i = 0; i < n; ++i) local->data()[i] = static_cast<std::byte>(rng());
    Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, n, remote.get(), off, tag++));
    REQUIRE(!c.status);
    REQUIRE(std::memcmp(target->data() + off, local->data(), n) == 0);
    std::memset(local->data() + (4u << 20), 0, n);
    c = Run(*p.eb, *p.b.scq, MakeRead(*local, 4u << 20, n, remote.get(), off, tag++));
    REQUIRE(!c.status);
    CHECK(c.byte_len == n);
    REQUIRE(std::memcmp(local->data() + (4u << 20), local->data(), n) == 0);
  }
  // The owner's own stores are what a READ returns.
  std::memset(target->data() + 100, 0x42, 50);
  Completion c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, 50, remote.get(), 100, tag++));
  REQUIRE(!c.status);
  CHECK(std::all_of(local->data(), local->data() + 50, [](std::byte x) { return x == std::byte{0x42}; }));
  // A zero-length WRITE at the very end of the region is in bounds.
  c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 0, remote.get(), kRegion, tag++));
  CHECK(!c.status);
}

TEST_CASE("conformance: a later WRITE never becomes visible before an earlier one") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p(64);
  constexpr size_t kSlot = 4096;
  const size_t slots = static_cast<size_t>(rdmq::test::Trials(512, 32));
  auto target = Alloc(*p.a.fabric, 4096 + slots * kSlot);
  auto local = Alloc(*p.b.fabric, slots * kSlot + slots * 8, kLocalWrite);
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  // Slot k holds the word k+1 everywhere; header word k+1 announces it.
  for (size_t k = 0; k < slots; ++k) {
    auto* w = reinterpret_cast<uint64_t*>(local->data() + k * kSlot);
    std::fill(w, w + kSlot / 8, k + 1);
    const uint64_t h = k + 1;
    std::memcpy(local->data() + slots * kSlot + k * 8, &h, 8);
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> violations{0}, observed{0};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t h = LoadWord(*target, 0);
      if (h == last) continue;
      if (h < last) ++violations;  // the header went backwards
      last = h;
      observed.fetch_add(1, std::memory_order_relaxed);
      // Every slot announced so far must be complete: check the newest.
      const auto* w = reinterpret_cast<const uint64_t*>(target->data() + 4096 + (h - 1) * kSlot);
      for (size_t i = 0; i < kSlot / 8; ++i) {
        if (std::atomic_ref<const uint64_t>(w[i]).load(std::memory_order_relaxed) != h) {
          ++violations;
          break;
        }
      }
      if (h == slots) break;
    }
  });
  std::vector<Completion> done;
  size_t signalled = 0;
  for (size_t k = 0; k < slots; ++k) {
    const bool sig = (k % 16 == 15) || k + 1 == slots;
    WorkRequest wrs[2] = {MakeWrite(*local, k * kSlot, kSlot, remote.get(), 4096 + k * kSlot, 2 * k, false),
                          MakeWrite(*local, slots * kSlot + k * 8, 8, remote.get(), 0, 2 * k + 1, sig)};
    PostRetrying(*p.eb, *p.b.scq, wrs, &done);
    signalled += sig;
  }
  auto rest = PollCompletions(*p.b.scq, signalled - done.size(), 30s);
  done.insert(done.end(), rest.begin(), rest.end());
  CHECK(done.size() == signalled);
  for (const Completion& c : done) CHECK(!c.status);
  reader.join();
  stop = true;
  CHECK(violations.load() == 0);
  CHECK(observed.load() >= 1);
  CHECK(LoadWord(*target, 0) == slots);
}

TEST_CASE("conformance: data is visible before the WRITE_WITH_IMM that announces it") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p(64, 256);
  constexpr size_t kSlot = 8192;
  const size_t n = static_cast<size_t>(rdmq::test::Trials(200, 20));
  auto target = Alloc(*p.a.fabric, n * kSlot);
  auto local = Alloc(*p.b.fabric, n * kSlot, kLocalWrite);
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  std::vector<RecvRequest> rrs(n);
  for (size_t i = 0; i < n; ++i) rrs[i].tag = 1000 + i;
  REQUIRE_OK(p.ea->PostRecv(rrs));
  for (size_t k = 0; k < n; ++k) std::memset(local->data() + k * kSlot, static_cast<int>(k * 7 + 1), kSlot);

  std::atomic<size_t> bad{0}, received{0};
  std::thread target_side([&] {
    size_t k = 0;
    const uint64_t deadline = MonoNanos() + 60'000'000'000ULL;
    Completion buf[16];
    while (k < n && MonoNanos() < deadline) {
      const size_t m = p.a.rcq->Poll(buf);
      if (m == 0) {
        (void)p.a.rcq->Wait(100ms);
        continue;
      }
      for (size_t i = 0; i < m; ++i, ++k) {
        const Completion& c = buf[i];
        // Check the announced slot at once, before anything else.
        const std::byte want = static_cast<std::byte>(k * 7 + 1);
        const std::byte* s = target->data() + k * kSlot;
        if (!std::all_of(s, s + kSlot, [&](std::byte x) { return x == want; })) ++bad;
        if (c.status || !c.has_imm || c.imm != k || c.opcode != Opcode::kRecv || c.tag != 1000 + k ||
            c.endpoint_id != p.ea->id()) {
          ++bad;
        }
        if (c.byte_len != ((k % 2 == 0) ? kSlot : 0)) ++bad;
      }
      received = k;
    }
  });
  std::vector<Completion> done;
  size_t signalled = 0;
  for (size_t k = 0; k < n; ++k) {
    const bool sig = k % 8 == 7 || k + 1 == n;
    if (k % 2 == 0) {  // the data travels in the WRITE_WITH_IMM itself
      WorkRequest wr = MakeWrite(*local, k * kSlot, kSlot, remote.get(), k * kSlot, k, sig);
      wr.opcode = Opcode::kWriteImm;
      wr.imm = static_cast<uint32_t>(k);
      PostRetrying(*p.eb, *p.b.scq, std::span(&wr, 1), &done);
    } else {  // a WRITE, then an empty WRITE_WITH_IMM announcing it
      WorkRequest wrs[2] = {MakeWrite(*local, k * kSlot, kSlot, remote.get(), k * kSlot, k, false),
                            MakeWrite(*local, 0, 0, remote.get(), 0, k, sig)};
      wrs[1].opcode = Opcode::kWriteImm;
      wrs[1].imm = static_cast<uint32_t>(k);
      PostRetrying(*p.eb, *p.b.scq, wrs, &done);
    }
    signalled += sig;
  }
  auto rest = PollCompletions(*p.b.scq, signalled - done.size(), 30s);
  done.insert(done.end(), rest.begin(), rest.end());
  target_side.join();
  CHECK(done.size() == signalled);
  CHECK(received.load() == n);
  CHECK(bad.load() == 0);
}

TEST_CASE("conformance: SEND and RECV deliver messages in order") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  auto local = Alloc(*p.b.fabric, 1 << 20, kLocalWrite);
  auto inbox = Alloc(*p.a.fabric, 1 << 20, kLocalWrite);
  const size_t sizes[] = {0, 1, 100, 4096, 9000, kMaxSendSize};
  const size_t count = std::size(sizes);
  std::vector<RecvRequest> rrs(count);
  for (size_t i = 0; i < count; ++i) {
    rrs[i].tag = 50 + i;
    rrs[i].buffer = {inbox->data() + i * kMaxSendSize, kMaxSendSize, inbox.get()};
  }
  REQUIRE_OK(p.ea->PostRecv(rrs));
  std::mt19937_64 rng(rdmq::test::TestSeed());
  std::vector<WorkRequest> sends;
  for (size_t i = 0; i < count; ++i) {
    for (size_t j = 0; j < sizes[i]; ++j) local->data()[i * kMaxSendSize + j] = static_cast<std::byte>(rng());
    WorkRequest wr;
    wr.opcode = Opcode::kSend;
    wr.tag = i;
    wr.local = {local->data() + i * kMaxSendSize, sizes[i], local.get()};
    wr.signaled = true;
    sends.push_back(wr);
  }
  REQUIRE_OK(p.eb->Post(sends));
  auto sent = PollCompletions(*p.b.scq, count, 20s);
  REQUIRE(sent.size() == count);
  for (size_t i = 0; i < count; ++i) {
    CHECK(!sent[i].status);
    CHECK(sent[i].tag == i);
    CHECK(sent[i].opcode == Opcode::kSend);
  }
  auto got = PollCompletions(*p.a.rcq, count, 20s);
  REQUIRE(got.size() == count);
  for (size_t i = 0; i < count; ++i) {
    INFO("message " << i);
    CHECK(!got[i].status);
    CHECK(got[i].tag == 50 + i);
    CHECK(got[i].opcode == Opcode::kRecv);
    CHECK(!got[i].has_imm);
    CHECK(got[i].byte_len == sizes[i]);
    CHECK(std::memcmp(inbox->data() + i * kMaxSendSize, local->data() + i * kMaxSendSize, sizes[i]) == 0);
  }
  // Too long for any receive: refused at post time, nothing posted.
  WorkRequest big;
  big.opcode = Opcode::kSend;
  big.local = {local->data(), kMaxSendSize + 1, local.get()};
  CHECK(p.eb->Post(std::span(&big, 1)).is(FabricErrc::kTooLong));
  // A SEND that waits for its receive: posted before the receive exists.
  WorkRequest early;
  early.opcode = Opcode::kSend;
  early.tag = 77;
  early.local = {local->data(), 33, local.get()};
  REQUIRE_OK(p.eb->Post(std::span(&early, 1)));
  std::this_thread::sleep_for(20ms);
  RecvRequest late{88, {inbox->data(), 64, inbox.get()}};
  REQUIRE_OK(p.ea->PostRecv(std::span(&late, 1)));
  auto arrived = PollCompletions(*p.a.rcq, 1, 20s);
  REQUIRE(arrived.size() == 1);
  CHECK(!arrived[0].status);
  CHECK(arrived[0].tag == 88);
  CHECK(arrived[0].byte_len == 33);
  CHECK(PollCompletions(*p.b.scq, 1, 20s).size() == 1);
}

TEST_CASE("conformance: a SEND longer than the receive buffer fails with kTooLong") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  auto local = Alloc(*p.b.fabric, 4096, kLocalWrite);
  auto inbox = Alloc(*p.a.fabric, 4096, kLocalWrite);
  std::memset(inbox->data(), 0x33, 4096);
  RecvRequest rr{5, {inbox->data(), 10, inbox.get()}};
  REQUIRE_OK(p.ea->PostRecv(std::span(&rr, 1)));
  WorkRequest wr;
  wr.opcode = Opcode::kSend;
  wr.local = {local->data(), 100, local.get()};
  REQUIRE_OK(p.eb->Post(std::span(&wr, 1)));
  auto got = PollCompletions(*p.a.rcq, 1, 20s);
  REQUIRE(got.size() == 1);
  CHECK(got[0].tag == 5);
  INFO(Status(got[0].status));
  CHECK(Status(got[0].status).is(Errc::kInvalidArgument));
  // The too-small buffer was not written beyond its length (nor at all).
  CHECK(std::all_of(inbox->data() + 10, inbox->data() + 4096,
                    [](std::byte x) { return x == std::byte{0x33}; }));
}

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
    pids.push_back(SpawnPeer({"atomics", std::string(ProviderName(kProvider)), p.a.fabric->address(),
                              std::to_string(fadds), std::to_string(cas)}));
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

TEST_CASE("conformance: every posted operation completes exactly once, signalled or not") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p(32);
  const size_t ops = static_cast<size_t>(rdmq::test::Trials(3000, 200));
  auto target = Alloc(*p.a.fabric, 64 + ops * 8 + 4096);
  auto local = Alloc(*p.b.fabric, ops * 16 + 4096, kLocalWrite);
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  // A read-only area the READs copy.
  const size_t ro_area = 64 + ops * 8;
  for (size_t i = 0; i < 4096; ++i) target->data()[ro_area + i] = static_cast<std::byte>(i * 13);
  std::mt19937_64 rng(rdmq::test::TestSeed());
  std::vector<WorkRequest> all;
  std::set<uint64_t> signalled;
  size_t fadds = 0;
  for (size_t i = 0; i < ops; ++i) {
    const uint64_t tag = 1'000'000 + i;
    const bool sig = (rng() % 10 < 3) || i + 1 == ops;
    WorkRequest wr;
    switch (rng() % 3) {
      case 0: {  // WRITE this op's tag to its own slot
        std::memcpy(local->data() + i * 16, &tag, 8);
        wr = MakeWrite(*local, i * 16, 8, remote.get(), 64 + i * 8, tag, sig);
        break;
      }
      case 1:
        wr = MakeAtomic(Opcode::kFetchAdd, *local, i * 16, remote.get(), 0, 1, 0, tag);
        wr.signaled = sig;
        ++fadds;
        break;
      default:
        wr = MakeRead(*local, i * 16, 8, remote.get(), ro_area + (i % 512) * 8, tag, sig);
        break;
    }
    all.push_back(wr);
    if (sig) signalled.insert(tag);
  }
  std::vector<Completion> done;
  for (size_t i = 0; i < ops;) {
    const size_t batch = std::min<size_t>(1 + rng() % 16, ops - i);
    PostRetrying(*p.eb, *p.b.scq, std::span(all).subspan(i, batch), &done);
    i += batch;
  }
  auto rest = PollCompletions(*p.b.scq, signalled.size() - done.size(), 30s);
  done.insert(done.end(), rest.begin(), rest.end());
  // Nothing more arrives.
  auto extra = PollCompletions(*p.b.scq, 1, 50ms);
  CHECK(extra.empty());
  std::map<uint64_t, int> seen;
  for (const Completion& c : done) {
    CHECK(!c.status);
    ++seen[c.tag];
  }
  CHECK(seen.size() == signalled.size());
  for (auto [tag, n] : seen) {
    INFO("tag " << tag);
    CHECK(n == 1);
    CHECK(signalled.count(tag) == 1);
  }
  // Every operation had its effect, signalled or not.
  CHECK(LoadWord(*target, 0) == fadds);
  std::set<uint64_t> fadd_olds;
  for (size_t i = 0; i < ops; ++i) {
    const WorkRequest& wr = all[i];
    uint64_t v;
    if (wr.opcode == Opcode::kWrite) {
      std::memcpy(&v, target->data() + 64 + i * 8, 8);
      CHECK(v == wr.tag);
    } else if (wr.opcode == Opcode::kRead) {
      CHECK(std::memcmp(local->data() + i * 16, target->data() + ro_area + (i % 512) * 8, 8) == 0);
    } else {
      std::memcpy(&v, local->data() + i * 16, 8);
      fadd_olds.insert(v);
    }
  }
  CHECK(fadd_olds.size() == fadds);
}

TEST_CASE("conformance: bad input fails with a clear error completion and changes nothing") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  constexpr size_t kSize = 64 * 1024;
  auto target = Alloc(*p.a.fabric, kSize);
  std::memset(target->data(), 0x11, kSize);
  const auto snapshot = Snapshot(*target);
  auto local = Alloc(*p.b.fabric, kSize, kLocalWrite);
  std::memset(local->data(), 0xee, kSize);
  const RegionDescriptor rw = target->Descriptor();

  SECTION("wrong key") {
    RegionDescriptor d = rw;
    d.key ^= 0x5a5a5a5a;
    auto r = TryShareAndAttach(*p.ea, *p.eb, d);
    if (!r.ok()) {
      INFO(r.status());
      CHECK(r.status().is(FabricErrc::kBadKey));
    } else {
      Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, r->get(), 0, 1));
      INFO(Status(c.status));
      CHECK(IsCondition(c, Errc::kPermissionDenied));
    }
  }
  SECTION("address outside the region") {
    auto remote = ShareAndAttach(*p.ea, *p.eb, rw);
    Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 8, remote.get(), kSize - 4, 1));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 1, remote.get(), kSize, 2));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, 16, remote.get(), kSize + 4096, 3));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    c = Run(*p.eb, *p.b.scq, MakeAtomic(Opcode::kFetchAdd, *local, 0, remote.get(), kSize, 1, 0, 4));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 16, remote.get(), ~0ULL - 4, 5));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    // The endpoint still works after a refused operation (verbs: refused before the wire).
    c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, 16, remote.get(), 0, 6));
    CHECK(!c.status);
  }
  SECTION("forged descriptor claiming a longer region") {
    RegionDescriptor d = rw;
    d.length = kSize * 4;
    auto r = TryShareAndAttach(*p.ea, *p.eb, d);
    if (r.ok()) {
      Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, r->get(), kSize + 64, 1));
      INFO(Status(c.status));
      CHECK((IsError(c, FabricErrc::kOutOfBounds) || IsCondition(c, Errc::kPermissionDenied)));
    } else {
      CHECK(!r.status().ok());
    }
  }
  SECTION("write to a read-only grant") {
    auto ro = target->Descriptor(kRemoteRead);
    REQUIRE_OK(ro);
    auto remote = ShareAndAttach(*p.ea, *p.eb, *ro);
    Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, remote.get(), 0, 1));
    CHECK(IsError(c, FabricErrc::kAccessDenied));
    c = Run(*p.eb, *p.b.scq, MakeAtomic(Opcode::kFetchAdd, *local, 0, remote.get(), 0, 1, 0, 2));
    CHECK(IsError(c, FabricErrc::kAccessDenied));
    c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, 64, remote.get(), 0, 3));
    CHECK(!c.status);
    CHECK(std::all_of(local->data(), local->data() + 64, [](std::byte x) { return x == std::byte{0x11}; }));
    // Rights beyond the registration cannot be asked for.
    auto small = p.a.fabric->Allocate(4096, kRemoteRead);
    REQUIRE_OK(small);
    CHECK((*small)->Descriptor(kRemoteWrite).status().is(FabricErrc::kAccessDenied));
  }
  SECTION("forged descriptor claiming write rights for a read-only key") {
    auto ro = target->Descriptor(kRemoteRead);
    REQUIRE_OK(ro);
    RegionDescriptor d = *ro;
    d.access |= kRemoteWrite | kRemoteAtomic;
    auto r = TryShareAndAttach(*p.ea, *p.eb, d);
    if (r.ok()) {
      Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, r->get(), 0, 1));
      INFO(Status(c.status));
      CHECK(IsCondition(c, Errc::kPermissionDenied));
    } else {
      CHECK(r.status().is(Errc::kPermissionDenied));
    }
  }
  SECTION("unaligned atomic") {
    auto remote = ShareAndAttach(*p.ea, *p.eb, rw);
    Completion c = Run(*p.eb, *p.b.scq, MakeAtomic(Opcode::kFetchAdd, *local, 0, remote.get(), 4, 1, 0, 1));
    CHECK(IsError(c, FabricErrc::kUnaligned));
    c = Run(*p.eb, *p.b.scq, MakeAtomic(Opcode::kCompareSwap, *local, 0, remote.get(), 13, 0, 1, 2));
    CHECK(IsError(c, FabricErrc::kUnaligned));
  }
  SECTION("malformed work requests are refused at post time") {
    auto remote = ShareAndAttach(*p.ea, *p.eb, rw);
    WorkRequest wr = MakeWrite(*local, 0, 8, nullptr, 0, 1);
    CHECK(p.eb->Post(std::span(&wr, 1)).is(Errc::kInvalidArgument));
    wr = MakeWrite(*local, 0, 8, remote.get(), 0, 1);
    wr.opcode = static_cast<Opcode>(42);
    CHECK(p.eb->Post(std::span(&wr, 1)).is(Errc::kInvalidArgument));
    wr = MakeAtomic(Opcode::kFetchAdd, *local, 0, remote.get(), 0, 1, 0, 1);
    wr.local.length = 4;
    CHECK(p.eb->Post(std::span(&wr, 1)).is(Errc::kInvalidArgument));
    // A batch with one bad request posts nothing.
    WorkRequest batch[2] = {MakeWrite(*local, 0, 8, remote.get(), 0, 1),
                            MakeWrite(*local, 0, 8, nullptr, 0, 2)};
    CHECK(p.eb->Post(batch).is(Errc::kInvalidArgument));
    CHECK(PollCompletions(*p.b.scq, 1, 50ms).empty());
    // A descriptor of another provider.
    RegionDescriptor other = rw;
    other.provider = kProvider == Provider::kTcp ? Provider::kShm : Provider::kTcp;
    other.node.clear();
    CHECK(p.eb->Attach(other).status().is(FabricErrc::kWrongProvider));
  }
  CHECK(Unchanged(*target, snapshot));
}

TEST_CASE("conformance: grants are scoped to their window and revocable") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  constexpr size_t kSize = 64 * 1024;
  auto target = Alloc(*p.a.fabric, kSize);
  std::memset(target->data(), 0x22, kSize);
  auto local = Alloc(*p.b.fabric, kSize, kLocalWrite);
  std::memset(local->data(), 0x99, kSize);
  auto grant = p.ea->GrantAccess(*target, 4096, 8192, kRemoteRead | kRemoteWrite);
  REQUIRE_OK(grant);
  const RegionDescriptor gd = (*grant)->descriptor();
  CHECK(gd.base == reinterpret_cast<uint64_t>(target->data()) + 4096);
  CHECK(gd.length == 8192);
  CHECK(gd.access == (kRemoteRead | kRemoteWrite));
  auto remote = ShareAndAttach(*p.ea, *p.eb, gd);
  Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 100, remote.get(), 0, 1));
  REQUIRE(!c.status);
  CHECK(std::all_of(target->data() + 4096, target->data() + 4196,
                    [](std::byte x) { return x == std::byte{0x99}; }));
  std::memset(target->data() + 4096, 0x22, 100);
  const auto snapshot = Snapshot(*target);

  SECTION("a write outside the granted window fails") {
    c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 100, remote.get(), 8192 - 50, 2));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    c = Run(*p.eb, *p.b.scq, MakeAtomic(Opcode::kFetchAdd, *local, 0, remote.get(), 0, 1, 0, 3));
    CHECK(IsError(c, FabricErrc::kAccessDenied));
  }
  SECTION("a forged window is enforced by the owner") {
    RegionDescriptor d = gd;
    d.length = kSize;
    auto r = TryShareAndAttach(*p.ea, *p.eb, d);
    if (r.ok()) {
      c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, r->get(), 8192, 2));
      INFO(Status(c.status));
      CHECK((IsError(c, FabricErrc::kOutOfBounds) || IsCondition(c, Errc::kPermissionDenied)));
    }
  }
  SECTION("after Revoke the old key fails") {
    REQUIRE_OK((*grant)->Revoke());
    c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, remote.get(), 0, 2));
    INFO(Status(c.status));
    CHECK(IsCondition(c, Errc::kPermissionDenied));
  }
  SECTION("after Revoke the old descriptor cannot be attached or used") {
    REQUIRE_OK((*grant)->Revoke());
    auto r = TryShareAndAttach(*p.ea, *p.eb, gd);
    if (r.ok()) {
      c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 64, r->get(), 0, 2));
      INFO(Status(c.status));
      CHECK(IsCondition(c, Errc::kPermissionDenied));
    } else {
      INFO(r.status());
      CHECK(r.status().is(Errc::kPermissionDenied));
    }
  }
  SECTION("a grant works only on the connection it was made for") {
    auto [x, y] = p.ConnectMore(p.a.scq.get(), p.a.rcq.get(), p.b.scq.get(), p.b.rcq.get());
    auto r = TryShareAndAttach(*x, *y, gd);
    if (r.ok()) {
      c = Run(*y, *p.b.scq, MakeWrite(*local, 0, 64, r->get(), 0, 2));
      INFO(Status(c.status));
      CHECK(IsCondition(c, Errc::kPermissionDenied));
    } else {
      INFO(r.status());
      CHECK(r.status().is(Errc::kPermissionDenied));
    }
  }
  CHECK(Unchanged(*target, snapshot));
}

TEST_CASE("conformance: a peer that dies mid-operation gives clean errors, each operation once") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  constexpr size_t kChunk = 64 * 1024;
  const pid_t pid =
      SpawnPeer({"target", std::string(ProviderName(kProvider)), p.a.fabric->address(), "1048576"});
  REQUIRE(pid > 0);
  auto epr = p.a.fabric->Accept(p.OptionsA(), 30s);
  REQUIRE_OK(epr);
  auto ep = std::move(epr).value();
  auto m = ep->RecvControl(30s);
  REQUIRE_OK(m);
  auto d = RegionDescriptor::Decode(coding::AsBytes(*m));
  REQUIRE_OK(d);
  auto remote = ep->Attach(*d);
  REQUIRE_OK(remote);
  auto local = Alloc(*p.a.fabric, 16 * kChunk, kLocalWrite);
  for (size_t i = 0; i < 16; ++i) std::memset(local->data() + i * kChunk, static_cast<int>(i + 1), kChunk);
  std::vector<RecvRequest> rrs(4);
  for (size_t i = 0; i < rrs.size(); ++i) rrs[i].tag = 9000 + i;
  REQUIRE_OK(ep->PostRecv(rrs));

  std::map<uint64_t, int> completed;
  std::vector<Completion> errors;
  uint64_t posted = 0, ok = 0;
  bool killed = false, post_refused = false;
  const uint64_t deadline = MonoNanos() + 30'000'000'000ULL;
  while (MonoNanos() < deadline && !post_refused) {
    while (posted - (ok + errors.size()) < 8) {
      WorkRequest wr =
          MakeWrite(*local, (posted % 16) * kChunk, kChunk, remote->get(), (posted % 16) * kChunk, posted);
      Status s = ep->Post(std::span(&wr, 1));
      if (!s.ok()) {
        INFO(s);
        CHECK(s.is(Errc::kUnavailable));
        post_refused = true;
        break;
      }
      ++posted;
    }
    for (const Completion& c : PollCompletions(*p.a.scq, 1, 100ms)) {
      ++completed[c.tag];
      if (c.status) {
        errors.push_back(c);
      } else {
        ++ok;
      }
    }
    if (!killed && ok >= 20) {
      REQUIRE(::kill(pid, SIGKILL) == 0);
      killed = true;
    }
    if (!errors.empty()) break;
  }
  REQUIRE(killed);
  // Whatever is still outstanding completes, with success or a clean error.
  const size_t outstanding = posted - (ok + errors.size());
  for (const Completion& c : PollCompletions(*p.a.scq, outstanding, 30s)) {
    ++completed[c.tag];
    if (c.status) errors.push_back(c);
  }
  CHECK(completed.size() == posted);
  for (auto [tag, n] : completed) CHECK(n == 1);
  CHECK((post_refused || !errors.empty()));
  for (const Completion& c : errors) {
    INFO(Status(c.status));
    CHECK(IsCondition(c, Errc::kUnavailable));
  }
  // The connection is known to be gone; later posts are refused; receives are flushed.
  const uint64_t gone_deadline = MonoNanos() + 10'000'000'000ULL;
  while (ep->connected() && MonoNanos() < gone_deadline) std::this_thread::sleep_for(5ms);
  CHECK(!ep->connected());
  WorkRequest wr = MakeWrite(*local, 0, 8, remote->get(), 0, 99999);
  const Status s = ep->Post(std::span(&wr, 1));
  if (s.ok()) {
    auto c = PollCompletions(*p.a.scq, 1, 10s);
    REQUIRE(c.size() == 1);
    CHECK(IsCondition(c[0], Errc::kUnavailable));
  } else {
    CHECK(s.is(Errc::kUnavailable));
  }
  auto flushed = PollCompletions(*p.a.rcq, rrs.size(), 10s);
  CHECK(flushed.size() == rrs.size());
  for (const Completion& c : flushed) CHECK(IsCondition(c, Errc::kUnavailable));
  CHECK(WaitChild(pid, 10s) == 128 + SIGKILL);
}

TEST_CASE("conformance: an initiator killed mid-WRITE leaves the target whole or untouched") {
  FABRIC_CONFORMANCE_PRELUDE();
  if (kProvider == Provider::kVerbs) {
    // The RNIC may have placed part of a multi-packet WRITE before the requester died.
    RDMQ_SKIP("verbs gives no all-or-nothing guarantee for a WRITE cut short by the requester's death");
  }
  Pair p;
  constexpr size_t kSize = 4u << 20;
  auto target = Alloc(*p.a.fabric, kSize);
  const pid_t pid = SpawnPeer(
      {"writer", std::string(ProviderName(kProvider)), p.a.fabric->address(), std::to_string(kSize), "171"});
  REQUIRE(pid > 0);
  auto epr = p.a.fabric->Accept(p.OptionsA(), 30s);
  REQUIRE_OK(epr);
  auto ep = std::move(epr).value();
  const std::string d = target->Descriptor().Encode();
  REQUIRE_OK(ep->SendControl(coding::AsBytes(d)));
  CHECK(WaitChild(pid, 30s) == 128 + SIGKILL);
  const uint64_t deadline = MonoNanos() + 10'000'000'000ULL;
  while (ep->connected() && MonoNanos() < deadline) std::this_thread::sleep_for(5ms);
  CHECK(!ep->connected());
  const bool untouched =
      std::all_of(target->data(), target->data() + kSize, [](std::byte x) { return x == std::byte{0}; });
  const bool whole =
      std::all_of(target->data(), target->data() + kSize, [](std::byte x) { return x == std::byte{171}; });
  CHECK((untouched || whole));
}

TEST_CASE("conformance: control messages, connection errors and timeouts") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  std::string big(1u << 20, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  REQUIRE_OK(p.eb->SendControl(coding::AsBytes(std::string("hello"))));
  REQUIRE_OK(p.eb->SendControl(coding::AsBytes(big)));
  REQUIRE_OK(p.ea->SendControl(coding::AsBytes(std::string("back"))));
  auto m1 = p.ea->RecvControl(10s);
  REQUIRE_OK(m1);
  CHECK(*m1 == "hello");
  auto m2 = p.ea->RecvControl(10s);
  REQUIRE_OK(m2);
  CHECK(*m2 == big);
  auto m3 = p.eb->RecvControl(10s);
  REQUIRE_OK(m3);
  CHECK(*m3 == "back");
  CHECK(p.eb->SendControl(coding::AsBytes(big + "y")).is(Errc::kInvalidArgument));
  CHECK(p.ea->RecvControl(30ms).status().is(Errc::kTimeout));
  CHECK(p.a.fabric->Accept(p.OptionsA(), 30ms).status().is(Errc::kTimeout));
  CHECK(p.a.fabric->address().rfind(
            std::string(ProviderName(kProvider) == "shm" ? "unix" : ProviderName(kProvider)) + ":", 0) == 0);
  CHECK(p.b.fabric->address().empty());
  // Connecting to nobody fails with a clear error.
  EndpointOptions o = p.OptionsB();
  o.connect_timeout = 2s;
  const std::string nowhere = kProvider == Provider::kShm   ? "unix:" + p.dir.str() + "/nobody.sock"
                              : kProvider == Provider::kTcp ? "tcp:127.0.0.1:1"
                                                            : "verbs:127.0.0.1:1";
  auto bad = p.b.fabric->Connect(nowhere, o);
  CHECK(!bad.ok());
  CHECK(p.b.fabric->Connect("bogus:thing", o).status().is(FabricErrc::kWrongProvider));
  // An endpoint needs a send completion queue.
  EndpointOptions none;
  CHECK(p.b.fabric->Connect(p.a.fabric->address(), none).status().is(Errc::kInvalidArgument));
}

TEST_CASE("conformance: waiting on words and completion queues sleeps and wakes") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  auto target = Alloc(*p.a.fabric, 4096);
  auto* word = reinterpret_cast<uint64_t*>(target->data() + 64);
  CHECK(target->WaitWhileEqual(64, 0, 20ms).is(Errc::kTimeout));
  CHECK(target->WaitWhileEqual(64, 5, 20ms).ok());  // differs already
  CHECK(target->WaitWhileEqual(3, 0, 20ms).is(FabricErrc::kUnaligned));
  std::thread waker([&] {
    std::this_thread::sleep_for(20ms);
    std::atomic_ref<uint64_t>(*word).store(7);
    target->Wake(64);
  });
  const uint64_t t0 = MonoNanos();
  Status s;
  while ((s = target->WaitWhileEqual(64, 0, 10s)).ok() && std::atomic_ref<uint64_t>(*word).load() == 0) {
  }
  waker.join();
  CHECK(s.ok());
  CHECK(MonoNanos() - t0 < 9'000'000'000ULL);
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  if (kProvider == Provider::kShm) {
    REQUIRE(remote->mapped() != nullptr);
    std::thread owner([&] {
      std::this_thread::sleep_for(20ms);
      std::atomic_ref<uint64_t>(*word).store(8);
      target->Wake(64);
    });
    Status rs;
    while (
        (rs = remote->WaitWhileEqual(64, 7, 10s)).ok() &&
        std::atomic_ref<const uint64_t>(*reinterpret_cast<const uint64_t*>(remote->mapped() + 64)).load() ==
            7) {
    }
    owner.join();
    CHECK(rs.ok());
    CHECK(remote->Wake(64).ok());
  } else {
    CHECK(remote->mapped() == nullptr);
    CHECK(remote->WaitWhileEqual(64, 7, 10ms).is(Errc::kUnsupported));
    CHECK(remote->Wake(64).is(Errc::kUnsupported));
  }
  // A completion queue with nothing in it times out; a SEND from the peer wakes a sleeper.
  CHECK(p.a.rcq->Wait(20ms).is(Errc::kTimeout));
  auto inbox = Alloc(*p.a.fabric, 4096, kLocalWrite);
  RecvRequest rr{1, {inbox->data(), 64, inbox.get()}};
  REQUIRE_OK(p.ea->PostRecv(std::span(&rr, 1)));
  std::thread sender([&] {
    std::this_thread::sleep_for(30ms);
    auto local = p.b.fabric->Allocate(4096, kLocalWrite);
    WorkRequest wr;
    wr.opcode = Opcode::kSend;
    wr.local = {(*local)->data(), 16, local->get()};
    wr.signaled = true;
    (void)p.eb->Post(std::span(&wr, 1));
    (void)PollCompletions(*p.b.scq, 1, 10s);
  });
  const Status ws = p.a.rcq->Wait(10s);
  sender.join();
  CHECK(ws.ok());
  CHECK(PollCompletions(*p.a.rcq, 1, 10s).size() == 1);
}

TEST_CASE("conformance: Close flushes posted receives and the peer notices") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  auto inbox_a = Alloc(*p.a.fabric, 4096, kLocalWrite);
  auto inbox_b = Alloc(*p.b.fabric, 4096, kLocalWrite);
  std::vector<RecvRequest> ra(3), rb(2);
  for (size_t i = 0; i < ra.size(); ++i) ra[i] = {10 + i, {inbox_a->data(), 64, inbox_a.get()}};
  for (size_t i = 0; i < rb.size(); ++i) rb[i] = {20 + i, {inbox_b->data(), 64, inbox_b.get()}};
  REQUIRE_OK(p.ea->PostRecv(ra));
  REQUIRE_OK(p.eb->PostRecv(rb));
  p.eb->Close();
  p.eb->Close();  // idempotent
  CHECK(!p.eb->connected());
  auto fb = PollCompletions(*p.b.rcq, rb.size(), 10s);
  REQUIRE(fb.size() == rb.size());
  for (const Completion& c : fb) CHECK(IsError(c, FabricErrc::kPeerGone));
  WorkRequest wr;
  wr.opcode = Opcode::kSend;
  CHECK(p.eb->Post(std::span(&wr, 1)).is(Errc::kUnavailable));
  auto fa = PollCompletions(*p.a.rcq, ra.size(), 10s);
  REQUIRE(fa.size() == ra.size());
  for (const Completion& c : fa) CHECK(IsCondition(c, Errc::kUnavailable));
  const uint64_t deadline = MonoNanos() + 10'000'000'000ULL;
  while (p.ea->connected() && MonoNanos() < deadline) std::this_thread::sleep_for(5ms);
  CHECK(!p.ea->connected());
  CHECK(p.ea->RecvControl(10ms).status().is(Errc::kUnavailable));
}

TEST_CASE("conformance: Register makes a file mapping (at an offset) a region like any other") {
  FABRIC_CONFORMANCE_PRELUDE();
  Pair p;
  constexpr size_t kFile = 1u << 20, kOffset = 64 * 1024, kLen = 256 * 1024;
  // A memfd (what segments on tmpfs look like) and a regular file in the test directory.
  for (const bool memfd : {true, false}) {
    INFO((memfd ? "memfd" : "regular file"));
    const std::string path = (p.dir / "segment").string();
    const int fd = memfd ? ::memfd_create("rdmq-test-segment", MFD_CLOEXEC)
                         : ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, kFile) == 0);
    void* map = ::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kOffset);
    REQUIRE(map != MAP_FAILED);
    auto region = p.a.fabric->Register(map, kLen, fd, kOffset, kAll);
    if (!region.ok() && kProvider == Provider::kVerbs && !memfd) {
      // Page-cache files may be refused for long-term pinning; the error must say what to use.
      INFO(region.status());
      CHECK(region.status().is(FabricErrc::kRegistration));
      CHECK(region.status().ToString().find("memfd") != std::string::npos);
    } else {
      REQUIRE_OK(region);
      CHECK((*region)->data() == static_cast<std::byte*>(map));
      CHECK((*region)->size() == kLen);
      auto remote = ShareAndAttach(*p.ea, *p.eb, (*region)->Descriptor());
      auto local = Alloc(*p.b.fabric, 4096, kLocalWrite);
      for (size_t i = 0; i < 4096; ++i) local->data()[i] = static_cast<std::byte>(i * 7 + (memfd ? 1 : 2));
      Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 4096, remote.get(), kLen - 4096, 1));
      REQUIRE(!c.status);
      // The bytes are in the file, at the registered file offset.
      std::vector<std::byte> back(4096);
      REQUIRE(::pread(fd, back.data(), back.size(), static_cast<off_t>(kOffset + kLen - 4096)) == 4096);
      CHECK(std::memcmp(back.data(), local->data(), 4096) == 0);
      c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, 16, remote.get(), kLen - 8, 2));
      CHECK(IsError(c, FabricErrc::kOutOfBounds));
      // A READ sees what the owner writes through the file.
      const char msg[] = "written with pwrite";
      REQUIRE(::pwrite(fd, msg, sizeof msg, kOffset + 100) == static_cast<ssize_t>(sizeof msg));
      c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, sizeof msg, remote.get(), 100, 3));
      REQUIRE(!c.status);
      CHECK(std::memcmp(local->data(), msg, sizeof msg) == 0);
      remote.reset();
      region->reset();
    }
    ::munmap(map, kLen);
    ::close(fd);
  }
  if (kProvider == Provider::kShm) {
    // shm regions must come with their fd, and lie within the file.
    auto anon = MapAnonymousForTest(4096);
    CHECK(p.a.fabric->Register(anon, 4096, -1, 0, kAll).status().is(FabricErrc::kRegistration));
    const int fd = ::memfd_create("rdmq-short", MFD_CLOEXEC);
    REQUIRE(::ftruncate(fd, 4096) == 0);
    void* map = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(map != MAP_FAILED);
    CHECK(p.a.fabric->Register(map, 8192, fd, 0, kAll).status().is(FabricErrc::kOutOfBounds));
    ::munmap(map, 8192);
    ::close(fd);
    ::munmap(anon, 4096);
  }
}
