// NetLab: a network of a test's own for multi-node tests. One Linux bridge in the test's network
// namespace (it gets the subnet's .1: a ZooKeeper or client of the test listens or connects
// there) and, per host, a network namespace joined to the bridge by a veth pair, with its own
// address (.11, .12, ...), so that the network between the hosts is a real one that can be cut.
// Names and the subnet (10.200-249.x.0/24) come from the test's process id, so tests running side
// by side do not meet; everything is removed on destruction.
//
//   NetLab lab;
//   if (!lab.Up(3, &why)) ...;
//   lab.Prefix(0);        // {"/usr/sbin/ip", "netns", "exec", "<name>"}: runs a command on host 0
//   lab.Cut(0);           // host 0 keeps its own address but reaches nothing, nothing reaches it
//   lab.Mend(0);
//
// Needs root and the `ip` command (iproute2); Unavailable() says why not, for a clear skip.
// Threading: not thread-safe.
#pragma once

#include <string>
#include <vector>

namespace rdmq::test {

class NetLab {
 public:
  // Empty when network namespaces can be made here, else the reason they cannot.
  static std::string Unavailable();

  NetLab();
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  // Makes the bridge and `hosts` namespaces; false with the failing command's output otherwise.
  bool Up(int hosts, std::string* error);
  int hosts() const { return static_cast<int>(names_.size()); }
  // The bridge's address (reachable from every host) and host i's.
  std::string gateway() const { return subnet_ + ".1"; }
  std::string address(int host) const { return subnet_ + "." + std::to_string(11 + host); }
  // The command prefix that runs a command in host i's namespace (the ip command's full path).
  std::vector<std::string> Prefix(int host) const;
  // Takes host i's link down (at the bridge's end) or brings it back; false if `ip` failed.
  bool Cut(int host);
  bool Mend(int host);

 private:
  std::string tag_;     // from the process id: names' suffix
  std::string subnet_;  // "10.a.b"
  std::string bridge_;
  std::vector<std::string> names_;  // namespaces
};

}  // namespace rdmq::test
