// Internal: the connect handshake of an RPC channel and the layout of the regions it exchanges
// (docs/rpc.md, "Connecting"). Sent as the first control message on each channel's endpoint.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::rpc::internal {

// Region layouts. A ring region is a 4 KiB control page followed by the ring.
inline constexpr uint64_t kControlPage = 4096;
inline constexpr uint64_t kHeadOffset = 0;      // ring region: the consumer's head (u64)
inline constexpr uint64_t kRenewalOffset = 64;  // request region: WRITE_WITH_IMM target (u64)
// A process's wake region (one per Server, one per Client), shared by all its channels.
inline constexpr uint64_t kParkedOffset = 0;     // u64: 1 while its poller sleeps
inline constexpr uint64_t kDoorbellOffset = 64;  // u64: bumped (fetch_add) to wake the poller
inline constexpr uint64_t kWakeRegionBytes = 4096;
// A staging region mirrors the ring it feeds, plus a scratch page for READ/atomic results.
inline constexpr uint64_t kScratchHead = 0;       // READ of the peer's head lands here
inline constexpr uint64_t kScratchAtomic = 64;    // fetch_add results
inline constexpr uint64_t kScratchRenewal = 128;  // source of the renewal WRITE_WITH_IMM

inline constexpr char kMagic[8] = {'r', 'd', 'm', 'q', '-', 'r', 'p', 'c'};
inline constexpr uint8_t kHandshakeVersion = 1;
inline constexpr uint32_t kMaxChannelsPerClient = 256;
inline constexpr uint64_t kMinRingBytes = 4096;

enum class HelloKind : uint8_t { kNew = 1, kJoin = 2 };

// client -> server
struct Hello {
  HelloKind kind = HelloKind::kNew;
  uint16_t channel = 0;                      // this endpoint's channel index
  uint32_t channels = 1;                     // channels the handle will open
  uint64_t client_id = 0;                    // kJoin: from the Welcome of channel 0
  uint64_t token = 0;                        // kJoin: from the Welcome of channel 0
  uint64_t request_ring = 0;                 // wanted request ring size (server memory)
  uint64_t response_ring = 0;                // response ring size (client memory)
  fabric::RegionDescriptor response_region;  // control page + response ring (remote read+write)
  fabric::RegionDescriptor wake_region;      // the client's wake region (remote read+atomic)
};

// server -> client
struct Welcome {
  uint16_t error = 0;  // 0: accepted; else an Errc value, `message` says why
  std::string message;
  uint64_t client_id = 0;
  uint64_t token = 0;
  uint32_t credits = 0;  // C
  bool active = true;
  uint64_t credit_limit = 0;                // initial cumulative limit
  uint64_t request_ring = 0;                // the request ring's actual size
  fabric::RegionDescriptor request_region;  // control page + request ring (remote read+write)
  fabric::RegionDescriptor wake_region;     // the server's wake region (remote read+atomic)
};

std::string EncodeHello(const Hello& h);
Result<Hello> DecodeHello(std::string_view bytes);
std::string EncodeWelcome(const Welcome& w);
Result<Welcome> DecodeWelcome(std::string_view bytes);

}  // namespace rdmq::rpc::internal
