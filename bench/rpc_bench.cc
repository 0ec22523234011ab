// rdmq-rpc-bench: the thesis's Figures 4.4 and 4.5 on this machine. Calls/s and p50/p99 latency
// for 1..32 client threads, comparing ways of sharing channels:
//   coalescing     FLOCK: threads share `--channels` channels through the combining queue
//   no-coalescing  the same with one request per message (max_coalesce = 1; Figure 4.5)
//   spinlock       FaRM-like: threads share `--channels` channels under a spinlock, one
//                  request per message
//   per-thread     one channel per thread, no sharing
// The server runs in a child process (its own fabric listener); its handler returns a response
// as large as the request. Prints a table, and optionally writes TSV/JSON and a gnuplot PNG.
//
// Usage: rdmq-rpc-bench [--fabric shm|tcp] [--threads 1,2,4,8,16,32] [--channels 2]
//          [--modes coalescing,no-coalescing,spinlock,per-thread] [--payload 64]
//          [--outstanding 1] [--duration-ms 1000] [--repeat 1] [--tsv FILE] [--json FILE] [--png FILE]
// With --repeat N each point runs N times and the median run (by calls/s) is reported: the
// machine may be shared, and a busy core skews any single run.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <semaphore>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/common/main.h"
#include "rdmq/config/args.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/rpc/client.h"
#include "rdmq/rpc/server.h"

namespace {

using namespace rdmq;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::steady_clock;

constexpr uint16_t kEcho = 1;

struct Args {
  fabric::Provider provider = fabric::Provider::kShm;
  std::vector<int> threads = {1, 2, 4, 8, 16, 32};
  std::vector<std::string> modes = {"coalescing", "no-coalescing", "spinlock", "per-thread"};
  uint32_t channels = 2;
  size_t payload = 64;
  int outstanding = 1;
  int duration_ms = 1000;
  int repeat = 1;        // runs per point; the median run (by calls/s) is reported
  int quiet_wait_s = 0;  // wait up to this long for an idle machine before each run
  bool pin = false;      // server on the last CPU, client on the others (a dedicated server core)
  std::string tsv, json, png;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr, "rdmq-rpc-bench: %s; see 'rdmq-rpc-bench --help'\n", why);
  std::exit(2);  // NOLINT(concurrency-mt-unsafe): a usage error, before any thread starts
}

Args Parse(int argc, char** argv) {
  Args a;
  const rdmq::config::CommandSpec spec{
      .path = "rdmq-rpc-bench",
      .usage = "[options]",
      .summary = "RPC calls/s and latency by client threads, per submission mode.",
      .options = {
          {"fabric", 0, "NAME", "shm | tcp (default shm)"},
          {"threads", 0, "LIST", "client thread counts (default 1,2,4,8,16,32)"},
          {"channels", 0, "N", "RPC channels (default 2)"},
          {"modes", 0, "LIST",
           "coalescing, coalescing-nowindow, no-coalescing, spinlock, per-thread\n"
           "(default coalescing,no-coalescing,spinlock,per-thread)"},
          {"payload", 0, "BYTES", "request payload (default 64)"},
          {"outstanding", 0, "N", "calls in flight per thread (default 1)"},
          {"duration-ms", 0, "MS", "time per run (at least 50; default 1000)"},
          {"repeat", 0, "N", "runs per point; the median run is reported (default 1)"},
          {"quiet-wait", 0, "S", "wait up to this long for an idle machine before each run (default 0)"},
          {"pin", 0, "1|0", "server on the last CPU, client on the others (default 0)"},
          {"tsv", 0, "FILE", "write the points as TSV"},
          {"json", 0, "FILE", "write the points as JSON"},
          {"png", 0, "FILE", "plot the points (gnuplot)"}}};
  int exit_code = 0;
  const auto args = rdmq::config::ParseCommandLine(spec, argc, argv, &exit_code);
  if (!args) std::exit(exit_code);  // NOLINT(concurrency-mt-unsafe): before any thread
  auto integer = [&](const char* name, int64_t fallback) {
    auto v = args->GetInt(name, fallback, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    if (!v.ok()) Usage(std::string(v.status().context()).c_str());
    return static_cast<int>(*v);
  };
  if (auto v = args->Get("fabric")) {
    auto p = fabric::ParseProvider(*v);
    if (!p.ok()) Usage(("unknown fabric " + *v).c_str());
    a.provider = *p;
  }
  if (auto v = args->Get("threads")) {
    a.threads.clear();
    for (const auto& t : Split(*v)) {
      auto n = rdmq::config::ParseInt(t, "--threads", 0, std::numeric_limits<int>::max());
      if (!n.ok()) Usage(std::string(n.status().context()).c_str());
      a.threads.push_back(std::max(1, static_cast<int>(*n)));
    }
  }
  if (auto v = args->Get("modes")) a.modes = Split(*v);
  a.channels = static_cast<uint32_t>(std::max(1, integer("channels", a.channels)));
  auto payload =
      args->GetInt("payload", static_cast<int64_t>(a.payload), 0, std::numeric_limits<int64_t>::max());
  if (!payload.ok()) Usage(std::string(payload.status().context()).c_str());
  a.payload = static_cast<size_t>(*payload);
  a.outstanding = std::max(1, integer("outstanding", a.outstanding));
  a.duration_ms = std::max(50, integer("duration-ms", a.duration_ms));
  const std::string pin = args->GetOr("pin", "0");
  a.pin = pin == "1" || pin == "yes" || pin == "true";
  a.quiet_wait_s = std::max(0, integer("quiet-wait", a.quiet_wait_s));
  a.repeat = std::max(1, integer("repeat", a.repeat));
  a.tsv = args->GetOr("tsv", "");
  a.json = args->GetOr("json", "");
  a.png = args->GetOr("png", "");
  for (const auto& m : a.modes) {
    if (m != "coalescing" && m != "coalescing-nowindow" && m != "no-coalescing" && m != "spinlock" &&
        m != "per-thread") {
      Usage(("unknown mode " + m).c_str());
    }
  }
  return a;
}

// The server child: listens, serves, reports its address on `fd`, runs until killed.
[[noreturn]] void RunServer(fabric::Provider provider, const std::string& sock, int fd) {
  fabric::FabricOptions fo;
  fo.provider = provider;
  fo.listen = provider == fabric::Provider::kShm ? sock : std::string("127.0.0.1:0");
  std::string msg;
  auto f = fabric::Fabric::Open(fo);
  std::unique_ptr<rpc::Server> server;
  if (!f.ok()) {
    msg = "!" + f.status().ToString();
  } else {
    auto s = rpc::Server::Create(**f);
    if (!s.ok()) {
      msg = "!" + s.status().ToString();
    } else {
      server = std::move(s).value();
      (void)server->RegisterHandler(
          kEcho, [](const rpc::RequestContext&, std::span<const std::byte> req, rpc::ResponseBuffer& resp) {
            resp.Append(req);
            return Status();
          });
      Status st = server->Start();
      msg = st.ok() ? (*f)->address() : "!" + st.ToString();
    }
  }
  msg += "\n";
  (void)!::write(fd, msg.data(), msg.size());
  ::close(fd);
  for (;;) ::pause();
}

// CPU time (all processes) from /proc/stat, in clock ticks: busy and total.
struct CpuSample {
  uint64_t busy = 0, total = 0;
};
CpuSample ReadCpu() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v[10] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  CpuSample s;
  for (int i = 0; i < 10; ++i) s.total += v[i];
  s.busy = s.total - v[3] - v[4];  // minus idle and iowait
  return s;
}
// CPU ticks used by this process and its children so far (the server child is reaped only at
// the end, so its ticks are read from /proc/<pid>/stat).
uint64_t ProcTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const auto rp = line.rfind(')');
  if (rp == std::string::npos) return 0;
  std::istringstream ss(line.substr(rp + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && ss >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}
pid_t g_server_pid = 0;

// Waits (up to `limit`) until the machine is nearly idle: less than 10% of the CPUs busy over
// 300 ms. The machine may be shared; a busy core skews every figure.
double WaitQuiet(std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  double busy = 1.0;
  while (Clock::now() < end) {
    const CpuSample a = ReadCpu();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const CpuSample b = ReadCpu();
    busy = b.total > a.total ? static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total)
                             : 1.0;
    if (busy < 0.10) break;
  }
  return busy;
}

struct Row {
  std::string mode;
  int threads = 0;
  uint32_t channels = 0;
  double calls_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double degree = 0;  // requests per request message
  uint64_t migrations = 0;
  double others_cpu = 0;  // share of all CPUs used by other processes during the run
  double fairness = 0;    // calls of the slowest thread / calls of the fastest
  std::string error;
};

Row RunOne(fabric::Fabric& fab, const std::string& address, const Args& a, const std::string& mode,
           int nthreads) {
  Row row;
  row.mode = mode;
  row.threads = nthreads;
  rpc::ClientOptions co;
  co.channels = a.channels;
  if (mode == "no-coalescing") co.max_coalesce = 1;
  if (mode == "coalescing-nowindow") co.combining_window = std::chrono::microseconds(0);
  if (mode == "spinlock") {
    co.sharing = rpc::ClientOptions::Sharing::kSpinlock;
    co.placement = rpc::ClientOptions::Placement::kPinned;
  }
  if (mode == "per-thread") {
    co.channels = static_cast<uint32_t>(nthreads);
    co.placement = rpc::ClientOptions::Placement::kPinned;
  }
  row.channels = co.channels;
  auto cr = rpc::Client::Connect(fab, address, co);
  if (!cr.ok()) {
    row.error = cr.status().ToString();
    return row;
  }
  auto client = std::move(cr).value();
  const std::string payload(a.payload, 'p');
  const auto req = std::as_bytes(std::span(payload.data(), payload.size()));
  std::atomic<int> phase{0};  // 0 warm-up, 1 measure, 2 stop
  std::atomic<int> ready{0};
  std::atomic<uint64_t> errors{0};
  std::vector<std::vector<uint32_t>> lat(static_cast<size_t>(nthreads));
  std::vector<uint64_t> counts(static_cast<size_t>(nthreads), 0);
  std::vector<std::thread> ts;
  ts.reserve(static_cast<size_t>(nthreads));
  for (int t = 0; t < nthreads; ++t) {
    ts.emplace_back([&, t] {
      auto& mine = lat[static_cast<size_t>(t)];
      mine.reserve(1 << 20);
      uint64_t n = 0;
      ready.fetch_add(1);
      if (a.outstanding <= 1) {
        while (phase.load(std::memory_order_relaxed) < 2) {
          const auto t0 = Clock::now();
          auto r = client->Call(kEcho, req, std::chrono::seconds(10));
          const auto dt = Clock::now() - t0;
          if (!r.ok()) {
            if (errors.fetch_add(1) == 0)
              std::fprintf(stderr, "rdmq-rpc-bench: %s\n", r.status().ToString().c_str());
            continue;
          }
          if (phase.load(std::memory_order_relaxed) == 1) {
            ++n;
            mine.push_back(
                static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count()));
          }
        }
      } else {
        std::counting_semaphore<1024> window(a.outstanding);
        std::atomic<uint64_t> done{0};
        std::vector<uint32_t> samples;  // appended under `mu` from callbacks
        std::mutex mu;
        int issued = 0;
        while (phase.load(std::memory_order_relaxed) < 2) {
          window.acquire();
          const auto t0 = Clock::now();
          const bool measured = phase.load(std::memory_order_relaxed) == 1;
          Status st = client->CallAsync(
              kEcho, req, std::chrono::seconds(10), [&, t0, measured](const Result<std::string>& r) {
                if (!r.ok()) {
                  errors.fetch_add(1);
                } else if (measured) {
                  const auto dt = Clock::now() - t0;
                  std::lock_guard<std::mutex> g(mu);
                  samples.push_back(static_cast<uint32_t>(
                      std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count()));
                  done.fetch_add(1);
                }
                window.release();
              });
          if (!st.ok()) {
            errors.fetch_add(1);
            window.release();
          }
          ++issued;
        }
        for (int i = 0; i < a.outstanding; ++i) window.acquire();  // drain
        n = done.load();
        mine = std::move(samples);
      }
      counts[static_cast<size_t>(t)] = n;
    });
  }
  while (ready.load() < nthreads) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200, a.duration_ms / 4)));
  const auto s0 = client->stats();
  const CpuSample c0 = ReadCpu();
  const uint64_t own0 = ProcTicks(::getpid()) + ProcTicks(g_server_pid);
  const auto t0 = Clock::now();
  phase.store(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(a.duration_ms));
  phase.store(2);
  const auto t1 = Clock::now();
  const auto s1 = client->stats();
  const CpuSample c1 = ReadCpu();
  const uint64_t own1 = ProcTicks(::getpid()) + ProcTicks(g_server_pid);
  if (c1.total > c0.total) {
    const double others = static_cast<double>(c1.busy - c0.busy) - static_cast<double>(own1 - own0);
    row.others_cpu = std::max(0.0, others / static_cast<double>(c1.total - c0.total));
  }
  for (auto& th : ts) th.join();
  uint64_t total = 0;
  std::vector<uint32_t> all;
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  row.fairness = *hi > 0 ? static_cast<double>(*lo) / static_cast<double>(*hi) : 0;
  for (int t = 0; t < nthreads; ++t) {
    total += counts[static_cast<size_t>(t)];
    all.insert(all.end(), lat[static_cast<size_t>(t)].begin(), lat[static_cast<size_t>(t)].end());
  }
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  row.calls_per_s = static_cast<double>(total) / secs;
  if (!all.empty()) {
    auto pct = [&](double p) {
      const size_t k = std::min(all.size() - 1, static_cast<size_t>(p * static_cast<double>(all.size())));
      std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
      return all[k] / 1000.0;
    };
    row.p50_us = pct(0.50);
    row.p99_us = pct(0.99);
  }
  const uint64_t msgs = s1.messages - s0.messages;
  row.degree = msgs ? static_cast<double>(s1.requests - s0.requests) / static_cast<double>(msgs) : 0;
  row.migrations = s1.migrations - s0.migrations;
  if (errors.load() > 0) row.error = std::to_string(errors.load()) + " failed calls";
  return row;
}

void WritePlot(const Args& a, const std::vector<Row>& rows) {
  const std::string dat = a.png + ".tsv";
  {
    std::ofstream out(dat);
    for (const auto& m : a.modes) {
      out << "# " << m << "\n";
      for (const auto& r : rows) {
        if (r.mode == m)
          out << r.threads << "\t" << r.calls_per_s / 1e6 << "\t" << r.p50_us << "\t" << r.p99_us << "\n";
      }
      out << "\n\n";
    }
  }
  std::ostringstream gp;
  gp << "set terminal pngcairo size 1200,480 font 'sans,10'\n"
     << "set output '" << a.png << "'\n"
     << "set multiplot layout 1,2 title 'rdmq RPC over " << fabric::ProviderName(a.provider) << ": "
     << a.payload << "-byte calls, " << a.outstanding << " outstanding per thread, " << a.channels
     << " shared channels (per-thread: one each)'\n"
     << "set logscale x 2\nset xlabel 'client threads'\nset grid\nset key top left\n"
     << "set ylabel 'million calls/s'\nset title 'throughput'\nset yrange [0:*]\n"
     << "plot ";
  for (size_t i = 0; i < a.modes.size(); ++i) {
    gp << (i ? ", " : "") << "'" << dat << "' index " << i << " using 1:2 with linespoints title '"
       << a.modes[i] << "'";
  }
  gp << "\nset ylabel 'latency (us)'\nset autoscale y\nset logscale y\nset title 'p50 (solid) and p99 "
        "(dashed) latency'\nplot ";
  for (size_t i = 0; i < a.modes.size(); ++i) {
    gp << (i ? ", " : "") << "'" << dat << "' index " << i << " using 1:3 with linespoints lc " << i + 1
       << " title '" << a.modes[i] << " p50', '" << dat << "' index " << i
       << " using 1:4 with linespoints lc " << i + 1 << " dt 2 notitle";
  }
  gp << "\nunset multiplot\n";
  const std::string script = a.png + ".gp";
  std::ofstream(script) << gp.str();
  const std::string cmd = "gnuplot '" + script + "'";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "rdmq-rpc-bench: gnuplot failed (is gnuplot installed?); data in %s\n", dat.c_str());
  } else {
    std::printf("plot: %s\n", a.png.c_str());
  }
}

}  // namespace

static int Main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  char tmpl[] = "/tmp/rdmq-rpc-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string sock = std::string(tmpl) + "/rpc.sock";
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("pipe");
    return 1;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    return 1;
  }
  const unsigned ncpu = std::max(1u, std::thread::hardware_concurrency());
  auto pin_to = [](unsigned from, unsigned to) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c = from; c <= to; ++c) CPU_SET(c, &set);
    (void)::sched_setaffinity(0, sizeof set, &set);
  };
  if (pid == 0) {
    ::close(fds[0]);
    if (a.pin && ncpu > 1) pin_to(ncpu - 1, ncpu - 1);
    RunServer(a.provider, sock, fds[1]);
  }
  if (a.pin && ncpu > 1) pin_to(0, ncpu - 2);
  g_server_pid = pid;
  ::close(fds[1]);
  std::string address;
  char ch;
  while (::read(fds[0], &ch, 1) == 1 && ch != '\n') address.push_back(ch);
  ::close(fds[0]);
  auto cleanup = [&] {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
  };
  if (address.empty() || address[0] == '!') {
    std::fprintf(stderr, "rdmq-rpc-bench: the server did not start: %s\n", address.c_str());
    cleanup();
    return 1;
  }
  fabric::FabricOptions fo;
  fo.provider = a.provider;
  auto fab = fabric::Fabric::Open(fo);
  if (!fab.ok()) {
    std::fprintf(stderr, "rdmq-rpc-bench: %s\n", fab.status().ToString().c_str());
    cleanup();
    return 1;
  }
  std::printf(
      "rdmq-rpc-bench: fabric %s, %zu-byte requests and responses, %d outstanding per thread, %d ms per "
      "point, "
      "%u cores\n",
      std::string(fabric::ProviderName(a.provider)).c_str(), a.payload, a.outstanding, a.duration_ms,
      std::thread::hardware_concurrency());
  std::printf("%-19s %7s %8s %12s %9s %9s %7s %6s %10s %7s\n", "mode", "threads", "channels", "calls/s",
              "p50 us", "p99 us", "degree", "fair", "migrations", "others");
  std::vector<Row> rows;
  for (int t : a.threads) {
    for (const auto& m : a.modes) {
      std::vector<Row> runs;
      for (int k = 0; k < a.repeat; ++k) {
        if (a.quiet_wait_s > 0) WaitQuiet(std::chrono::seconds(a.quiet_wait_s));
        runs.push_back(RunOne(**fab, address, a, m, t));
      }
      std::sort(runs.begin(), runs.end(),
                [](const Row& x, const Row& y) { return x.calls_per_s < y.calls_per_s; });
      Row r = runs[runs.size() / 2];
      std::printf("%-19s %7d %8u %12.0f %9.2f %9.2f %7.2f %6.2f %10lu %6.0f%%%s%s\n", r.mode.c_str(),
                  r.threads, r.channels, r.calls_per_s, r.p50_us, r.p99_us, r.degree, r.fairness,
                  static_cast<unsigned long>(r.migrations), 100 * r.others_cpu,
                  r.error.empty() ? "" : "  ERROR: ", r.error.c_str());
      std::fflush(stdout);
      rows.push_back(r);
    }
  }
  // The target: at >= 8 threads on the shared channels, coalescing vs spinlock.
  for (int t : a.threads) {
    const Row* c = nullptr;
    const Row* s = nullptr;
    for (const auto& r : rows) {
      if (r.threads == t && r.mode == "coalescing") c = &r;
      if (r.threads == t && r.mode == "spinlock") s = &r;
    }
    if (c && s && s->calls_per_s > 0) {
      std::printf("coalescing / spinlock at %2d threads: %.2fx\n", t, c->calls_per_s / s->calls_per_s);
    }
  }
  if (!a.tsv.empty()) {
    std::ofstream out(a.tsv);
    out << "mode\tthreads\tchannels\tcalls_per_s\tp50_us\tp99_us\tdegree\tfairness\tothers_cpu\n";
    for (const auto& r : rows) {
      out << r.mode << "\t" << r.threads << "\t" << r.channels << "\t" << r.calls_per_s << "\t" << r.p50_us
          << "\t" << r.p99_us << "\t" << r.degree << "\t" << r.fairness << "\t" << r.others_cpu << "\n";
    }
  }
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    out << "{\"fabric\":\"" << fabric::ProviderName(a.provider) << "\",\"payload\":" << a.payload
        << ",\"outstanding\":" << a.outstanding << ",\"rows\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      out << (i ? "," : "") << "{\"mode\":\"" << r.mode << "\",\"threads\":" << r.threads
          << ",\"channels\":" << r.channels << ",\"calls_per_s\":" << r.calls_per_s
          << ",\"p50_us\":" << r.p50_us << ",\"p99_us\":" << r.p99_us << ",\"degree\":" << r.degree
          << ",\"fairness\":" << r.fairness << ",\"others_cpu\":" << r.others_cpu << "}";
    }
    out << "]}\n";
  }
  if (!a.png.empty()) WritePlot(a, rows);
  cleanup();
  return 0;
}

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-rpc-bench", [&] { return Main(argc, argv); });
}
