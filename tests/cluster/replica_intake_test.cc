// A follower's checks on a range its leader WROTE into its log (cluster/replica_intake.h): it
// takes whole, CRC-valid batches that continue its log, stamped with epochs that never go back
// and never pass the writer's, through a lease of the current epoch; anything else is refused
// with the reason, and the follower's epoch cache is left as it was.
#include "rdmq/cluster/replica_intake.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "rdmq/storage/errors.h"
#include "rdmq/storage/record_batch.h"
#include "support/test_util.h"

namespace rdmq::cluster {
namespace {

// One batch of `records` records at `base`, stamped with leader epoch `epoch`.
std::string Batch(int64_t base, int32_t epoch, int records = 3) {
  std::vector<std::string> values;
  for (int i = 0; i < records; ++i) values.push_back("value-" + std::to_string(base + i));
  std::vector<storage::RecordInput> in;
  for (const auto& v : values) in.push_back({std::nullopt, v, {}, TimestampMs(1000)});
  storage::BatchOptions o;
  o.base_offset = Offset(base);
  o.leader_epoch = epoch;
  return storage::EncodeBatch(o, in);
}

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

ReplicaRangeFacts Facts(int64_t log_end, int32_t writer, int32_t current) {
  return {Offset(log_end), writer, current, 1 << 20};
}

TEST_CASE("replica intake: whole batches that continue the log are taken, epochs observed",
          "[cluster][replication]") {
  LeaderEpochs cache;
  REQUIRE_OK(cache.Observe(1, Offset(0)));
  // Old epochs first (the new leader replicating what an earlier leader wrote), then its own.
  const std::string range = Batch(10, 1) + Batch(13, 2, 2) + Batch(15, 4, 5);
  auto r = CheckReplicaRange(Bytes(range), Facts(10, 4, 4), cache);
  REQUIRE_OK(r);
  CHECK(r->end == Offset(20));
  CHECK(r->batches == 3);
  CHECK(r->epochs.entries() ==
        std::vector<LeaderEpochs::Entry>{{1, Offset(0)}, {2, Offset(13)}, {4, Offset(15)}});
  CHECK(cache.latest() == 1);  // the caller's cache is untouched; it swaps in r->epochs
}

TEST_CASE("replica intake: a deposed leader's range is fenced, a newer one waits", "[cluster][replication]") {
  const std::string range = Batch(0, 3);
  auto old = CheckReplicaRange(Bytes(range), Facts(0, 3, 4), {});
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().is(Errc::kFailedPrecondition));
  CHECK_THAT(old.status().ToString(), Catch::Contains("fenced"));
  auto ahead = CheckReplicaRange(Bytes(range), Facts(0, 5, 4), {});
  REQUIRE_FALSE(ahead.ok());
  CHECK(ahead.status().is(Errc::kFailedPrecondition));
  CHECK_THAT(ahead.status().ToString(), Catch::Contains("retry"));
}

TEST_CASE("replica intake: offsets must continue the log exactly", "[cluster][replication]") {
  const auto gap = CheckReplicaRange(Bytes(Batch(12, 1)), Facts(10, 1, 1), {});
  REQUIRE_FALSE(gap.ok());
  CHECK(gap.status().is(storage::StorageErrc::kOffsetMismatch));
  const auto overlap = CheckReplicaRange(Bytes(Batch(8, 1)), Facts(10, 1, 1), {});
  CHECK(overlap.status().is(storage::StorageErrc::kOffsetMismatch));
  // The second batch of a range must start where the first ended.
  const std::string two = Batch(10, 1, 3) + Batch(14, 1);
  const auto inner = CheckReplicaRange(Bytes(two), Facts(10, 1, 1), {});
  REQUIRE_FALSE(inner.ok());
  CHECK(inner.status().is(storage::StorageErrc::kOffsetMismatch));
  CHECK_THAT(inner.status().ToString(), Catch::Contains("offset 14"));
}

TEST_CASE("replica intake: epochs are stamped, not above the writer's, and never go back",
          "[cluster][replication]") {
  LeaderEpochs cache;
  REQUIRE_OK(cache.Observe(3, Offset(0)));
  const auto unstamped = CheckReplicaRange(Bytes(Batch(5, -1)), Facts(5, 3, 3), cache);
  CHECK(unstamped.status().is(Errc::kInvalidArgument));
  const auto above = CheckReplicaRange(Bytes(Batch(5, 4)), Facts(5, 3, 3), cache);
  CHECK(above.status().is(Errc::kInvalidArgument));
  const auto back = CheckReplicaRange(Bytes(Batch(5, 2)), Facts(5, 3, 3), cache);
  CHECK(back.status().is(Errc::kInvalidArgument));
  const std::string down = Batch(5, 3) + Batch(8, 2);
  CHECK(CheckReplicaRange(Bytes(down), Facts(5, 3, 3), cache).status().is(Errc::kInvalidArgument));
  CHECK(cache.latest() == 3);
}

TEST_CASE("replica intake: torn, corrupt, oversized and empty ranges are refused", "[cluster][replication]") {
  const std::string good = Batch(0, 1) + Batch(3, 1);
  // Torn: the second batch does not end inside the range.
  const auto torn = CheckReplicaRange(Bytes(good.substr(0, good.size() - 5)), Facts(0, 1, 1), {});
  CHECK_FALSE(torn.ok());
  // A flipped byte anywhere in a batch is refused: the CRC covers everything from the
  // attributes on; the base offset, length, leader epoch, magic and CRC fields are judged by
  // their own rules.
  const std::string one = Batch(0, 1);
  for (size_t i = 0; i < one.size(); ++i) {
    std::string bad = one;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    if (CheckReplicaRange(Bytes(bad), Facts(0, 1, 1), {}).ok())
      FAIL("a flipped byte at " << i << " was taken");
  }
  ReplicaRangeFacts small = Facts(0, 1, 1);
  small.max_batch_bytes = one.size() - 1;
  CHECK(CheckReplicaRange(Bytes(one), small, {}).status().is(Errc::kInvalidArgument));
  CHECK(CheckReplicaRange({}, Facts(0, 1, 1), {}).status().is(Errc::kInvalidArgument));
  CHECK_FALSE(CheckReplicaRange(Bytes(std::string(40, '\0')), Facts(0, 1, 1), {}).ok());
}

}  // namespace
}  // namespace rdmq::cluster
