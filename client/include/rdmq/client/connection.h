// Connection: the plumbing every rdmq client object (AdminClient, Producer, Consumer) shares,
// docs/protocol.md section 1. It opens a non-listening fabric of the provider the bootstrap
// address names, an RPC connection handle to the broker's control address, calls Hello, and
// (unless asked not to) connects one fabric endpoint to the broker's data address and binds it
// to this client with the data-endpoint handshake. Applications use AdminClient, Producer and
// Consumer; this header is for rdmq's own client libraries and tools.
//
// When the broker goes away (connected() turns false), Dial + Install (or Reconnect) connect
// again, to the first bootstrap server that answers, keeping the fabric, its registered memory
// and the completion queues; the client then reopens what it had (leases, locations).
//
// Ownership and lifetime: a Connection owns its fabric, RPC client, completion queues and data
// endpoint. RemoteRegions attached on data() must be destroyed before the Connection (and before
// an Install replaces that endpoint).
// Threading: Call/CallAsync/connected()/address() are thread-safe, also while another thread
// installs a new link (a call in progress finishes on the old one). The data endpoint and its
// completion queues follow the fabric rules: one posting thread at a time (callers serialise
// with their own lock), one polling thread per queue at a time.
// Errors: kUnavailable (with the address) when the broker cannot be reached or went away;
// kInvalidArgument for an unparsable address; protocol::WireError codes from the broker's
// responses, with the broker's message.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/client/options.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/client.h"

namespace rdmq::client {

// "unix:/path" or a bare path → shm; "tcp:host:port" → tcp; "verbs:host:port" → verbs.
Result<fabric::Provider> ProviderOfAddress(std::string_view address);
// The address in the fabric's own form ("unix:/path" for a bare path).
std::string NormalizeAddress(std::string_view address);
// The fabric's TLS settings from security.protocol and the ssl.* keys (off for PLAINTEXT);
// kInvalidArgument naming the key for TLS to a broker that is not on tcp, or a certificate
// without its key.
Result<fabric::TlsOptions> TlsOptionsOf(const ClientOptions& options, fabric::Provider provider);

struct ConnectionOptions {
  bool data_endpoint = true;  // AdminClient needs none
  uint32_t rpc_channels = 1;
  uint32_t max_send_wr = 1024;
  uint32_t max_recv_wr = 1024;
  size_t cq_depth = 4096;
};

class Connection {
 public:
  // Opens the fabric (and the data endpoint's completion queues) and connects to the first
  // bootstrap server that answers, trying them in order.
  static Result<std::unique_ptr<Connection>> Open(const ClientOptions& client,
                                                  const ConnectionOptions& options = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One RPC: encodes `request`, waits up to the request timeout, decodes the response header
  // (a broker error becomes the Status) and the body.
  template <class Resp, class Req>
  Result<Resp> Call(protocol::Api api, const Req& request) const {
    RDMQ_ASSIGN_OR_RETURN(std::string bytes, CallRaw(api, protocol::Encode(request)));
    return protocol::DecodeResponse<Resp>(std::as_bytes(std::span(bytes.data(), bytes.size())));
  }
  // The raw response bytes (header + body) of one RPC.
  Result<std::string> CallRaw(protocol::Api api, std::string_view request) const;
  // Sends the request and returns; `done` gets the raw response bytes (or the RPC error) on the
  // RPC layer's response thread. An error returned here means `done` is never called.
  Status CallAsync(protocol::Api api, std::string_view request, rpc::Client::Callback done) const;

  // --- Reconnecting (docs/protocol.md, "Clients when the broker fails").
  // A connection to one broker: its RPC connection handle, its Hello, and the data endpoint
  // (on this Connection's completion queues). Callers only carry it from Dial to Install.
  struct Link {
    std::string address;
    std::shared_ptr<rpc::Client> rpc;
    protocol::HelloResponse hello;
    std::unique_ptr<fabric::Endpoint> data;
  };
  // Connects anew, trying every bootstrap server in order once: RPC connection, Hello, data
  // endpoint and its handshake. The current link is untouched. Thread-safe; one Dial at a time
  // is the caller's business. kUnavailable naming every server tried when none answers.
  Result<std::unique_ptr<Link>> Dial() const;
  // The same, to one broker's control address (one the cluster named: a group's coordinator),
  // whether or not it is a bootstrap server.
  Result<std::unique_ptr<Link>> DialAt(const std::string& address) const;
  // Makes `link` the current one and destroys the old (its RPC handle once no Call uses it).
  // The fabric, its regions and the completion queues stay: memory registered on the fabric
  // stays valid. The caller guarantees that no thread uses data() meanwhile and that nothing
  // attached to or granted on the old endpoint (RemoteRegion, Grant) is left. The new endpoint
  // has no receives posted. Completions of the old endpoint may still be in the queues
  // (Completion::endpoint_id tells them apart).
  void Install(std::unique_ptr<Link> link);
  // Dial, then Install: for single-threaded clients.
  Status Reconnect();
  // Links installed so far (1 after Open; each Install adds one).
  uint64_t generation() const;

  // The current broker's Hello (replaced by Install: read it from the thread that installs).
  const protocol::HelloResponse& hello() const noexcept { return hello_; }
  // The current broker's control address (one of the bootstrap servers).
  std::string address() const;
  // The bootstrap servers, in the order they are tried.
  const std::vector<std::string>& servers() const noexcept { return servers_; }
  const ClientOptions& options() const noexcept { return options_; }
  fabric::Fabric& fabric() noexcept { return *fabric_; }
  fabric::Provider provider() const noexcept { return provider_; }
  // The data endpoint and its queues (nullptr when opened without one). The queues live as long
  // as the Connection; the endpoint is replaced by Install.
  fabric::Endpoint* data() noexcept { return data_.get(); }
  fabric::CompletionQueue* send_cq() noexcept { return send_cq_.get(); }
  fabric::CompletionQueue* recv_cq() noexcept { return recv_cq_.get(); }
  // False once the RPC connection or the data endpoint broke (until a new link is installed).
  bool connected() const;

 private:
  Connection() = default;
  std::shared_ptr<rpc::Client> rpc() const;
  // The SCRAM login after Hello when the broker asks for one (sasl.* options).
  Status LogIn(Link& link) const;

  ClientOptions options_;
  ConnectionOptions conn_options_;
  std::vector<std::string> servers_;
  fabric::Provider provider_ = fabric::Provider::kShm;
  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<fabric::CompletionQueue> send_cq_;
  std::unique_ptr<fabric::CompletionQueue> recv_cq_;
  protocol::HelloResponse hello_;
  mutable Mutex mu_;  // the current link's parts, for threads that do not install
  std::string address_ GUARDED_BY(mu_);
  std::shared_ptr<rpc::Client> rpc_ GUARDED_BY(mu_);
  std::unique_ptr<fabric::Endpoint> data_;  // written under mu_ by Install; see data()
  uint64_t generation_ GUARDED_BY(mu_) = 0;
};

}  // namespace rdmq::client
