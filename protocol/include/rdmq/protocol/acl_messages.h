// The ACL RPCs (docs/protocol.md, "ACLs"), field by field: CreateAcls, DeleteAcls, ListAcls.
// Same conventions as messages.h: each struct lists its fields once in Visit().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmq/protocol/codec.h"

namespace rdmq::protocol {

// One binding: `principal` ("User:NAME" or "User:*") is allowed or denied `operation` on the
// resource named `resource_name` (a literal name, "*", or a prefix). The enumerated fields travel
// as their names (any case), which the broker parses and refuses with INVALID_ACL naming the
// choices: permission allow | deny; operation read | write | create | delete | alter | describe |
// all; resource_type topic | group | cluster; pattern_type literal | prefixed.
struct AclEntry {
  std::string principal;
  std::string permission;
  std::string operation;
  std::string resource_type;
  std::string pattern_type;
  std::string resource_name;
  template <class V>
  void Visit(V& v) {
    v(principal);
    v(permission);
    v(operation);
    v(resource_type);
    v(pattern_type);
    v(resource_name);
  }
  bool operator==(const AclEntry&) const = default;
};

// --- CreateAcls (60), DeleteAcls (61) ---------------------------------------------------------
struct AclsRequest {
  std::vector<AclEntry> acls;  // each checked before any is stored: one bad entry stores none
  template <class V>
  void Visit(V& v) {
    v(acls);
  }
};
// How many of the request's bindings changed the store (the rest were there already, or absent).
struct AclsResponse {
  uint32_t changed = 0;
  template <class V>
  void Visit(V& v) {
    v(changed);
  }
};

// --- ListAcls (62): request empty ---------------------------------------------------------
struct ListAclsResponse {
  std::vector<AclEntry> acls;  // in a stable order
  template <class V>
  void Visit(V& v) {
    v(acls);
  }
};

}  // namespace rdmq::protocol
