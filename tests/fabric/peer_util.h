// Helpers shared by the fabric conformance tests and their peer process (fabric_test_peer):
// listen addresses per provider, spawning and reaping peers, waiting for completions.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::test {

// A listen address for `p`: shm "unix:<dir>/<name>.sock", tcp "127.0.0.1:0", verbs
// $RDMQ_VERBS_LISTEN or ":0" (the first IPv4 address of the device's port).
std::string ListenAddress(Provider p, const std::string& dir, const std::string& name);
// The fabric_test_peer binary beside the running executable.
std::string PeerBinary();
// Starts `PeerBinary() args...` with posix_spawn (no fork of this address space).
pid_t SpawnPeer(const std::vector<std::string>& args);
// Waits for a child: its exit code, 128+signal if killed, -1 on timeout.
int WaitChild(pid_t pid, std::chrono::milliseconds timeout);
// Polls `cq` until `n` completions arrived or `timeout` passed; returns what arrived.
std::vector<Completion> PollCompletions(CompletionQueue& cq, size_t n, std::chrono::milliseconds timeout);

}  // namespace rdmq::fabric::test
