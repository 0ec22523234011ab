// The fabric conformance suite (every provider must pass it; conformance.h): Completions and checks: every
// operation completes once, bad input fails cleanly and changes nothing, grants are scoped and revocable.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "conformance.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace rdmq::fabric::test;
using namespace std::chrono_literals;

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
  SECTION("large payloads are checked before any byte moves") {
    // Payloads this large are received in place on tcp: the checks still come first.
    constexpr size_t kBig = 40000;
    auto remote = ShareAndAttach(*p.ea, *p.eb, rw);
    Completion c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, kBig, remote.get(), kSize - kBig / 2, 1));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    auto ro = target->Descriptor(kRemoteRead);
    REQUIRE_OK(ro);
    auto read_only = ShareAndAttach(*p.ea, *p.eb, *ro);
    c = Run(*p.eb, *p.b.scq, MakeWrite(*local, 0, kBig, read_only.get(), 0, 2));
    CHECK(IsError(c, FabricErrc::kAccessDenied));
    c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, kBig, remote.get(), kSize - 100, 4));
    CHECK(IsError(c, FabricErrc::kOutOfBounds));
    // The endpoint still carries large operations afterwards.
    c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, kBig, remote.get(), 0, 5));
    CHECK(!c.status);
    CHECK(std::all_of(local->data(), local->data() + kBig, [](std::byte x) { return x == std::byte{0x11}; }));
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
