// Serve: registers one RPC handler written as `Result<Response> fn(ctx, const Request&)`. The
// request is decoded first (a malformed one is answered kInvalidRequest naming the API); the
// handler's response is encoded as OK, its error as the error response.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "rdmq/common/status.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/server.h"

namespace rdmq::broker::internal {

template <class Request, class Fn>
Status Serve(rpc::Server& server, protocol::Api api, rpc::RunOn where, Fn fn) {
  return server.RegisterHandler(
      static_cast<uint16_t>(api),
      [api, fn = std::move(fn)](const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                                rpc::ResponseBuffer& resp) {
        auto req = protocol::Decode<Request>(bytes);
        if (!req.ok()) {
          resp.Append(protocol::EncodeError(
              protocol::WireError::kInvalidRequest,
              "malformed " + std::string(protocol::ApiName(api)) + " request: " + req.status().ToString()));
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
