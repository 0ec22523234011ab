// LeaseTable without a broker: leases are reserved, published, found and removed; the ids,
// indexes (slot and reuse count) and errors that come out are checked. No fabric, no threads.
#include <catch2/catch.hpp>
#include <memory>
#include <set>

#include "broker/lease.h"
#include "broker/session.h"
#include "rdmq/protocol/data_plane.h"

namespace rdmq::broker::internal {
namespace {

using protocol::WireError;

std::shared_ptr<Lease> NewLease(const std::shared_ptr<Session>& s) {
  auto l = std::make_shared<Lease>();
  l->session = s;
  return l;
}

TEST_CASE("a reserved lease gets an id and a slot, and is found once published", "[broker][lease]") {
  LeaseTable t(4);
  auto s = std::make_shared<Session>(7);
  auto l = NewLease(s);
  REQUIRE(t.Reserve(l).ok());
  CHECK(l->id == LeaseId(1));
  CHECK(protocol::LeaseSlot(l->index) < 4);
  CHECK(l->index >> protocol::kLeaseSlotBits == 0);  // first use of the slot
  // Reserved: the data plane finds it by index, requests do not find it by id yet.
  CHECK(t.ByIndex(l->index) == l);
  CHECK(t.ById(l->id) == nullptr);
  CHECK(t.Find(l->id, 7).status().is(WireError::kLeaseExpired));
  t.Publish(l);
  auto found = t.Find(l->id, 7);
  REQUIRE(found.ok());
  CHECK(*found == l);
  CHECK(t.size() == 1);
}

TEST_CASE("another client's lease is not found", "[broker][lease]") {
  LeaseTable t(4);
  auto l = NewLease(std::make_shared<Session>(7));
  REQUIRE(t.Reserve(l).ok());
  t.Publish(l);
  auto r = t.Find(l->id, 8);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().is(WireError::kLeaseExpired));
  CHECK(r.status().ToString().find("another client") != std::string::npos);
  CHECK(t.Find(LeaseId(99), 7).status().is(WireError::kLeaseExpired));
}

TEST_CASE("every slot taken: kUnavailable, a removed lease frees its slot with a new reuse count",
          "[broker][lease]") {
  LeaseTable t(2);
  auto s = std::make_shared<Session>(1);
  auto a = NewLease(s);
  auto b = NewLease(s);
  auto c = NewLease(s);
  REQUIRE(t.Reserve(a).ok());
  REQUIRE(t.Reserve(b).ok());
  CHECK(protocol::LeaseSlot(a->index) != protocol::LeaseSlot(b->index));
  CHECK(t.Reserve(c).is(WireError::kUnavailable));
  t.Publish(a);
  t.Publish(b);

  const uint32_t old_index = a->index;
  t.Remove(*a);
  CHECK(t.ById(a->id) == nullptr);
  CHECK(t.ByIndex(old_index) == nullptr);
  REQUIRE(t.Reserve(c).ok());
  // The same slot, told apart by its reuse count: an immediate for the old index finds nothing.
  CHECK(protocol::LeaseSlot(c->index) == protocol::LeaseSlot(old_index));
  CHECK(c->index != old_index);
  CHECK(c->index >> protocol::kLeaseSlotBits == 1);
  CHECK(t.ByIndex(old_index) == nullptr);
  CHECK(t.ByIndex(c->index) == c);
  CHECK(c->id == LeaseId(3));  // ids are never reused
}

TEST_CASE("removing a lease whose slot went to another leaves the other alone", "[broker][lease]") {
  LeaseTable t(1);
  auto s = std::make_shared<Session>(1);
  auto a = NewLease(s);
  auto b = NewLease(s);
  REQUIRE(t.Reserve(a).ok());
  t.Publish(a);
  t.Remove(*a);
  REQUIRE(t.Reserve(b).ok());
  t.Publish(b);
  t.Remove(*a);  // again: a stale caller
  CHECK(t.ByIndex(b->index) == b);
  CHECK(t.ById(b->id) == b);
  CHECK(t.Reserve(NewLease(s)).is(WireError::kUnavailable));
}

TEST_CASE("ids are distinct across many reservations", "[broker][lease]") {
  LeaseTable t(8);
  auto s = std::make_shared<Session>(1);
  std::set<uint64_t> ids;
  for (int i = 0; i < 100; ++i) {
    auto l = NewLease(s);
    REQUIRE(t.Reserve(l).ok());
    t.Publish(l);
    ids.insert(l->id.value());
    t.Remove(*l);
  }
  CHECK(ids.size() == 100);
  CHECK(t.size() == 0);
}

}  // namespace
}  // namespace rdmq::broker::internal
