// Connection: the plumbing every rdmq client object (AdminClient, Producer, Consumer) shares,
// docs/protocol.md section 1. It opens a non-listening fabric of the provider the bootstrap
// address names, an RPC connection handle to the broker's control address, calls Hello, and
// (unless asked not to) connects one fabric endpoint to the broker's data address and binds it
// to this client with the data-endpoint handshake. Applications use AdminClient, Producer and
// Consumer; this header is for rdmq's own client libraries and tools.
//
// Ownership and lifetime: a Connection owns its fabric, RPC client, completion queues and data
// endpoint. RemoteRegions attached on data() must be destroyed before the Connection.
// Threading: Call/CallAsync are thread-safe (the RPC layer shares its channels). The data
// endpoint and its completion queues follow the fabric rules: one posting thread at a time
// (callers serialise with their own lock), one polling thread per queue at a time.
// Errors: kUnavailable (with the address) when the broker cannot be reached or went away;
// kInvalidArgument for an unparsable address; protocol::WireError codes from the broker's
// responses, with the broker's message.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rdmq/client/options.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/client.h"

namespace rdmq::client {

// "unix:/path" or a bare path → shm; "tcp:host:port" → tcp; "verbs:host:port" → verbs.
Result<fabric::Provider> ProviderOfAddress(std::string_view address);
// The address in the fabric's own form ("unix:/path" for a bare path).
std::string NormalizeAddress(std::string_view address);

struct ConnectionOptions {
  bool data_endpoint = true;  // AdminClient needs none
  uint32_t rpc_channels = 1;
  uint32_t max_send_wr = 1024;
  uint32_t max_recv_wr = 1024;
  size_t cq_depth = 4096;
};

class Connection {
 public:
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

  const protocol::HelloResponse& hello() const noexcept { return hello_; }
  const std::string& address() const noexcept { return address_; }
  const ClientOptions& options() const noexcept { return options_; }
  fabric::Fabric& fabric() noexcept { return *fabric_; }
  fabric::Provider provider() const noexcept { return provider_; }
  // The data endpoint and its queues (nullptr when opened without one).
  fabric::Endpoint* data() noexcept { return data_.get(); }
  fabric::CompletionQueue* send_cq() noexcept { return send_cq_.get(); }
  fabric::CompletionQueue* recv_cq() noexcept { return recv_cq_.get(); }
  // False once the RPC connection or the data endpoint broke.
  bool connected() const;

 private:
  Connection() = default;
  ClientOptions options_;
  std::string address_;
  fabric::Provider provider_ = fabric::Provider::kShm;
  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<rpc::Client> rpc_;
  protocol::HelloResponse hello_;
  std::unique_ptr<fabric::CompletionQueue> send_cq_;
  std::unique_ptr<fabric::CompletionQueue> recv_cq_;
  std::unique_ptr<fabric::Endpoint> data_;
};

}  // namespace rdmq::client
