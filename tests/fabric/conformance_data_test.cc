// The fabric conformance suite (every provider must pass it; conformance.h): One-sided data movement: WRITE
// and READ of every size, WRITE ordering, WRITE_WITH_IMM visibility, and file-backed regions.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"
#include "rdmq/common/clock.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace rdmq::fabric::test;
using namespace std::chrono_literals;

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

TEST_CASE("conformance: pipelined WRITEs, WRITE_WITH_IMMs and READs of mixed sizes take effect in order") {
  FABRIC_CONFORMANCE_PRELUDE();
  // Small and large payloads back to back (tcp receives the large ones in place, the frames
  // after them through its buffer), checked against a model of the target.
  Pair p(64, 1024);
  constexpr size_t kRegion = 2u << 20;
  const size_t n = static_cast<size_t>(rdmq::test::Trials(400, 60));
  const size_t sizes[] = {8, 100, 4096, 16384, 16385, 20000, 65536, 65536 + 57, 300000};
  std::mt19937_64 rng(rdmq::test::TestSeed());
  struct Op {
    Opcode op;
    size_t size, roff, loff;
  };
  std::vector<Op> ops;
  size_t local_size = 0;
  for (size_t i = 0; i < n; ++i) {
    const Opcode op = std::array{Opcode::kWrite, Opcode::kWriteImm, Opcode::kRead}[rng() % 3];
    const size_t size = sizes[rng() % std::size(sizes)];
    ops.push_back({op, size, rng() % (kRegion - size + 1), local_size});
    local_size += (size + 63) / 64 * 64;
  }
  auto target = Alloc(*p.a.fabric, kRegion);
  auto local = Alloc(*p.b.fabric, local_size, kLocalWrite);
  auto remote = ShareAndAttach(*p.ea, *p.eb, target->Descriptor());
  for (size_t i = 0; i < local_size; ++i) local->data()[i] = static_cast<std::byte>(rng());
  std::vector<std::byte> model(kRegion);
  std::vector<std::vector<std::byte>> want(n);  // what each READ must return
  size_t imms = 0;
  for (size_t i = 0; i < n; ++i) {
    const Op& o = ops[i];
    std::byte* at = model.data() + o.roff;
    if (o.op == Opcode::kRead) {
      want[i].assign(at, at + o.size);
    } else {
      std::memcpy(at, local->data() + o.loff, o.size);
      imms += o.op == Opcode::kWriteImm;
    }
  }
  std::vector<RecvRequest> rrs(imms);
  for (size_t i = 0; i < imms; ++i) rrs[i].tag = i;
  REQUIRE_OK(p.ea->PostRecv(rrs));
  std::vector<Completion> done;
  for (size_t i = 0; i < n;) {
    std::vector<WorkRequest> batch;
    for (size_t k = 1 + rng() % 6; k > 0 && i < n; --k, ++i) {
      const Op& o = ops[i];
      WorkRequest wr = o.op == Opcode::kRead ? MakeRead(*local, o.loff, o.size, remote.get(), o.roff, i)
                                             : MakeWrite(*local, o.loff, o.size, remote.get(), o.roff, i);
      wr.opcode = o.op;
      wr.imm = static_cast<uint32_t>(i);
      batch.push_back(wr);
    }
    PostRetrying(*p.eb, *p.b.scq, batch, &done);
  }
  auto rest = PollCompletions(*p.b.scq, n - done.size(), 60s);
  done.insert(done.end(), rest.begin(), rest.end());
  REQUIRE(done.size() == n);
  for (size_t i = 0; i < n; ++i) {
    INFO("operation " << i << " of " << ops[i].size << " bytes");
    CHECK(done[i].tag == i);  // in posting order
    CHECK(!done[i].status);
    if (ops[i].op == Opcode::kRead)
      CHECK(std::memcmp(local->data() + ops[i].loff, want[i].data(), ops[i].size) == 0);
  }
  CHECK(std::memcmp(target->data(), model.data(), kRegion) == 0);
  auto arrivals = PollCompletions(*p.a.rcq, imms, 30s);
  REQUIRE(arrivals.size() == imms);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].op != Opcode::kWriteImm) continue;
    CHECK(!arrivals[k].status);
    CHECK(arrivals[k].imm == i);
    CHECK(arrivals[k].byte_len == ops[i].size);
    ++k;
  }
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
    // A read-only fd serves read-only regions, and is refused for write or atomic rights up
    // front (a peer could never map it writable); a write-only fd cannot be mapped at all.
    const std::string ro_path = (p.dir / "read-only").string();
    const int rw = ::open(ro_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(rw >= 0);
    REQUIRE(::ftruncate(rw, 4096) == 0);
    REQUIRE(::pwrite(rw, "sealed", 6, 0) == 6);
    const int ro = ::open(ro_path.c_str(), O_RDONLY | O_CLOEXEC);
    const int wo = ::open(ro_path.c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(ro >= 0);
    REQUIRE(wo >= 0);
    void* ro_map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, ro, 0);
    REQUIRE(ro_map != MAP_FAILED);
    for (const uint32_t access : {kRemoteRead | kRemoteWrite, kRemoteRead | kRemoteAtomic}) {
      auto refused = p.a.fabric->Register(ro_map, 4096, ro, 0, access);
      CHECK(refused.status().is(FabricErrc::kRegistration));
      CHECK(refused.status().ToString().find("read-only") != std::string::npos);
    }
    CHECK(p.a.fabric->Register(ro_map, 4096, wo, 0, kRemoteRead).status().is(FabricErrc::kRegistration));
    {
      auto region = p.a.fabric->Register(ro_map, 4096, ro, 0, kRemoteRead);
      REQUIRE_OK(region);
      auto remote = ShareAndAttach(*p.ea, *p.eb, (*region)->Descriptor());
      auto local = Alloc(*p.b.fabric, 4096, kLocalWrite);
      Completion c = Run(*p.eb, *p.b.scq, MakeRead(*local, 0, 6, remote.get(), 0, 4));
      REQUIRE(!c.status);
      CHECK(std::memcmp(local->data(), "sealed", 6) == 0);
    }
    ::munmap(ro_map, 4096);
    for (const int f : {fd, rw, ro, wo}) ::close(f);
    ::munmap(anon, 4096);
  }
}
