#include "rdmq/bench/sysinfo.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace rdmq::bench {

Result<CpuTime> ProcessCpu(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT)
      return Status(Errc::kNotFound, "process " + std::to_string(pid) + " is gone (" + path + ")");
    return Status::FromErrno(errno, "open " + path);
  }
  std::string line;
  std::getline(in, line);
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return Status(Errc::kCorruption, path + ": no ')' in '" + line + "'");
  std::istringstream fields(line.substr(close + 1));
  std::string tok;
  unsigned long long utime = 0, stime = 0;
  // After ')' come field 3 (state) ... field 14 utime, field 15 stime.
  for (int field = 3; field <= 15; ++field) {
    if (!(fields >> tok))
      return Status(Errc::kCorruption, path + ": only " + std::to_string(field - 1) + " fields");
    if (field == 14) utime = std::strtoull(tok.c_str(), nullptr, 10);
    if (field == 15) stime = std::strtoull(tok.c_str(), nullptr, 10);
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return CpuTime{static_cast<double>(utime) / tick, static_cast<double>(stime) / tick};
}

CpuTime SelfCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return CpuTime{secs(ru.ru_utime), secs(ru.ru_stime)};
}

std::array<double, 3> LoadAverage() {
  std::array<double, 3> load{};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load = {};
    std::fclose(f);
  }
  return load;
}

MachineInfo ReadMachineInfo() {
  MachineInfo m;
  m.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  while (std::getline(meminfo, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemTotal: %llu kB", &kib) == 1) {
      m.memory_gib = static_cast<double>(kib) / (1024.0 * 1024.0);
      break;
    }
  }
  utsname u{};
  if (uname(&u) == 0) {
    m.kernel = u.release;
    m.hostname = u.nodename;
  }
  return m;
}

}  // namespace rdmq::bench
