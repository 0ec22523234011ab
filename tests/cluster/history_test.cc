// The history checker of the multi-node tests (support/history.h) finds each kind of violation
// it is built for, and passes a good history.
#include "support/history.h"

#include <catch2/catch.hpp>

namespace rdmq::test {
namespace {

bool Mentions(const History::Verdict& v, const std::string& text) {
  for (const auto& p : v.problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("history: a good history passes, with its counts", "[cluster][history]") {
  History h;
  h.Acknowledged(0, 0, "a-1");
  h.Acknowledged(0, 1, "a-2");
  h.Acknowledged(1, 0, "b-1");
  h.Read(0, {{0, "a-1"}, {1, "a-2"}});
  h.Read(0, {{1, "a-2"}, {2, "a-3"}});  // a-3's acknowledgement never came: fine
  h.Final(0, {{0, "a-1"}, {1, "a-2"}, {2, "a-3"}});
  h.Final(1, {{0, "b-1"}});
  const History::Verdict v = h.Check();
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged == 3);
  CHECK(v.final_records == 4);
  CHECK(v.read == 8);
}

TEST_CASE("history: an acknowledged record missing or replaced in the final log is lost",
          "[cluster][history]") {
  History h;
  h.Acknowledged(0, 0, "a-1");
  h.Acknowledged(0, 1, "a-2");
  h.Acknowledged(0, 2, "a-3");
  h.Acknowledged(3, 0, "z-1");
  h.Final(0, {{0, "a-1"}, {1, "x-9"}});
  const History::Verdict v = h.Check();
  CHECK_FALSE(v.ok());
  CHECK(Mentions(v, "'a-2' at partition 0 offset 1 is lost: the final log has 'x-9'"));
  CHECK(Mentions(v, "'a-3' at partition 0 offset 2 is lost: the final log has nothing"));
  CHECK(Mentions(v, "the partition was never read"));
  CHECK(v.problems.size() == 3);
}

TEST_CASE("history: two records at one offset, and a read later truncated, are found", "[cluster][history]") {
  History h;
  h.Read(0, {{0, "a-1"}, {1, "old-1"}});  // read from a deposed leader
  h.Read(0, {{0, "a-1"}, {1, "new-1"}});
  h.Final(0, {{0, "a-1"}, {1, "new-1"}});
  const History::Verdict v = h.Check();
  CHECK(Mentions(v, "two records read at partition 0 offset 1: 'new-1' and 'old-1'"));
  CHECK(Mentions(v, "'old-1' was read at partition 0 offset 1 and later truncated away"));

  History t;  // read past what the final log kept
  t.Read(2, {{0, "a-1"}, {1, "a-2"}});
  t.Final(2, {{0, "a-1"}});
  CHECK(Mentions(t.Check(), "'a-2' was read at partition 2 offset 1 and later truncated away"));
}

TEST_CASE("history: offsets that do not rise and a writer's records out of order are found",
          "[cluster][history]") {
  History h;
  h.Read(0, {{0, "a-1"}, {2, "a-3"}, {1, "a-2"}});
  h.Final(0, {{0, "a-1"}, {1, "a-2"}, {2, "a-3"}});
  CHECK(Mentions(h.Check(), "went from offset 2 to 1"));

  History w;  // a-2 stored before a-1: reordered
  w.Final(0, {{0, "b-1"}, {1, "a-2"}, {2, "a-1"}, {3, "b-2"}});
  const History::Verdict v = w.Check();
  CHECK(Mentions(v, "writer a's record 1 came after its record 2 in partition 0 offset 2"));
  CHECK(v.problems.size() == 1);  // b's records are in order; values without "-<n>" are not judged
}

}  // namespace
}  // namespace rdmq::test
