// Error codes of the RPC layer (category "rpc"), mapped onto rdmq::Errc conditions.
//
// What a caller of rpc::Client::Call can see:
//   kUnknownHandler   the server has no handler registered under the id (an error response; the
//                     connection stays up)
//   kMessageTooLarge  the request (client side) or the response (server side) does not fit the
//                     largest message a ring takes (half the ring); nothing was sent
//   kTimedOut         no response before the call's deadline (a late response is dropped)
//   kDisconnected     the connection handle is broken: the server went away, closed the
//                     connection, or sent bytes that are not a valid message
//   kShutdown         the client or server is being destroyed
//   a handler's own error, carried back with its generic condition and message
// What the server logs and acts on (closing the offending connection only):
//   kCorruptMessage, kCreditViolation, kHandshake.
#pragma once

#include "rdmq/common/errors.h"

#define RDMQ_RPC_ERRORS(X)                                                                         \
  X(kUnknownHandler, kNotFound, "no RPC handler is registered under this id")                      \
  X(kMessageTooLarge, kInvalidArgument, "message larger than the ring allows")                     \
  X(kTimedOut, kTimeout, "RPC timed out waiting for the response")                                 \
  X(kDisconnected, kUnavailable, "the RPC connection is closed or the peer is gone")               \
  X(kShutdown, kCancelled, "the RPC client or server is shutting down")                            \
  X(kCorruptMessage, kCorruption, "malformed RPC message in a ring")                               \
  X(kCreditViolation, kFailedPrecondition, "the peer sent more requests than its credits allowed") \
  X(kHandshake, kCorruption, "RPC connection handshake failed")                                    \
  X(kTooManyThreads, kResourceExhausted, "too many threads use this RPC client")                   \
  X(kHandlerFailed, kInternal, "the RPC handler failed")
RDMQ_DEFINE_ERRORS(rdmq::rpc, RpcErrc, "rpc", RDMQ_RPC_ERRORS)
