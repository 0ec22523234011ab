// rdmq-fabric-bench: latency and bandwidth of the fabric's WRITE and READ per provider, next to
// the baseline each provider should be compared with, measured in the same run:
//   shm    memcpy between the same buffers (the provider's data path is a memcpy)
//   tcp    raw loopback TCP between two threads, with the same request/acknowledge pattern
//   tcp-tls  the tcp provider with TLS on its connection, next to the tcp provider without it
//            (certificates from --tls-dir, a directory made by tests/kafka_e2e/test_ca.sh)
//   verbs  none (under Soft-RoCE the numbers say nothing about RDMA hardware)
//
//   rdmq-fabric-bench [--providers shm,tcp[,tcp-tls,verbs]] [--tls-dir DIR] [--quick] [--trials N]
//                     [--json FILE]
//
// Latency: one 64-byte operation in flight, signalled; the completion queue is polled and, when
// empty, waited on (CompletionQueue::Wait); p50 and p99 over many operations. Bandwidth: 64 KiB and 1 MiB
// operations, a window of outstanding signalled operations, cycling over a 16 MiB target; the median of
// --trials runs, and the CPU time this process spent per GB moved (every thread: both ends, their agents;
// for its ratio, lower is better). Both ends run in this process (two fabrics, two connections), as the
// RPC layer's tests do.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/config/args.h"
#include "rdmq/fabric/fabric.h"

using namespace rdmq;
using namespace rdmq::fabric;
using namespace std::chrono_literals;

namespace {

constexpr size_t kTarget = 16u << 20;
constexpr uint32_t kAll = kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic;

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "rdmq-fabric-bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);  // NOLINT(concurrency-mt-unsafe): the tool ends here, on its main thread
}
template <class T>
T Must(Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what, r.status());
  return std::move(r).value();
}

// What to measure: a provider, and for tcp whether its connection is inside TLS.
struct Flavor {
  Provider provider = Provider::kShm;
  bool tls = false;
  std::string Name() const { return std::string(ProviderName(provider)) + (tls ? "-tls" : ""); }
};

struct Options {
  std::vector<Flavor> providers{{Provider::kShm}, {Provider::kTcp}};
  std::string tls_dir;  // ca.pem, server.pem/.key, client.pem/.key
  bool quick = false;
  int trials = 5;
  std::string json;
};

struct Row {
  std::string provider, op, metric;
  size_t size = 0;
  double fabric = 0, baseline = 0;  // baseline 0 = none
  std::string baseline_name;
};

// The CPU time of this process so far (user + system, every thread), in seconds.
double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// A bandwidth measurement `f` (returning GB/s) and the CPU it took per GB moved: this process's
// time, both ends of the connection and their agents, which a loaded machine's wake-up delays
// change far less than the rate.
struct Bandwidth {
  double gb_s = 0, cpu_ms_per_gb = 0;
};
template <class F>
Bandwidth MeasureBandwidth(F&& f) {
  const double c0 = ProcessCpuSeconds();
  const uint64_t t0 = MonoNanos();
  const double gb_s = f();
  const double wall = static_cast<double>(MonoNanos() - t0) / 1e9;
  return {gb_s, (ProcessCpuSeconds() - c0) / (gb_s * wall) * 1e3};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double Percentile(std::vector<uint64_t>& v, double p) {
  std::sort(v.begin(), v.end());
  return static_cast<double>(
             v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))]) /
         1000.0;
}

// ------------------------------------------------------------------------------ fabric side

struct Setup {
  std::unique_ptr<Fabric> a, b;
  std::unique_ptr<CompletionQueue> a_cq, b_cq;
  std::unique_ptr<Endpoint> ea, eb;
  std::unique_ptr<Region> target, local;
  std::unique_ptr<RemoteRegion> remote;
  std::string dir;

  Setup(Provider p, const std::string& tls_dir) {
    FabricOptions oa;
    oa.provider = p;
    FabricOptions ob;
    ob.provider = p;
    if (!tls_dir.empty()) {  // mutual TLS, as a broker with ssl.client.auth=required has it
      oa.tls.enabled = ob.tls.enabled = true;
      oa.tls.ca = ob.tls.ca = tls_dir + "/ca.pem";
      oa.tls.certificate = tls_dir + "/server.pem";
      oa.tls.key = tls_dir + "/server.key";
      oa.tls.client_auth = TlsOptions::ClientAuth::kRequired;
      ob.tls.certificate = tls_dir + "/client.pem";
      ob.tls.key = tls_dir + "/client.key";
    }
    if (p == Provider::kShm) {
      char tmpl[] = "/tmp/rdmq-bench-XXXXXX";
      dir = ::mkdtemp(tmpl);
      oa.listen = "unix:" + dir + "/a.sock";
    } else if (p == Provider::kTcp) {
      oa.listen = "127.0.0.1:0";
    } else {
      const char* e = std::getenv("RDMQ_VERBS_LISTEN");
      oa.listen = e ? e : ":0";
    }
    a = Must(Fabric::Open(oa), "open fabric");
    b = Must(Fabric::Open(ob), "open fabric");
    a_cq = Must(a->CreateCompletionQueue(1024), "cq");
    b_cq = Must(b->CreateCompletionQueue(1024), "cq");
    EndpointOptions eo;
    eo.send_cq = a_cq.get();
    eo.recv_cq = a_cq.get();
    Result<std::unique_ptr<Endpoint>> accepted = Status(Errc::kInternal, "accept did not run");
    std::thread t([&] { accepted = a->Accept(eo, 20s); });
    EndpointOptions ob_eo = eo;
    ob_eo.send_cq = b_cq.get();
    ob_eo.recv_cq = b_cq.get();
    eb = Must(b->Connect(a->address(), ob_eo), "connect");
    t.join();
    ea = Must(std::move(accepted), "accept");
    target = Must(a->Allocate(kTarget, kAll), "allocate target");
    local = Must(b->Allocate(kTarget, kLocalWrite), "allocate local");
    std::memset(target->data(), 1, kTarget);  // fault every page in before measuring
    std::memset(local->data(), 2, kTarget);
    const std::string d = target->Descriptor().Encode();
    if (Status s = ea->SendControl(coding::AsBytes(d)); !s.ok()) Die("send descriptor", s);
    const std::string got = Must(eb->RecvControl(20s), "receive descriptor");
    remote = Must(eb->Attach(Must(RegionDescriptor::Decode(coding::AsBytes(got)), "decode")), "attach");
  }
  ~Setup() {
    eb.reset();
    ea.reset();
    if (!dir.empty()) ::rmdir(dir.c_str());
  }

  WorkRequest Make(Opcode op, size_t off, size_t size, uint64_t tag) const {
    WorkRequest wr;
    wr.opcode = op;
    wr.tag = tag;
    wr.signaled = true;
    wr.local = {local->data() + off, size, local.get()};
    wr.remote = remote.get();
    wr.remote_offset = off;
    return wr;
  }

  // Sleeps in CompletionQueue::Wait when nothing is ready (never spins a core: with two
  // cores, a spinning poller would take one from the tcp agents, and the raw TCP baseline
  // blocks in recv too).
  void WaitOne() {
    Completion c;
    while (b_cq->Poll(std::span(&c, 1)) == 0) (void)b_cq->Wait(1s);
    if (c.status) Die("operation failed", Status(c.status));
  }

  std::vector<uint64_t> Latency(Opcode op, size_t size, int iters) {
    std::vector<uint64_t> ns;
    ns.reserve(static_cast<size_t>(iters));
    for (int i = 0; i < iters + iters / 10; ++i) {
      const WorkRequest wr =
          Make(op, (static_cast<size_t>(i) * 4096) % kTarget, size, static_cast<uint64_t>(i));
      const uint64_t t0 = MonoNanos();
      if (Status s = eb->Post(std::span(&wr, 1)); !s.ok()) Die("post", s);
      WaitOne();
      if (i >= iters / 10) ns.push_back(MonoNanos() - t0);  // the first tenth warms up
    }
    return ns;
  }

  double Bandwidth(Opcode op, size_t size, size_t window, size_t total) {
    const size_t n = std::max<size_t>(total / size, window * 2);
    const size_t slots = kTarget / size;
    size_t posted = 0, done = 0;
    const uint64_t t0 = MonoNanos();
    Completion cs[32];
    while (done < n) {
      while (posted < n && posted - done < window) {
        const WorkRequest wr = Make(op, (posted % slots) * size, size, posted);
        if (Status s = eb->Post(std::span(&wr, 1)); !s.ok()) Die("post", s);
        ++posted;
      }
      const size_t k = b_cq->Poll(cs);
      if (k == 0) (void)b_cq->Wait(1s);
      for (size_t i = 0; i < k; ++i) {
        if (cs[i].status) Die("operation failed", Status(cs[i].status));
      }
      done += k;
    }
    const double secs = static_cast<double>(MonoNanos() - t0) / 1e9;
    return static_cast<double>(n * size) / secs / 1e9;
  }

  // The shm baseline: the same copies with memcpy, between the same buffers (the owner's mapping
  // of the target).
  double MemcpyBandwidth(bool read, size_t size, size_t total) {
    const size_t n = std::max<size_t>(total / size, 2);
    const size_t slots = kTarget / size;
    const uint64_t t0 = MonoNanos();
    for (size_t i = 0; i < n; ++i) {
      const size_t off = (i % slots) * size;
      if (read) {
        std::memcpy(local->data() + off, target->data() + off, size);
      } else {
        std::memcpy(target->data() + off, local->data() + off, size);
      }
      asm volatile("" ::: "memory");
    }
    const double secs = static_cast<double>(MonoNanos() - t0) / 1e9;
    return static_cast<double>(n * size) / secs / 1e9;
  }
  std::vector<uint64_t> MemcpyLatency(size_t size, int iters) {
    std::vector<uint64_t> ns;
    for (int i = 0; i < iters; ++i) {
      const size_t off = (static_cast<size_t>(i) * 4096) % kTarget;
      const uint64_t t0 = MonoNanos();
      std::memcpy(target->data() + off, local->data() + off, size);
      asm volatile("" ::: "memory");
      ns.push_back(MonoNanos() - t0);
    }
    return ns;
  }
};

// ------------------------------------------------------------------------------ raw TCP baseline

// Two threads on a loopback TCP connection, with the tcp provider's pattern: a WRITE is a
// 16-byte header plus payload answered by an 8-byte acknowledgement; a READ is a 16-byte request
// answered by the payload.
class RawTcp {
 public:
  RawTcp() {
    const int l = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0 ||
        ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      Die("raw tcp listen", Status::FromErrno(errno, "loopback"));
    }
    client_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(client_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      Die("raw tcp connect", Status::FromErrno(errno, "loopback"));
    }
    server_ = ::accept(l, nullptr, nullptr);
    ::close(l);
    int one = 1;
    ::setsockopt(client_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(server_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    buf_.resize(kTarget);
    sbuf_.resize(kTarget);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawTcp() {
    ::shutdown(client_, SHUT_RDWR);
    thread_.join();
    ::close(client_);
    ::close(server_);
  }

  std::vector<uint64_t> Latency(bool read, size_t size, int iters) {
    std::vector<uint64_t> ns;
    for (int i = 0; i < iters + iters / 10; ++i) {
      const uint64_t t0 = MonoNanos();
      Request(read, size);
      Response(read, size);
      if (i >= iters / 10) ns.push_back(MonoNanos() - t0);
    }
    return ns;
  }
  double Bandwidth(bool read, size_t size, size_t window, size_t total) {
    const size_t n = std::max<size_t>(total / size, window * 2);
    size_t sent = 0, done = 0;
    const uint64_t t0 = MonoNanos();
    while (done < n) {
      while (sent < n && sent - done < window) {
        Request(read, size);
        ++sent;
      }
      Response(read, size);
      ++done;
    }
    return static_cast<double>(n * size) / (static_cast<double>(MonoNanos() - t0) / 1e9) / 1e9;
  }

 private:
  static void WriteAll(int fd, const void* p, size_t n) {
    const auto* b = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
      if (k <= 0) return;
      b += k;
      n -= static_cast<size_t>(k);
    }
  }
  static bool ReadAll(int fd, void* p, size_t n) {
    auto* b = static_cast<char*>(p);
    while (n > 0) {
      const ssize_t k = ::recv(fd, b, n, 0);
      if (k <= 0) return false;
      b += k;
      n -= static_cast<size_t>(k);
    }
    return true;
  }
  void Request(bool read, size_t size) {
    uint64_t hdr[2] = {read ? 1u : 0u, size};
    if (read) {
      WriteAll(client_, hdr, sizeof hdr);
    } else {
      iovec v[2] = {{hdr, sizeof hdr}, {buf_.data(), size}};
      msghdr m{};
      m.msg_iov = v;
      m.msg_iovlen = 2;
      size_t left = sizeof hdr + size;
      // sendmsg may be partial for big payloads: finish with plain sends.
      const ssize_t k = ::sendmsg(client_, &m, MSG_NOSIGNAL);
      if (k > 0 && static_cast<size_t>(k) < left) {
        size_t off = static_cast<size_t>(k);
        if (off < sizeof hdr) {
          WriteAll(client_, reinterpret_cast<char*>(hdr) + off, sizeof hdr - off);
          off = sizeof hdr;
        }
        WriteAll(client_, buf_.data() + (off - sizeof hdr), size - (off - sizeof hdr));
      }
    }
  }
  void Response(bool read, size_t size) {
    if (read) {
      ReadAll(client_, buf_.data(), size);
    } else {
      uint64_t ack;
      ReadAll(client_, &ack, sizeof ack);
    }
  }
  void Serve() {
    uint64_t hdr[2];
    while (ReadAll(server_, hdr, sizeof hdr)) {
      if (hdr[0] == 1) {
        WriteAll(server_, sbuf_.data(), hdr[1]);
      } else {
        if (!ReadAll(server_, sbuf_.data(), hdr[1])) return;
        const uint64_t ack = 1;
        WriteAll(server_, &ack, sizeof ack);
      }
    }
  }
  int client_ = -1, server_ = -1;
  std::vector<char> buf_, sbuf_;
  std::thread thread_;
};

// ------------------------------------------------------------------------------ driver

void RunProvider(Flavor flavor, const Options& o, std::vector<Row>& rows) {
  const Provider p = flavor.provider;
  const std::string name = flavor.Name();
  std::fprintf(stderr, "-- %s\n", name.c_str());
  Setup s(p, flavor.tls ? o.tls_dir : "");
  // tcp-tls is judged against the tcp provider without TLS, measured alongside.
  std::unique_ptr<Setup> plain;
  if (flavor.tls) plain = std::make_unique<Setup>(p, "");
  const std::string plain_name = "tcp without TLS";
  std::unique_ptr<RawTcp> raw;
  if (p == Provider::kTcp && !flavor.tls) raw = std::make_unique<RawTcp>();
  const int lat_iters = o.quick ? 2000 : (p == Provider::kShm ? 200000 : 20000);
  for (Opcode op : {Opcode::kWrite, Opcode::kRead}) {
    const bool read = op == Opcode::kRead;
    auto ns = s.Latency(op, 64, lat_iters);
    Row p50{name, std::string(OpcodeName(op)), "latency p50 (us)", 64, Percentile(ns, 0.50), 0, ""};
    Row p99{name, std::string(OpcodeName(op)), "latency p99 (us)", 64, Percentile(ns, 0.99), 0, ""};
    if (p == Provider::kShm) {
      auto base = s.MemcpyLatency(64, lat_iters);
      p50.baseline = Percentile(base, 0.50);
      p99.baseline = Percentile(base, 0.99);
      p50.baseline_name = p99.baseline_name = "memcpy";
    } else if (raw) {
      auto base = raw->Latency(read, 64, lat_iters);
      p50.baseline = Percentile(base, 0.50);
      p99.baseline = Percentile(base, 0.99);
      p50.baseline_name = p99.baseline_name = "raw loopback TCP";
    } else if (plain) {
      auto base = plain->Latency(op, 64, lat_iters);
      p50.baseline = Percentile(base, 0.50);
      p99.baseline = Percentile(base, 0.99);
      p50.baseline_name = p99.baseline_name = plain_name;
    }
    rows.push_back(p50);
    rows.push_back(p99);
  }
  for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
    const size_t window = size >= (1u << 20) ? 4 : 16;
    const size_t total = o.quick ? (64u << 20) : (p == Provider::kShm ? (2048u << 20) : (512u << 20));
    for (Opcode op : {Opcode::kWrite, Opcode::kRead}) {
      const bool read = op == Opcode::kRead;
      std::vector<double> f, b, fcpu, bcpu;
      const auto add = [](std::vector<double>& rate, std::vector<double>& cpu, Bandwidth m) {
        rate.push_back(m.gb_s);
        cpu.push_back(m.cpu_ms_per_gb);
      };
      for (int t = 0; t < o.trials; ++t) {
        add(f, fcpu, MeasureBandwidth([&] { return s.Bandwidth(op, size, window, total); }));
        if (p == Provider::kShm)
          add(b, bcpu, MeasureBandwidth([&] { return s.MemcpyBandwidth(read, size, total); }));
        if (raw) add(b, bcpu, MeasureBandwidth([&] { return raw->Bandwidth(read, size, window, total); }));
        if (plain) add(b, bcpu, MeasureBandwidth([&] { return plain->Bandwidth(op, size, window, total); }));
      }
      Row r{name, std::string(OpcodeName(op)), "bandwidth (GB/s)", size, Median(f), 0, ""};
      Row c{name, std::string(OpcodeName(op)), "CPU ms per GB", size, Median(fcpu), 0, ""};
      if (!b.empty()) {
        r.baseline = Median(b);
        c.baseline = Median(bcpu);
        r.baseline_name = c.baseline_name = p == Provider::kShm ? "memcpy"
                                            : plain             ? plain_name
                                                                : "raw loopback TCP";
      }
      rows.push_back(r);
      rows.push_back(c);
    }
  }
}

std::string SizeName(size_t n) {
  if (n >= (1u << 20)) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}

}  // namespace

int main(int argc, char** argv) {
  const rdmq::config::CommandSpec spec{
      .path = "rdmq-fabric-bench",
      .usage = "[--providers shm,tcp,tcp-tls,verbs] [--tls-dir DIR] [--quick] [--trials N] [--json FILE]",
      .summary = "WRITE and READ latency and bandwidth per fabric provider, next to their baselines.",
      .options = {
          {"providers", 0, "LIST", "comma-separated providers (default shm,tcp); tcp-tls: tcp with TLS"},
          {"tls-dir", 0, "DIR",
           "for tcp-tls: ca.pem, server.pem/.key and client.pem/.key (tests/kafka_e2e/test_ca.sh DIR)"},
          {"quick", 0, "", "one short trial per point"},
          {"trials", 0, "N", "trials per point; the median is reported (default 5)"},
          {"json", 0, "FILE", "write the rows as JSON to this file"}}};
  int exit_code = 0;
  const auto args = rdmq::config::ParseCommandLine(spec, argc, argv, &exit_code);
  if (!args) return exit_code;
  Options o;
  auto trials =
      args->GetInt("trials", o.trials, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  if (!trials.ok()) {
    std::fprintf(stderr, "rdmq-fabric-bench: %s\n", std::string(trials.status().context()).c_str());
    return 2;
  }
  o.trials = std::max(1, static_cast<int>(*trials));
  if (args->Has("quick")) {
    o.quick = true;
    o.trials = 1;
  }
  o.json = args->GetOr("json", "");
  o.tls_dir = args->GetOr("tls-dir", "");
  if (auto list = args->Get("providers")) {
    o.providers.clear();
    for (size_t pos = 0; pos <= list->size();) {
      const size_t comma = std::min(list->find(',', pos), list->size());
      const std::string item(list->substr(pos, comma - pos));
      if (item == "tcp-tls") {
        o.providers.push_back({Provider::kTcp, true});
      } else {
        o.providers.push_back({Must(ParseProvider(item), "--providers")});
      }
      pos = comma + 1;
    }
  }
  std::vector<Row> rows;
  for (const Flavor& fl : o.providers) {
    if (fl.tls && o.tls_dir.empty()) {
      std::fprintf(stderr,
                   "-- tcp-tls: skipped (give --tls-dir: tests/kafka_e2e/test_ca.sh DIR makes one)\n");
      continue;
    }
    FabricOptions probe;
    probe.provider = fl.provider;
    if (auto f = Fabric::Open(probe); !f.ok()) {
      std::fprintf(stderr, "-- %s: skipped (%s)\n", fl.Name().c_str(), f.status().ToString().c_str());
      continue;
    }
    RunProvider(fl, o, rows);
  }
  std::printf("%-7s %-6s %-8s %-18s %10s %10s %8s  %s\n", "fabric", "op", "size", "metric", "fabric",
              "baseline", "ratio", "baseline is");
  for (const Row& r : rows) {
    char ratio[16] = "-";  // fabric / baseline: a time ratio for latency, a fraction for bandwidth
    char base[16] = "-";
    if (r.baseline > 0) {
      std::snprintf(ratio, sizeof ratio, "%.2f", r.fabric / r.baseline);
      std::snprintf(base, sizeof base, "%.2f", r.baseline);
    }
    std::printf("%-7s %-6s %-8s %-18s %10.2f %10s %8s  %s\n", r.provider.c_str(), r.op.c_str(),
                SizeName(r.size).c_str(), r.metric.c_str(), r.fabric, base, ratio, r.baseline_name.c_str());
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << "  {\"provider\": \"" << r.provider << "\", \"op\": \"" << r.op << "\", \"size\": " << r.size
          << ", \"metric\": \"" << r.metric << "\", \"fabric\": " << r.fabric
          << ", \"baseline\": " << r.baseline << ", \"baseline_name\": \"" << r.baseline_name << "\"}"
          << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "]\n";
  }
  return 0;
}
