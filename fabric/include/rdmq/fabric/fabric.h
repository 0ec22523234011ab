// rdmq fabric: one-sided operations (WRITE, WRITE_WITH_IMM, READ, FETCH_ADD, COMPARE_SWAP) and
// small SENDs between processes, behind one interface with three providers:
//
//   shm    processes on one host. Regions are memfds or files (DAX or emulating it); region file
//          descriptors travel over a Unix socket (SCM_RIGHTS). A WRITE is a copy into the peer's
//          mapping, a READ a copy out, atomics are CPU atomics on the shared word. Read-only
//          grants are mapped read-only, so the kernel enforces them.
//   tcp    hosts without an RDMA device. Each process runs an agent thread (a software NIC) that
//          serves READ/WRITE/atomic requests against its registered regions, checking key, rights
//          and bounds; application threads never see them.
//   verbs  rdma-core: RC QPs set up with librdmacm, MRs, type-2 memory windows for grants.
//
// The model is the verbs model, so code written against it maps 1:1 onto RDMA:
//   * A Fabric is one provider instance in a process (verbs: a device context + PD). It creates
//     Regions (registered local memory), CompletionQueues and Endpoints.
//   * An Endpoint is a reliable, ordered connection to one peer (verbs: an RC QP). Work requests
//     are posted in batches (one doorbell per batch); signalled ones produce one Completion on the
//     endpoint's send CQ; unsignalled ones produce none unless they fail. Operations on one
//     endpoint take effect in posting order: a later WRITE never becomes visible before an earlier
//     one, and the data of a WRITE_WITH_IMM is visible before its immediate is delivered.
//   * A RegionDescriptor is a serialisable capability {provider, node, key, base, length, access}
//     for remote access to a region (or to part of it, through a Grant). A peer turns it into a
//     RemoteRegion with Endpoint::Attach and targets it with remote offsets.
//   * Every connection starts with a bootstrap stream (a Unix socket for shm, TCP otherwise) that
//     stays open for the endpoint's life: it carries control messages (SendControl/RecvControl)
//     and tells each side promptly when the peer dies.
//
// Threading: Fabric methods are thread-safe. An Endpoint is thread-compatible: one thread at a
// time may Post/PostRecv on it (the RPC layer's leader). A CompletionQueue is polled by one thread
// at a time. Regions and RemoteRegions are immutable after creation and may be shared.
// Lifetimes: Regions and CompletionQueues must outlive every Endpoint that uses them; a
// RemoteRegion must not outlive its Endpoint.
//
// Errors (rdmq::fabric::FabricErrc, mapped onto rdmq::Errc): kBadKey (PermissionDenied),
// kAccessDenied (PermissionDenied), kOutOfBounds (OutOfRange), kUnaligned (InvalidArgument),
// kPeerGone (Unavailable), kQueueFull (ResourceExhausted), kRevoked (PermissionDenied),
// kNoDevice (Unsupported), kRegistration (Unsupported), kProtocol (Corruption), kBadDescriptor,
// kWrongProvider (InvalidArgument), kRnr (ResourceExhausted), kFlushed (Unavailable), kTooLong
// (InvalidArgument), kTls (PermissionDenied). A failed operation changes no byte of its target.
// Provider guarantees, limits and byte formats: docs/fabric.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"

#define RDMQ_FABRIC_ERRORS(X)                                                              \
  X(kBadKey, kPermissionDenied, "unknown or invalid remote key")                           \
  X(kAccessDenied, kPermissionDenied, "the key does not grant this access")                \
  X(kOutOfBounds, kOutOfRange, "remote address outside the region")                        \
  X(kUnaligned, kInvalidArgument, "atomic target is not 8-byte aligned")                   \
  X(kPeerGone, kUnavailable, "peer closed the connection or died")                         \
  X(kQueueFull, kResourceExhausted, "too many outstanding work requests")                  \
  X(kRevoked, kPermissionDenied, "the grant was revoked")                                  \
  X(kNoDevice, kUnsupported, "no RDMA device is available")                                \
  X(kRegistration, kUnsupported, "memory cannot be registered with this provider")         \
  X(kProtocol, kCorruption, "malformed message from the peer")                             \
  X(kBadDescriptor, kInvalidArgument, "malformed region descriptor")                       \
  X(kWrongProvider, kInvalidArgument, "descriptor or address belongs to another provider") \
  X(kRnr, kResourceExhausted, "no receive buffer posted at the peer")                      \
  X(kFlushed, kUnavailable, "not executed: the connection failed earlier")                 \
  X(kTooLong, kInvalidArgument, "message longer than the receive buffer or kMaxSendSize")  \
  X(kTls, kPermissionDenied, "TLS failed: handshake refused, peer not trusted, or a bad record")
RDMQ_DEFINE_ERRORS(rdmq::fabric, FabricErrc, "fabric", RDMQ_FABRIC_ERRORS)

namespace rdmq::fabric {

enum class Provider : uint8_t { kShm = 1, kTcp = 2, kVerbs = 3 };

// Largest SEND payload on every provider (a receive buffer must be at least as long as the
// SEND it takes; a longer SEND fails with kTooLong).
inline constexpr size_t kMaxSendSize = size_t{64} * 1024;
std::string_view ProviderName(Provider p) noexcept;
// "shm", "tcp", "verbs".
Result<Provider> ParseProvider(std::string_view name);

// Access rights of a registration or grant (bit set).
enum Access : uint32_t {
  kLocalWrite = 1u << 0,
  kRemoteRead = 1u << 1,
  kRemoteWrite = 1u << 2,
  kRemoteAtomic = 1u << 3,
};

// Capability for remote access to [base, base+length) of a peer's memory. `base` is the address
// of the first byte in the owner's address space (as RDMA's remote address); remote offsets in
// work requests are relative to it. `node` is the owner's bootstrap address
// ("unix:/path", "tcp:host:port", "verbs:host:port"). Byte format: docs/fabric.md.
struct RegionDescriptor {
  Provider provider = Provider::kShm;
  uint32_t access = 0;
  uint64_t key = 0;
  uint64_t base = 0;
  uint64_t length = 0;
  std::string node;

  std::string Encode() const;
  static Result<RegionDescriptor> Decode(std::span<const std::byte> bytes);
  bool operator==(const RegionDescriptor&) const = default;
};

// A registered range of local memory. Created by Fabric::Allocate or Fabric::Register.
class Region {
 public:
  virtual ~Region() = default;
  virtual std::byte* data() const noexcept = 0;
  virtual size_t size() const noexcept = 0;
  virtual uint32_t access() const noexcept = 0;
  // A descriptor for the whole region with the access it was registered with, valid for any peer
  // until the region is destroyed.
  virtual RegionDescriptor Descriptor() const = 0;
  // A descriptor for the whole region with fewer rights (e.g. read-only for consumers).
  virtual Result<RegionDescriptor> Descriptor(uint32_t access) const = 0;
  // Wakes threads (of any process) sleeping in WaitWhileEqual on the 8-byte word at `offset`
  // (shm: futex wake on the shared mapping; tcp/verbs: wakes local sleepers only, and remote
  // peers are notified by the application, e.g. with a WRITE_WITH_IMM or SEND).
  virtual void Wake(uint64_t offset) noexcept = 0;
  // Blocks while the local 8-byte word at `offset` (8-byte aligned) equals `expected`, up to
  // `timeout`: OK when it differs or a wake arrived (callers recheck), kTimeout otherwise.
  virtual Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) = 0;
};

// A peer's region attached to an endpoint.
class RemoteRegion {
 public:
  virtual ~RemoteRegion() = default;
  virtual const RegionDescriptor& descriptor() const noexcept = 0;
  // shm only: blocks while the 8-byte word at `offset` equals `expected`, up to `timeout`
  // (futex on the shared mapping). Returns OK when the word differs or a wake arrived,
  // kTimeout otherwise; kUnsupported on tcp and verbs, where the owner notifies with a SEND.
  virtual Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) = 0;
  // shm only: wakes the owner's (and other peers') sleepers on the word at `offset` (futex wake).
  // kUnsupported on tcp and verbs: wake the owner with a WRITE_WITH_IMM or SEND instead.
  virtual Status Wake(uint64_t offset) = 0;
  // shm only: the local mapping of the remote region (nullptr elsewhere). Lets same-host code
  // (benchmarks, the consumer's zero-copy path) read in place; all writes still go through Post.
  virtual const std::byte* mapped() const noexcept = 0;
  // Whether the owner has revoked the key this region was attached with, as far as can be told
  // without an operation: shm looks at the owner's key page (one load), so that code reading the
  // mapping in place can notice; tcp and verbs say false (the next operation fails instead).
  virtual bool revoked() const noexcept { return false; }
};

// A revocable, peer-scoped capability on part of a region (verbs: a type-2 memory window bound to
// the range; tcp/shm: a key the owner's side checks). Destroying it revokes it.
class Grant {
 public:
  virtual ~Grant() = default;
  virtual const RegionDescriptor& descriptor() const noexcept = 0;
  // After Revoke returns, every operation with this grant's key fails with kRevoked or kBadKey.
  virtual Status Revoke() = 0;
};

enum class Opcode : uint8_t {
  kWrite = 1,
  kWriteImm = 2,
  kRead = 3,
  kFetchAdd = 4,
  kCompareSwap = 5,
  kSend = 6,
  kRecv = 7,  // completion of a posted receive (a SEND or WRITE_WITH_IMM arrived)
};
std::string_view OpcodeName(Opcode op) noexcept;

// Local memory for an operation. `region` is required on verbs (for the lkey) unless the data is
// sent inline; the other providers ignore it.
struct LocalBuffer {
  void* addr = nullptr;
  size_t length = 0;
  const Region* region = nullptr;
};

struct WorkRequest {
  Opcode opcode = Opcode::kWrite;
  uint64_t tag = 0;                      // returned in the completion
  bool signaled = true;                  // false: no completion unless the operation fails
  LocalBuffer local;                     // WRITE/SEND: source; READ: destination; atomics: 8-byte result
                                         // (atomics: addr may be null when the old value is not wanted)
  const RemoteRegion* remote = nullptr;  // not used by SEND
  uint64_t remote_offset = 0;            // relative to remote->descriptor().base
  uint32_t imm = 0;                      // WRITE_IMM: delivered to the peer's receive completion
  uint64_t operand = 0;                  // FETCH_ADD: addend; COMPARE_SWAP: expected value
  uint64_t swap = 0;                     // COMPARE_SWAP: new value
};

struct RecvRequest {
  uint64_t tag = 0;
  LocalBuffer buffer;  // receives a SEND's bytes; unused (may be empty) for WRITE_IMM
};

struct Completion {
  uint64_t tag = 0;
  Opcode opcode = Opcode::kWrite;
  std::error_code status;  // empty on success; a FabricErrc otherwise
  uint32_t byte_len = 0;   // READ/RECV: bytes transferred
  uint32_t imm = 0;        // RECV of a WRITE_IMM (or SEND with immediate): the immediate
  bool has_imm = false;
  uint64_t endpoint_id = 0;  // Endpoint::id() of the endpoint it belongs to
};

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  // Non-blocking: fills up to out.size() completions, returns how many.
  virtual size_t Poll(std::span<Completion> out) = 0;
  // Blocks until a completion may be available or `timeout` passes (returns kTimeout). Never
  // spins a core: verbs uses a completion channel, shm a futex, tcp a condition variable.
  virtual Status Wait(std::chrono::nanoseconds timeout) = 0;
};

struct EndpointOptions {
  CompletionQueue* send_cq = nullptr;  // required
  CompletionQueue* recv_cq = nullptr;  // required if the endpoint receives SENDs or immediates
  uint32_t max_send_wr = 256;          // outstanding work requests (Post fails with kQueueFull)
  uint32_t max_recv_wr = 256;
  uint32_t max_inline = 64;  // verbs: inline data up to this size
  std::chrono::milliseconds connect_timeout{5000};
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual uint64_t id() const noexcept = 0;
  virtual Provider provider() const noexcept = 0;
  // The peer's bootstrap address (the connecting side) or its socket address (accepting side).
  virtual const std::string& peer() const noexcept = 0;
  // tcp with TLS: the common name (CN) of the certificate the peer presented and this side
  // verified (a listener's client certificate, a connector's server certificate); "" without
  // TLS or without such a certificate.
  virtual const std::string& peer_identity() const noexcept = 0;
  // False once the peer is known to be gone or Close() was called.
  virtual bool connected() const noexcept = 0;

  // Posts a batch with one doorbell. Either the whole batch is accepted (OK) or none of it (an
  // error: kQueueFull, kPeerGone, kFlushed, kInvalidArgument/kTooLong for a malformed request).
  // Remote failures (bad key, bounds, rights, peer death) arrive as error completions, signalled
  // or not. The local buffers of a posted operation must stay valid and unchanged until it
  // completes (verbs rule; tcp may send from them after Post returns). On verbs, an error the
  // NIC reports ends the connection (later posts: kFlushed); bounds, rights and alignment
  // against the attached descriptor are checked before posting, so those mistakes do not.
  virtual Status Post(std::span<const WorkRequest> wrs) = 0;
  virtual Status PostRecv(std::span<const RecvRequest> rrs) = 0;

  // Turns a peer's descriptor into a target for work requests (shm: fetches and maps the file
  // descriptor, read-only unless the key grants write).
  virtual Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& desc) = 0;
  // Grants this endpoint's peer `access` to [offset, offset+length) of a local region.
  virtual Result<std::unique_ptr<Grant>> GrantAccess(Region& region, uint64_t offset, uint64_t length,
                                                     uint32_t access) = 0;

  // Reliable, ordered control messages over the bootstrap stream (setup, descriptor exchange;
  // not the fast path). Messages up to 1 MiB.
  virtual Status SendControl(std::span<const std::byte> message) = 0;
  // Waits up to `timeout` for the next control message; kTimeout or kPeerGone otherwise.
  virtual Result<std::string> RecvControl(std::chrono::nanoseconds timeout) = 0;

  // Disconnects. Outstanding operations complete with kPeerGone. Idempotent.
  virtual void Close() = 0;
};

// TLS on the tcp provider (docs/fabric.md, "tcp: TLS"): every connection of the fabric is
// encrypted, the accepted ones as the TLS server and the dialled ones as the client; TLS 1.2 or
// later (OpenSSL). Off by default, and then nothing of it runs. shm and verbs refuse it
// (kUnsupported).
struct TlsOptions {
  bool enabled = false;
  // PEM files: this side's certificate chain and its (unencrypted) private key. A listening
  // fabric needs them; a connecting one presents them as its client certificate when given.
  std::string certificate;
  std::string key;
  // PEM CA certificates the peer's certificate must chain to. Connecting: empty uses the system's
  // default CAs. Listening: needed when client certificates are asked for.
  std::string ca;
  // Listening: client certificates. kRequested checks one when the client sends it; kRequired
  // refuses a client without one (the handshake fails).
  enum class ClientAuth : uint8_t { kNone, kRequested, kRequired };
  ClientAuth client_auth = ClientAuth::kNone;
  // Connecting: verify the server's certificate chain against `ca` (false: encryption without
  // authentication of the server; for tests and throwaway setups only).
  bool verify_peer = true;
  // Connecting (with verify_peer): the server's certificate must name the host being dialled (a
  // DNS name or an IP address, as the address gives it), or `server_name` when set.
  bool verify_name = true;
  std::string server_name;
};

struct FabricOptions {
  Provider provider = Provider::kShm;
  // Bootstrap listener: shm: a Unix socket path; tcp/verbs: "host:port" (port 0 picks one).
  // Empty: this fabric only connects out.
  std::string listen;
  std::string device;  // verbs: device name (empty: the first with an active port)
  TlsOptions tls;      // tcp only
};

class Fabric {
 public:
  virtual ~Fabric() = default;
  static Result<std::unique_ptr<Fabric>> Open(const FabricOptions& options);

  virtual Provider provider() const noexcept = 0;
  // This fabric's bootstrap address ("unix:/path", "tcp:host:port", "verbs:host:port"), or ""
  // when it does not listen.
  virtual std::string address() const = 0;

  // Allocates and registers `size` bytes of zeroed memory (shm: a memfd; elsewhere anonymous
  // pages), page aligned.
  virtual Result<std::unique_ptr<Region>> Allocate(size_t size, uint32_t access) = 0;
  // Registers existing memory: `addr` must map [file_offset, file_offset+size) of `fd` with
  // MAP_SHARED (shm requires the fd; tcp/verbs use only the address range). The fabric dups the
  // fd (shm: one opened read-only also serves read-only keys, with no second descriptor); the
  // caller keeps the mapping alive while the Region lives.
  virtual Result<std::unique_ptr<Region>> Register(void* addr, size_t size, int fd, uint64_t file_offset,
                                                   uint32_t access) = 0;

  virtual Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t depth) = 0;

  // Connects to a listening fabric at `address` (as returned by its address()).
  virtual Result<std::unique_ptr<Endpoint>> Connect(std::string_view address,
                                                    const EndpointOptions& opts) = 0;
  // Waits up to `timeout` for the next incoming connection.
  virtual Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                                   std::chrono::nanoseconds timeout) = 0;
};

}  // namespace rdmq::fabric
