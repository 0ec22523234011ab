#include "rdmq/common/status.h"

#include <catch2/catch.hpp>

#include "rdmq/common/errors.h"
#include "rdmq/common/types.h"

#define TEST_ERRORS(X)                               \
  X(kBadThing, kCorruption, "a bad thing was found") \
  X(kGone, kUnavailable, "the peer went away")
RDMQ_DEFINE_ERRORS(rdmq::testns, TestErrc, "testmod", TEST_ERRORS)

namespace rdmq {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status(Errc::kInvalidArgument, "odd: " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  RDMQ_ASSIGN_OR_RETURN(int h, Half(x));
  RDMQ_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

Status Chain(int x) {
  int q;
  RDMQ_RETURN_IF_ERROR(Quarter(x, &q));
  return Status::Ok();
}

TEST_CASE("an OK status is ok and prints OK", "[status]") {
  Status s;
  CHECK(s.ok());
  CHECK(s.ToString() == "OK");
  CHECK(s.context().empty());
}

TEST_CASE("module codes map onto generic conditions", "[status]") {
  Status s(testns::TestErrc::kBadThing, "segment 7 position 4096");
  CHECK_FALSE(s.ok());
  CHECK(s.is(testns::TestErrc::kBadThing));
  CHECK_FALSE(s.is(testns::TestErrc::kGone));
  CHECK(s.is(Errc::kCorruption));
  CHECK_FALSE(s.is(Errc::kUnavailable));
  CHECK(s.ToString() == "segment 7 position 4096: a bad thing was found [testmod:1]");
  CHECK(Status(testns::TestErrc::kGone).is(Errc::kUnavailable));
}

TEST_CASE("errno maps onto generic conditions", "[status]") {
  CHECK(Status::FromErrno(ENOSPC, "write").is(Errc::kNoSpace));
  CHECK(Status::FromErrno(ENOENT, "open").is(Errc::kNotFound));
  CHECK(Status::FromErrno(ECONNRESET, "recv").is(Errc::kUnavailable));
  CHECK(Status::FromErrno(EIO, "read").is(Errc::kIoError));
  CHECK(Status::FromErrno(ENOSPC, "write /d/x").ToString().rfind("write /d/x: ", 0) == 0);
}

TEST_CASE("context can be added on the way up", "[status]") {
  Status inner(Errc::kCorruption, "position 12");
  Status outer = inner.WithContext("segment 5");
  CHECK(outer.context() == "segment 5: position 12");
  CHECK(outer.is(Errc::kCorruption));
  CHECK(Status().WithContext("x").ok());
}

TEST_CASE("Result carries a value or an error, and the macros propagate", "[status]") {
  auto r = Half(10);
  REQUIRE(r.ok());
  CHECK(*r == 5);
  auto e = Half(3);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().is(Errc::kInvalidArgument));
  CHECK(e.value_or(-1) == -1);

  int q = 0;
  CHECK(Quarter(12, &q).ok());
  CHECK(q == 3);
  Status s = Chain(6);  // 6 -> 3 is odd
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.context() == "odd: 3");
  CHECK(Chain(8).ok());
}

TEST_CASE("strong types keep arithmetic within a kind", "[types]") {
  Offset a{10};
  Offset b = a + 5;
  CHECK(b - a == 5);
  CHECK(b > a);
  ++a;
  CHECK(a.value() == 11);
  Position p{4096};
  p += 100;
  CHECK(p.value() == 4196);
  CHECK(kNoOffset.value() == -1);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<Position, Offset>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<int64_t, Offset>);
  STATIC_REQUIRE(sizeof(Offset) == sizeof(int64_t));
}

}  // namespace
}  // namespace rdmq
