// Closing connection handles: liveness checks, and the one place a handle is closed (for a
// protocol error, a failed write, a dead peer, Disconnect, or Stop).
#include <string>
#include <utility>
#include <vector>

#include "rdmq/common/log.h"
#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

std::shared_ptr<SChannel> ServerImpl::ByEndpoint(uint64_t ep_id) {
  MutexLock g(reg_mu_);
  auto it = by_ep_.find(ep_id);
  return it == by_ep_.end() ? nullptr : it->second;
}

void ServerImpl::CheckLiveness() {
  std::vector<std::pair<uint64_t, std::string>> gone;
  {
    MutexLock g(reg_mu_);
    for (const auto& [id, c] : conns_) {
      for (const auto& ch : c->channels) {
        if (ch && (!ch->ep->connected() || ch->closed.load())) {
          gone.emplace_back(id, "channel " + std::to_string(ch->index) + ": the client went away");
          break;
        }
      }
    }
  }
  for (const auto& [id, why] : gone) CloseConn(id, why, false);
}

void ServerImpl::CloseConn(uint64_t client_id, const std::string& why, bool protocol_error) {
  std::shared_ptr<Conn> conn;
  {
    MutexLock g(reg_mu_);
    auto it = conns_.find(client_id);
    if (it == conns_.end()) return;
    conn = it->second;
    conns_.erase(it);
    for (const auto& ch : conn->channels) {
      if (ch) by_ep_.erase(ch->ep_id);
    }
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  // Count and log first: the peer may observe the close right away.
  n_.connections_closed.fetch_add(1);
  if (protocol_error) {
    n_.protocol_errors.fetch_add(1);
    RDMQ_LOG(kError, "rpc", "closing a connection that broke the protocol")
        .kv("client_id", client_id)
        .kv("peer", conn->peer)
        .kv("why", why);
  } else {
    RDMQ_LOG(kInfo, "rpc", "connection closed")
        .kv("client_id", client_id)
        .kv("peer", conn->peer)
        .kv("why", why);
  }
  for (const auto& ch : conn->channels) {
    if (!ch) continue;
    ch->closed.store(true, std::memory_order_release);
    SpinGuard g(ch->mu);
    ch->ep->Close();
  }
  if (on_disconnect_) on_disconnect_(client_id);
}

}  // namespace rdmq::rpc::internal
