// Session: one client, known by its RPC connection handle (client id), with its data endpoint
// once the data handshake bound it. SessionTable: every session, by client id and by endpoint.
//
// Threading: a Session's endpoint, receive accounting, lease ids and closed flag are guarded by
// its `mu` (which also serialises posting on the endpoint); its name by a leaf lock of its own.
// The table's lock is a leaf: nothing is locked under it (the data acceptor takes it inside a
// Session's `mu`).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/types.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::broker::internal {

class Partition;

struct Session {
  explicit Session(uint64_t id);

  const uint64_t client_id;
  const uint64_t data_token;  // random: the data endpoint handshake must present it
  // The client's name, as its last Hello said (a later Hello on the connection renames it).
  std::string Name() const EXCLUDES(name_mu_) {
    MutexLock lock(name_mu_);
    return name_;
  }
  void SetName(const std::string& name) EXCLUDES(name_mu_) {
    MutexLock lock(name_mu_);
    name_ = name;
  }
  // The user it logged in as (rpc_login.h); empty when the broker asks for no login.
  std::string User() const EXCLUDES(name_mu_) {
    MutexLock lock(name_mu_);
    return user_;
  }
  void SetUser(const std::string& user) EXCLUDES(name_mu_) {
    MutexLock lock(name_mu_);
    user_ = user;
  }
  // Who it acts as for ACLs (authorizer.h): its login, else the CN of the TLS client certificate
  // its control connection presented (rpc.security.protocol=SSL), else "" (ANONYMOUS).
  std::string Principal() const EXCLUDES(name_mu_) {
    MutexLock lock(name_mu_);
    return user_.empty() ? cert_user_ : user_;
  }
  void SetCertUser(std::string cn) EXCLUDES(name_mu_) {
    MutexLock lock(name_mu_);
    cert_user_ = std::move(cn);
  }
  // The data endpoint's id, 0 until bound; read without `mu` to tell whether it is bound.
  std::atomic<uint64_t> ep_id{0};
  // May use the broker: set by Hello when no login is asked, else by a successful
  // SaslAuthenticate (rpc_login.h). Never cleared: a new connection is a new session.
  std::atomic<bool> logged_in{false};

  Mutex mu;
  std::unique_ptr<fabric::Endpoint> ep GUARDED_BY(mu);  // bound by the data-endpoint handshake
  uint32_t recv_owed GUARDED_BY(mu) = 0;                // receives consumed and not yet reposted
  std::set<LeaseId> leases GUARDED_BY(mu);              // the leases it holds
  // Partitions it holds read grants of (read_grant.h), for EndSession to end them.
  std::vector<std::weak_ptr<Partition>> read_partitions GUARDED_BY(mu);
  bool closed GUARDED_BY(mu) = false;

  // True while the endpoint can post (bound and not closed).
  bool usable() const REQUIRES(mu) { return !closed && ep != nullptr; }
  // `n` receives were consumed: posts them again, 32 or more at a time.
  void Repost(uint32_t n) EXCLUDES(mu);

 private:
  mutable Mutex name_mu_;  // a leaf: nothing is locked under it
  std::string name_ GUARDED_BY(name_mu_);
  std::string user_ GUARDED_BY(name_mu_);
  std::string cert_user_ GUARDED_BY(name_mu_);
};

class SessionTable {
 public:
  // The session of `client_id`, made by its first Hello; a later Hello renames it.
  std::shared_ptr<Session> Hello(uint64_t client_id, const std::string& name) EXCLUDES(mu_);
  std::shared_ptr<Session> Find(uint64_t client_id) const EXCLUDES(mu_);
  // The session whose data endpoint has id `ep_id` (the commit poller's lookup).
  std::shared_ptr<Session> ByEndpoint(uint64_t ep_id) const EXCLUDES(mu_);
  // Records the session's endpoint id (before the client hears its handshake succeeded: its
  // first immediate may follow at once).
  void BindEndpoint(const std::shared_ptr<Session>& s, uint64_t ep_id) EXCLUDES(mu_);
  // Forgets the session of `client_id` (null if there was none).
  std::shared_ptr<Session> Remove(uint64_t client_id) EXCLUDES(mu_);
  std::vector<uint64_t> ClientIds() const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> by_client_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, std::shared_ptr<Session>> by_ep_ GUARDED_BY(mu_);
};

}  // namespace rdmq::broker::internal
