// What the benchmark reads about the machine and about processes: CPU time, load, hardware.
//
// Threading: every function is thread-safe (reads /proc or calls getrusage).
// Errors: ProcessCpu fails with kNotFound when the process is gone and kIoError/kCorruption
// when /proc/<pid>/stat cannot be read or parsed (the path is in the message).
#pragma once

#include <array>
#include <string>

#include "rdmq/bench/driver.h"
#include "rdmq/common/status.h"

namespace rdmq::bench {

// User and system CPU time of a process, all its threads (/proc/<pid>/stat utime, stime).
Result<CpuTime> ProcessCpu(int pid);
// This process, all threads (getrusage RUSAGE_SELF).
CpuTime SelfCpu();
// The 1, 5 and 15 minute load averages (zeros if /proc/loadavg is unreadable).
std::array<double, 3> LoadAverage();

struct MachineInfo {
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cpus = 0;           // online CPUs
  double memory_gib = 0;  // MemTotal
  std::string kernel;     // uname -r
  std::string hostname;
};
MachineInfo ReadMachineInfo();

}  // namespace rdmq::bench
