#include "session.h"

#include <openssl/rand.h>

namespace rdmq::broker::internal {
namespace {
uint64_t NewToken() {
  uint64_t t = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&t), sizeof t) != 1)
    std::abort();  // no entropy: unsafe to go on
  return t;
}
}  // namespace

Session::Session(uint64_t id) : client_id(id), data_token(NewToken()) {}

void Session::Repost(uint32_t n) {
  MutexLock slock(mu);
  recv_owed += n;
  if (recv_owed < 32 || !usable()) return;
  std::vector<fabric::RecvRequest> rr(recv_owed);
  if (ep->PostRecv(rr).ok()) recv_owed = 0;
}

std::shared_ptr<Session> SessionTable::Hello(uint64_t client_id, const std::string& name) {
  MutexLock lock(mu_);
  auto& s = by_client_[client_id];
  if (!s) s = std::make_shared<Session>(client_id);
  s->SetName(name);
  return s;
}

std::shared_ptr<Session> SessionTable::Find(uint64_t client_id) const {
  MutexLock lock(mu_);
  auto it = by_client_.find(client_id);
  return it == by_client_.end() ? nullptr : it->second;
}

std::shared_ptr<Session> SessionTable::ByEndpoint(uint64_t ep_id) const {
  MutexLock lock(mu_);
  auto it = by_ep_.find(ep_id);
  return it == by_ep_.end() ? nullptr : it->second;
}

void SessionTable::BindEndpoint(const std::shared_ptr<Session>& s, uint64_t ep_id) {
  s->ep_id.store(ep_id);
  MutexLock lock(mu_);
  by_ep_[ep_id] = s;
}

std::shared_ptr<Session> SessionTable::Remove(uint64_t client_id) {
  MutexLock lock(mu_);
  auto it = by_client_.find(client_id);
  if (it == by_client_.end()) return nullptr;
  std::shared_ptr<Session> s = std::move(it->second);
  by_client_.erase(it);
  if (const uint64_t ep = s->ep_id.load(); ep != 0) by_ep_.erase(ep);
  return s;
}

std::vector<uint64_t> SessionTable::ClientIds() const {
  MutexLock lock(mu_);
  std::vector<uint64_t> ids;
  ids.reserve(by_client_.size());
  for (const auto& [id, s] : by_client_) ids.push_back(id);
  return ids;
}

size_t SessionTable::size() const {
  MutexLock lock(mu_);
  return by_client_.size();
}

}  // namespace rdmq::broker::internal
