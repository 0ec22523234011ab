// The fabric conformance suite (every provider must pass it; conformance.h): Messages and notification:
// SEND/RECV order and length checks, sleeping on words and completion queues.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "conformance.h"
#include "rdmq/common/clock.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace rdmq::fabric::test;
using namespace std::chrono_literals;

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
