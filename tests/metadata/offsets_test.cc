#include "rdmq/metadata/offsets.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "metadata/offsets_json.h"
#include "support/test_util.h"

namespace rdmq::metadata {
namespace {

using test::Slurp;

std::unique_ptr<OffsetStore> Open(const test::TempDir& dir, uint32_t checkpoint_every = 64) {
  auto s = OffsetStore::Open({dir.str(), checkpoint_every, true});
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(*s);
}

CommittedOffset At(int64_t offset, std::string metadata = "", int32_t epoch = -1) {
  return {offset, epoch, std::move(metadata), 1700000000000};
}

TEST_CASE("committed offsets survive a restart with metadata and leader epoch", "[offsets]") {
  test::TempDir dir;
  {
    auto store = Open(dir);
    REQUIRE_OK(store->Commit("g1", {{{"orders", 0}, At(10, "m0", 3)}, {{"orders", 1}, At(20)}}));
    REQUIRE_OK(store->Commit("g1", {{{"orders", 0}, At(15, "m1", 4)}}));
    REQUIRE_OK(store->Commit("g2", {{{"payments", 2}, At(7)}}));
  }
  auto store = Open(dir);
  const auto o = store->Fetch("g1", "orders", 0);
  REQUIRE(o.has_value());
  CHECK(*o == At(15, "m1", 4));
  CHECK(store->Fetch("g1", "orders", 1)->offset == 20);
  CHECK_FALSE(store->Fetch("g1", "orders", 2).has_value());
  CHECK_FALSE(store->Fetch("nope", "orders", 0).has_value());
  CHECK(store->FetchGroup("g1").size() == 2);
  CHECK(store->Groups() == std::vector<std::string>{"g1", "g2"});
}

TEST_CASE("bad commits are refused and change nothing", "[offsets]") {
  test::TempDir dir;
  auto store = Open(dir);
  REQUIRE_OK(store->Commit("g", {{{"t", 0}, At(5)}}));
  CHECK(store->Commit("", {{{"t", 0}, At(1)}}).is(MetadataErrc::kBadGroupId));
  CHECK(store->Commit("has space", {{{"t", 0}, At(1)}}).is(MetadataErrc::kBadGroupId));
  CHECK(store->Commit(std::string(256, 'g'), {{{"t", 0}, At(1)}}).is(MetadataErrc::kBadGroupId));
  CHECK(store->Commit("g", {{{"t", 0}, At(-1)}}).is(Errc::kInvalidArgument));
  CHECK(store->Commit("g", {{{"t", -1}, At(1)}}).is(Errc::kInvalidArgument));
  CHECK(store->Commit("g", {{{"t", 0}, At(1, std::string(kMaxOffsetMetadata + 1, 'm'))}})
            .is(Errc::kInvalidArgument));
  CHECK(store->Fetch("g", "t", 0)->offset == 5);
  store.reset();
  CHECK(Open(dir)->Fetch("g", "t", 0)->offset == 5);
}

TEST_CASE("deleting a group or a topic forgets its offsets durably", "[offsets]") {
  test::TempDir dir;
  {
    auto store = Open(dir);
    REQUIRE_OK(store->Commit("a", {{{"t1", 0}, At(1)}, {{"t2", 0}, At(2)}}));
    REQUIRE_OK(store->Commit("b", {{{"t1", 3}, At(3)}}));
    REQUIRE_OK(store->Commit("c", {{{"t2", 1}, At(4)}}));
    REQUIRE_OK(store->DeleteTopic("t1"));
    REQUIRE_OK(store->DeleteTopic("never-committed"));
    REQUIRE_OK(store->DeleteGroup("c"));
    CHECK(store->DeleteGroup("c").is(MetadataErrc::kNoSuchGroup));
  }
  auto store = Open(dir);
  CHECK(store->Groups() == std::vector<std::string>{"a"});  // b had only t1
  CHECK_FALSE(store->Fetch("a", "t1", 0).has_value());
  CHECK(store->Fetch("a", "t2", 0)->offset == 2);
}

TEST_CASE("checkpoints truncate the log and keep every commit", "[offsets]") {
  test::TempDir dir;
  {
    auto store = Open(dir, 4);
    for (int i = 0; i < 10; ++i) REQUIRE_OK(store->Commit("g", {{{"t", i % 3}, At(i)}}));
  }
  CHECK(std::filesystem::exists(dir.path() / "offsets.json"));
  CHECK(std::filesystem::file_size(dir.path() / "offsets.wal") < 4 * 200);
  auto store = Open(dir, 4);
  CHECK(store->Fetch("g", "t", 0)->offset == 9);
  CHECK(store->Fetch("g", "t", 1)->offset == 7);
  CHECK(store->Fetch("g", "t", 2)->offset == 8);
}

TEST_CASE("a torn last record is cut, corruption elsewhere is refused without changes", "[offsets]") {
  test::TempDir dir;
  {
    auto store = Open(dir);
    REQUIRE_OK(store->Commit("g", {{{"t", 0}, At(1)}}));
    REQUIRE_OK(store->Commit("g", {{{"t", 0}, At(2)}}));
  }
  const auto wal = dir.path() / "offsets.wal";
  const std::string good = Slurp(wal);
  SECTION("torn tail") {
    std::filesystem::resize_file(wal, good.size() - 3);
    auto store = Open(dir);
    CHECK(store->Fetch("g", "t", 0)->offset == 1);
  }
  SECTION("a flipped byte in the first record") {
    std::string bad = good;
    bad[20] ^= 0x40;
    std::ofstream(wal, std::ios::binary | std::ios::trunc) << bad;
    auto s = OffsetStore::Open({dir.str(), 64, true});
    CHECK(s.status().is(MetadataErrc::kCorruptLog));
    CHECK(Slurp(wal) == bad);
  }
  SECTION("a corrupt checkpoint") {
    std::ofstream(dir.path() / "offsets.json") << "{\"format\": 1, \"seq\": 1, \"groups\": [{\"group\": 5}]}";
    auto s = OffsetStore::Open({dir.str(), 64, true});
    CHECK(s.status().is(MetadataErrc::kCorruptCheckpoint));
    CHECK(Slurp(wal) == good);
  }
}

TEST_CASE("offset records decode only when every field is present and typed", "[offsets]") {
  using internal::DecodeOffsetMutation;
  CHECK(DecodeOffsetMutation(R"({"op":"delete_group","group":"g"})", "log", 1).ok());
  CHECK(DecodeOffsetMutation(R"({"op":"delete_topic","topic":"t"})", "log", 1).ok());
  const auto ok = DecodeOffsetMutation(
      R"({"op":"commit","group":"g","offsets":[{"topic":"t","partition":1,"offset":5,"leader_epoch":-1,"metadata":"x","commit_ms":3}]})",
      "log", 1);
  REQUIRE_OK(ok);
  CHECK(ok->offsets.at({"t", 1}).metadata == "x");
  for (
      const char* bad :
      {"", "[]", R"({"op":"commit","group":"g"})", R"({"op":"drop"})",
       R"({"op":"commit","group":"g","offsets":[{"topic":"t","partition":-1,"offset":5,"leader_epoch":-1,"metadata":"","commit_ms":3}]})",
       R"({"op":"commit","group":"g","offsets":[{"topic":"t","partition":1,"offset":"5","leader_epoch":-1,"metadata":"","commit_ms":3}]})"}) {
    INFO(bad);
    CHECK(DecodeOffsetMutation(bad, "log", 7).status().is(MetadataErrc::kCorruptLog));
  }
}

}  // namespace
}  // namespace rdmq::metadata
