// Serve: registers one RPC handler written as `Result<Response> fn(ctx, const Request&)`. The
// request is decoded first (a malformed one is answered kInvalidRequest naming the API), then
// checked by its access rule, `Status rule(ctx, const Request&)` (an error is the answer); the
// handler's response is encoded as OK, its error as the error response.
//
// Every registration names its rule, so that a new RPC cannot forget authorization
// (docs/security.md, "Authorization"): one of Authorizer's (OnTopic, OnGroup, OnCluster), a
// handler-specific one, or Open / InHandler below.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "rdmq/common/status.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/server.h"

namespace rdmq::broker::internal {

// The rule of an RPC that needs no right beyond using the broker (Hello, giving a lease back).
struct Open {
  template <class Request>
  Status operator()(const rpc::RequestContext&, const Request&) const {
    return Status::Ok();
  }
};
// The rule of an RPC whose handler asks the Authorizer itself, because only it knows the resource
// (a lease's topic) or because it filters its answer (ListTopics, ListGroups).
struct InHandler : Open {};

// The answer of an RPC whose response has no body: Empty, or the error.
inline Result<protocol::Empty> Done(const Status& s) {
  if (!s.ok()) return s;
  return protocol::Empty{};
}

template <class Request, class Rule, class Fn>
Status Serve(rpc::Server& server, protocol::Api api, rpc::RunOn where, Rule rule, Fn fn) {
  return server.RegisterHandler(
      static_cast<uint16_t>(api),
      [api, rule = std::move(rule), fn = std::move(fn)](
          const rpc::RequestContext& ctx, std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
        auto req = protocol::Decode<Request>(bytes);
        if (!req.ok()) {
          resp.Append(protocol::EncodeError(
              protocol::WireError::kInvalidRequest,
              "malformed " + std::string(protocol::ApiName(api)) + " request: " + req.status().ToString()));
          return Status::Ok();
        }
        if (Status allowed = rule(ctx, *req); !allowed.ok()) {
          resp.Append(protocol::EncodeError(allowed));
          return Status::Ok();
        }
        auto r = fn(ctx, *req);
        if (r.ok()) {
          resp.Append(protocol::EncodeOk(*r));
        } else {
          resp.Append(protocol::EncodeError(r.status()));
        }
        return Status::Ok();
      },
      where);
}

}  // namespace rdmq::broker::internal
