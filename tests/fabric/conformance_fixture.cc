#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "conformance.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"

namespace rdmq::fabric::test {

using namespace std::chrono_literals;

std::string ProviderUnavailable() {
  FabricOptions o;
  o.provider = kProvider;
  auto f = Fabric::Open(o);
  if (f.ok()) return "";
  if (f.status().is(FabricErrc::kNoDevice)) return "no RDMA device: " + f.status().ToString();
  return "";  // other errors fail the test where they happen
}

Pair::Pair(uint32_t send_wr, uint32_t recv_wr) : max_send_wr(send_wr), max_recv_wr(recv_wr) {
  FabricOptions oa = SuiteOptions(true);
  oa.listen = ListenAddress(kProvider, dir.str(), "a");
  auto fa = Fabric::Open(oa);
  REQUIRE_OK(fa);
  a.fabric = std::move(fa).value();
  FabricOptions ob = SuiteOptions(false);
  auto fb = Fabric::Open(ob);
  REQUIRE_OK(fb);
  b.fabric = std::move(fb).value();
  for (Side* s : {&a, &b}) {
    auto scq = s->fabric->CreateCompletionQueue(4096);
    REQUIRE_OK(scq);
    s->scq = std::move(scq).value();
    auto rcq = s->fabric->CreateCompletionQueue(4096);
    REQUIRE_OK(rcq);
    s->rcq = std::move(rcq).value();
  }
  auto [x, y] = ConnectMore(a.scq.get(), a.rcq.get(), b.scq.get(), b.rcq.get());
  ea = std::move(x);
  eb = std::move(y);
}

Pair::~Pair() {
  ea.reset();
  eb.reset();
}

EndpointOptions Pair::OptionsA() const {
  EndpointOptions o;
  o.send_cq = a.scq.get();
  o.recv_cq = a.rcq.get();
  o.max_send_wr = max_send_wr;
  o.max_recv_wr = max_recv_wr;
  o.connect_timeout = 20s;
  return o;
}

EndpointOptions Pair::OptionsB() const {
  EndpointOptions o = OptionsA();
  o.send_cq = b.scq.get();
  o.recv_cq = b.rcq.get();
  return o;
}

std::pair<std::unique_ptr<Endpoint>, std::unique_ptr<Endpoint>> Pair::ConnectMore(CompletionQueue* a_scq,
                                                                                  CompletionQueue* a_rcq,
                                                                                  CompletionQueue* b_scq,
                                                                                  CompletionQueue* b_rcq) {
  EndpointOptions oa = OptionsA();
  oa.send_cq = a_scq;
  oa.recv_cq = a_rcq;
  EndpointOptions ob = OptionsB();
  ob.send_cq = b_scq;
  ob.recv_cq = b_rcq;
  Result<std::unique_ptr<Endpoint>> accepted = Status(Errc::kInternal, "accept did not run");
  std::thread t([&] { accepted = a.fabric->Accept(oa, 20s); });
  auto connected = b.fabric->Connect(a.fabric->address(), ob);
  t.join();
  REQUIRE_OK(connected);
  REQUIRE_OK(accepted);
  return {std::move(accepted).value(), std::move(connected).value()};
}

Result<std::unique_ptr<RemoteRegion>> TryShareAndAttach(Endpoint& from, Endpoint& to,
                                                        const RegionDescriptor& d) {
  const std::string bytes = d.Encode();
  RDMQ_RETURN_IF_ERROR(from.SendControl(coding::AsBytes(bytes)));
  RDMQ_ASSIGN_OR_RETURN(std::string got, to.RecvControl(20s));
  RDMQ_ASSIGN_OR_RETURN(RegionDescriptor back, RegionDescriptor::Decode(coding::AsBytes(got)));
  return to.Attach(back);
}

std::unique_ptr<RemoteRegion> ShareAndAttach(Endpoint& from, Endpoint& to, const RegionDescriptor& d) {
  auto r = TryShareAndAttach(from, to, d);
  REQUIRE_OK(r);
  return std::move(r).value();
}

WorkRequest MakeWrite(const Region& local, size_t local_off, size_t len, const RemoteRegion* r, uint64_t roff,
                      uint64_t tag, bool signaled) {
  WorkRequest wr;
  wr.opcode = Opcode::kWrite;
  wr.tag = tag;
  wr.signaled = signaled;
  wr.local = {local.data() + local_off, len, &local};
  wr.remote = r;
  wr.remote_offset = roff;
  return wr;
}

WorkRequest MakeRead(const Region& local, size_t local_off, size_t len, const RemoteRegion* r, uint64_t roff,
                     uint64_t tag, bool signaled) {
  WorkRequest wr = MakeWrite(local, local_off, len, r, roff, tag, signaled);
  wr.opcode = Opcode::kRead;
  return wr;
}

WorkRequest MakeAtomic(Opcode op, const Region& local, size_t local_off, const RemoteRegion* r, uint64_t roff,
                       uint64_t operand, uint64_t swap, uint64_t tag) {
  WorkRequest wr = MakeWrite(local, local_off, 8, r, roff, tag, true);
  wr.opcode = op;
  wr.operand = operand;
  wr.swap = swap;
  return wr;
}

Completion Run(Endpoint& ep, CompletionQueue& cq, WorkRequest wr) {
  wr.signaled = true;
  REQUIRE_OK(ep.Post(std::span<const WorkRequest>(&wr, 1)));
  auto got = PollCompletions(cq, 1, 20s);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].tag == wr.tag);
  REQUIRE(got[0].opcode == wr.opcode);
  REQUIRE(got[0].endpoint_id == ep.id());
  return got[0];
}

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

std::unique_ptr<Region> Alloc(Fabric& f, size_t n, uint32_t access) {
  auto r = f.Allocate(n, access);
  REQUIRE_OK(r);
  return std::move(r).value();
}

uint64_t LoadWord(const Region& r, size_t off) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(r.data() + off))
      .load(std::memory_order_acquire);
}

std::vector<std::byte> Snapshot(const Region& r) {
  return std::vector<std::byte>(r.data(), r.data() + r.size());
}

bool Unchanged(const Region& r, const std::vector<std::byte>& snapshot) {
  return std::memcmp(r.data(), snapshot.data(), snapshot.size()) == 0;
}

void* MapAnonymousForTest(size_t n) {
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  return p;
}

}  // namespace rdmq::fabric::test
