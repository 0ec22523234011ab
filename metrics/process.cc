#include "rdmq/metrics/process.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace rdmq::metrics {
namespace {

// The fields of /proc/self/stat after the command name (which may hold spaces and parentheses):
// fields[0] is field 3 (state).
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream rest(line.substr(close + 1));
  for (std::string f; rest >> f;) out.push_back(f);
  return out;
}

double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double v = 0;
      in >> v;
      return v;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

int CountOpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory stream's own descriptor
}

}  // namespace

void WriteProcessMetrics(Exposition& e) {
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const std::vector<std::string> f = StatFields();
  // Fields (man 5 proc), counted from 3: utime 14, stime 15, starttime 22, vsize 23, rss 24.
  if (f.size() > 21 && ticks > 0) {
    const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    e.Family("process_cpu_seconds_total", Type::kCounter, "User and system CPU time spent, in seconds.");
    e.Sample({}, cpu);
    e.Family("process_virtual_memory_bytes", Type::kGauge, "Virtual memory size in bytes.");
    e.Sample({}, std::stod(f[20]));
    e.Family("process_resident_memory_bytes", Type::kGauge, "Resident memory size in bytes.");
    e.Sample({}, std::stod(f[21]) * page);
    if (const double boot = BootTimeSeconds(); boot > 0) {
      e.Family("process_start_time_seconds", Type::kGauge,
               "Start time of the process since the Unix epoch, in seconds.");
      e.Sample({}, boot + std::stod(f[19]) / ticks);
    }
  }
  if (const int fds = CountOpenFds(); fds >= 0) {
    e.Family("process_open_fds", Type::kGauge, "Open file descriptors.");
    e.Sample({}, fds);
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    e.Family("process_max_fds", Type::kGauge, "The limit on open file descriptors.");
    e.Sample({}, static_cast<double>(rl.rlim_cur));
  }
}

}  // namespace rdmq::metrics
