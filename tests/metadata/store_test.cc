#include "rdmq/metadata/store.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "metadata/wal.h"
#include "support/test_util.h"
#include "tests/metadata/open_store.h"

namespace rdmq::metadata {
namespace {

using test::Slurp;
using test::Spit;

TEST_CASE("topics survive a restart with their ids and configs", "[store]") {
  test::TempDir dir;
  TopicConfig c;
  c.partitions = 3;
  TopicId orders_id{0};
  {
    auto store = OpenStore(dir);
    auto t = store->CreateTopic("orders", c);
    REQUIRE_OK(t);
    orders_id = t->id;
    REQUIRE_OK(store->CreateTopic("payments", TopicConfig{}));
    CHECK(store->CreateTopic("orders", c).status().is(MetadataErrc::kTopicExists));
    CHECK(store->CreateTopic("bad name", c).status().is(MetadataErrc::kBadTopicName));
    REQUIRE_OK(store->DeleteTopic("payments"));
    CHECK(store->DeleteTopic("payments").is(MetadataErrc::kNoSuchTopic));
    c.partitions = 5;
    REQUIRE_OK(store->AlterTopic("orders", c));
    c.partitions = 2;
    CHECK(store->AlterTopic("orders", c).status().is(MetadataErrc::kBadConfig));
  }
  auto store = OpenStore(dir);
  auto topics = store->ListTopics();
  REQUIRE(topics.size() == 1);
  CHECK(topics[0].name == "orders");
  CHECK(topics[0].id == orders_id);
  CHECK(topics[0].config.partitions == 5);
  CHECK(store->FindTopicById(orders_id).has_value());
  // Ids are never reused, even for deleted topics.
  auto next = store->CreateTopic("payments", TopicConfig{});
  REQUIRE_OK(next);
  CHECK(next->id.value() > orders_id.value() + 1);
}

TEST_CASE("checkpoints truncate the log and replay skips what they cover", "[store]") {
  test::TempDir dir;
  {
    auto store = OpenStore(dir, /*checkpoint_every=*/4);
    for (int i = 0; i < 10; ++i) REQUIRE_OK(store->CreateTopic("t" + std::to_string(i), TopicConfig{}));
    CHECK(store->last_seq() == 10);
  }
  CHECK(std::filesystem::exists(dir / "metadata.json"));
  // 10 mutations with a checkpoint every 4: the log holds only the last 2.
  auto replay = wal::Replay((dir / "metadata.wal").string());
  REQUIRE_OK(replay);
  CHECK(replay->records.size() == 2);
  auto store = OpenStore(dir, 4);
  CHECK(store->ListTopics().size() == 10);
  CHECK(store->last_seq() == 10);
}

TEST_CASE("records already in the checkpoint are skipped (crash between rename and truncate)", "[store]") {
  test::TempDir dir;
  std::string wal_before;
  {
    auto store = OpenStore(dir, 1000);
    REQUIRE_OK(store->CreateTopic("a", TopicConfig{}));
    REQUIRE_OK(store->CreateTopic("b", TopicConfig{}));
    wal_before = Slurp(dir / "metadata.wal");
    REQUIRE_OK(store->Checkpoint());
  }
  Spit(dir / "metadata.wal", wal_before);  // as if the truncate never happened
  auto store = OpenStore(dir);
  CHECK(store->ListTopics().size() == 2);
  CHECK(store->last_seq() == 2);
}

TEST_CASE("a torn final record is cut off, corruption in the middle is an error that changes nothing",
          "[store]") {
  test::TempDir dir;
  {
    auto store = OpenStore(dir);
    for (int i = 0; i < 3; ++i) REQUIRE_OK(store->CreateTopic("t" + std::to_string(i), TopicConfig{}));
  }
  const std::string good = Slurp(dir / "metadata.wal");

  SECTION("torn tail") {
    Spit(dir / "metadata.wal", good.substr(0, good.size() - 5));
    auto store = OpenStore(dir);
    CHECK(store->ListTopics().size() == 2);
    REQUIRE_OK(store->CreateTopic("after", TopicConfig{}));
    auto again = OpenStore(dir);
    CHECK(again->GetTopic("after").ok());
    CHECK(again->ListTopics().size() == 3);
  }
  SECTION("zero-filled tail after a crash") {
    Spit(dir / "metadata.wal", good + std::string(4096, '\0'));
    auto store = OpenStore(dir);
    CHECK(store->ListTopics().size() == 3);
  }
  SECTION("flipped bit in the first record") {
    std::string bad = good;
    bad[wal::kHeaderSize + 3] ^= 0x10;
    Spit(dir / "metadata.wal", bad);
    auto store = MetadataStore::Open({dir.str(), 64, true});
    REQUIRE_FALSE(store.ok());
    CHECK(store.status().is(MetadataErrc::kCorruptLog));
    CHECK(store.status().ToString().find("byte 0") != std::string::npos);
    CHECK(Slurp(dir / "metadata.wal") == bad);  // not one byte changed
  }
  SECTION("corrupt checkpoint") {
    {
      auto store = OpenStore(dir);
      REQUIRE_OK(store->Checkpoint());
    }
    Spit(dir / "metadata.json", "{\"format\": 1, \"seq\": ");
    auto store = MetadataStore::Open({dir.str(), 64, true});
    REQUIRE_FALSE(store.ok());
    CHECK(store.status().is(MetadataErrc::kCorruptCheckpoint));
    CHECK(store.status().is(Errc::kCorruption));
    CHECK(Slurp(dir / "metadata.json") == "{\"format\": 1, \"seq\": ");
  }
}

TEST_CASE("producer ids are unique across restarts", "[store]") {
  test::TempDir dir;
  int64_t last = -1;
  for (int run = 0; run < 3; ++run) {
    auto store = OpenStore(dir);
    for (int i = 0; i < 1500; ++i) {
      auto id = store->AllocateProducerId();
      REQUIRE_OK(id);
      CHECK(id->value() > last);
      last = id->value();
    }
  }
}

}  // namespace
}  // namespace rdmq::metadata
