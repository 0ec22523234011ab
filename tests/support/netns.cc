#include "support/netns.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>

namespace rdmq::test {
namespace {

// Runs a shell command line; its exit status, with its output in `out`.
int Sh(const std::string& command, std::string* out = nullptr) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 512> buf{};
  std::string text;
  while (fgets(buf.data(), buf.size(), p) != nullptr) text += buf.data();
  const int st = pclose(p);
  if (out != nullptr) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string HostEnd(const std::string& tag, int host) { return "rqh" + tag + "x" + std::to_string(host); }
std::string NsEnd(const std::string& tag, int host) { return "rqn" + tag + "x" + std::to_string(host); }

}  // namespace

std::string NetLab::Unavailable() {
  if (geteuid() != 0) return "making network namespaces needs root";
  std::string out;
  if (Sh("ip -V", &out) != 0) return "the ip command (iproute2) is missing: " + out;
  const std::string probe = "rdmq-probe-" + std::to_string(getpid());
  if (Sh("ip netns add " + probe, &out) != 0) return "ip netns add failed: " + out;
  Sh("ip netns del " + probe);
  return "";
}

NetLab::NetLab() {
  const auto pid = static_cast<unsigned>(getpid());
  tag_ = std::to_string(pid % 1000000);
  subnet_ = "10." + std::to_string(200 + (pid >> 8) % 50) + "." + std::to_string(pid & 255);
  bridge_ = "rqb" + tag_;
}

NetLab::~NetLab() {
  for (const auto& n : names_) Sh("ip netns del " + n);
  for (int i = 0; i < hosts(); ++i) Sh("ip link del " + HostEnd(tag_, i));
  Sh("ip link del " + bridge_);
}

bool NetLab::Up(int hosts, std::string* error) {
  auto run = [error](const std::string& command) {
    std::string out;
    if (Sh(command, &out) == 0) return true;
    if (error != nullptr) *error = "`" + command + "` failed: " + out;
    return false;
  };
  Sh("ip link del " + bridge_);  // a leftover of a process that had this id
  if (!run("ip link add " + bridge_ + " type bridge") ||
      !run("ip addr add " + gateway() + "/24 dev " + bridge_) || !run("ip link set " + bridge_ + " up")) {
    return false;
  }
  for (int i = 0; i < hosts; ++i) {
    const std::string ns = "rdmq-" + tag_ + "-" + std::to_string(i);
    Sh("ip netns del " + ns);
    if (!run("ip netns add " + ns)) return false;
    names_.push_back(ns);
    const std::string host_end = HostEnd(tag_, i), ns_end = NsEnd(tag_, i);
    const std::string in = "ip netns exec " + ns + " ";
    if (!run("ip link add " + host_end + " type veth peer name " + ns_end) ||
        !run("ip link set " + ns_end + " netns " + ns) ||
        !run("ip link set " + host_end + " master " + bridge_) || !run("ip link set " + host_end + " up") ||
        !run(in + "ip addr add " + address(i) + "/24 dev " + ns_end) ||
        !run(in + "ip link set " + ns_end + " up") || !run(in + "ip link set lo up")) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> NetLab::Prefix(int host) const {
  std::string ip = "ip";
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    if (access((std::string(dir) + "ip").c_str(), X_OK) == 0) {
      ip = std::string(dir) + "ip";
      break;
    }
  }
  return {ip, "netns", "exec", names_.at(static_cast<size_t>(host))};
}

bool NetLab::Cut(int host) { return Sh("ip link set " + HostEnd(tag_, host) + " down") == 0; }
bool NetLab::Mend(int host) { return Sh("ip link set " + HostEnd(tag_, host) + " up") == 0; }

}  // namespace rdmq::test
