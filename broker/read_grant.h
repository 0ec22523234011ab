// ReadGrant: one client's READ access to one registered region of a partition (its slot or a
// segment). With authorizer.enabled, consumers get these instead of the shared read-only
// descriptors, so that one client's access can end on its own: when an ACL no longer lets its
// user read the topic (the broker's revocation sweep), or when the client goes away. On verbs
// it is a memory window bound on the client's QP, on tcp a key that only the client's connection
// may use, on shm a key the importer checks when it attaches (an shm reader parses the mapping in
// place afterwards, and revocation cannot unmap it: docs/fabric.md, "Limits").
//
// Threading: made, kept and destroyed under its partition's lock; the fabric grant is made and
// revoked under the session's lock too, which serialises the use of the endpoint.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "session.h"

namespace rdmq::broker::internal {

class ReadGrant {
 public:
  // Read access to [0, length) of `region` for the session's data endpoint. kInvalidRequest
  // when the client has no data endpoint (yet), kUnavailable when it is closed.
  static Result<std::unique_ptr<ReadGrant>> Make(std::shared_ptr<Session> session, fabric::Region& region,
                                                 uint64_t length);
  ~ReadGrant();  // revokes
  ReadGrant(const ReadGrant&) = delete;
  ReadGrant& operator=(const ReadGrant&) = delete;

  const std::string& descriptor() const { return descriptor_; }  // encoded
  const std::shared_ptr<Session>& session() const { return session_; }

 private:
  ReadGrant(std::shared_ptr<Session> s, std::unique_ptr<fabric::Grant> g);

  std::shared_ptr<Session> session_;  // declared first: it outlives the grant on its endpoint
  std::unique_ptr<fabric::Grant> grant_;
  std::string descriptor_;
};

// A region's read grants, by client id.
using ReadGrants = std::map<uint64_t, std::unique_ptr<ReadGrant>>;

}  // namespace rdmq::broker::internal
