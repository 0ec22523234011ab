// PartitionLog::PrepareSpare: the next segment's file made ahead of the roll, used by it, never
// left behind (Close deletes it, Open deletes a stray one), refused without room for it.
#include <future>
#include <thread>

#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"
#include "storage_test_util.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::ReadAll;

namespace {

constexpr const char* kSpare = "/p/spare.seg.tmp";

LogOptions Small(uint64_t segment_bytes = 64 << 10) {
  LogOptions o;
  o.segment_bytes = segment_bytes;
  o.persist = PersistMode::kMsync;
  o.index_interval_bytes = 512;
  o.topic = TopicId(7);
  o.partition = PartitionId(3);
  return o;
}

std::unique_ptr<PartitionLog> OpenOk(Env* env, const LogOptions& o) {
  auto log = PartitionLog::Open(env, "/p", o);
  REQUIRE_OK(log.status());
  return std::move(*log);
}

// A MemEnv whose gradual allocation (the spare's) waits until the test lets it go on.
class GatedEnv : public MemEnv {
 public:
  std::promise<void> entered, go;
  Result<std::unique_ptr<MappedFile>> CreateMappedGradually(const std::string& path, size_t size,
                                                            size_t step) override {
    auto file = MemEnv::CreateMappedGradually(path, size, step);
    entered.set_value();
    go.get_future().wait();
    return file;
  }
};

std::string Value(int64_t offset) { return "value-" + std::to_string(offset); }

void Append(PartitionLog& log, int n) {
  std::vector<std::string> values;
  const int64_t first = log.HighWatermark().value();
  for (int i = 0; i < n; ++i) values.push_back(Value(first + i));
  std::vector<RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
  REQUIRE_OK(log.Append(recs).status());
}

void CheckValues(const PartitionLog& log, int64_t count) {
  const auto all = ReadAll(log);
  REQUIRE(static_cast<int64_t>(all.size()) == count);
  for (int64_t i = 0; i < count; ++i) CHECK(all[static_cast<size_t>(i)].value == Value(i));
}

}  // namespace

TEST_CASE("a spare made ahead becomes the next segment at the roll", "[log][spare]") {
  MemEnv env;
  auto log = OpenOk(&env, Small());
  CHECK(!log->HasSpare());
  auto made = log->PrepareSpare();
  REQUIRE_OK(made.status());
  CHECK(*made);
  CHECK(log->HasSpare());
  REQUIRE(env.FileExists(kSpare));
  CHECK(*env.FileSize(kSpare) == (64u << 10));
  // One at a time: a second call makes none.
  made = log->PrepareSpare();
  REQUIRE_OK(made.status());
  CHECK(!*made);

  Append(*log, 5);
  REQUIRE_OK(log->Roll());
  CHECK(!log->HasSpare());
  CHECK(!env.FileExists(kSpare));  // renamed into the new segment
  REQUIRE(env.FileExists("/p/00000000000000000005.seg"));
  const SegmentInfo a = log->ActiveSegment();
  CHECK(a.base_offset == Offset(5));
  CHECK(a.capacity == (64u << 10) - format::kSegmentHeaderSize);
  Append(*log, 5);
  CheckValues(*log, 10);

  // The segment made from the spare is a segment like any other after a reopen.
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, Small());
  CHECK(log->Segments().size() == 2);
  CheckValues(*log, 10);
}

TEST_CASE("a spare is never left behind", "[log][spare]") {
  MemEnv env;
  auto log = OpenOk(&env, Small());
  Append(*log, 3);

  SECTION("a spare of the old size is dropped when the segment size changed") {
    REQUIRE(*log->PrepareSpare());
    LogOptions bigger = Small(128 << 10);
    REQUIRE_OK(log->Reconfigure(bigger));
    REQUIRE_OK(log->Roll());
    CHECK(!env.FileExists(kSpare));
    CHECK(log->ActiveSegment().capacity == (128u << 10) - format::kSegmentHeaderSize);
    Append(*log, 3);
    CheckValues(*log, 6);
  }
  SECTION("Close deletes an unused spare") {
    REQUIRE(*log->PrepareSpare());
    REQUIRE_OK(log->Close());
    CHECK(!env.FileExists(kSpare));
    auto after = log->PrepareSpare();  // closed: none
    REQUIRE_OK(after.status());
    CHECK(!*after);
  }
  SECTION("Open deletes a stray spare (a crash before Close) and the log is as it was") {
    REQUIRE_OK(log->Close());
    {
      auto stray = env.CreateMapped(kSpare, 64 << 10);
      REQUIRE_OK(stray.status());
      std::memset((*stray)->data(), 0x5a, (*stray)->size());  // whatever a crash left in it
    }
    log = OpenOk(&env, Small());
    CHECK(!env.FileExists(kSpare));
    CHECK(log->Segments().size() == 1);
    CheckValues(*log, 3);
  }
}

TEST_CASE("no spare without room for two more segments, and the roll still works", "[log][spare]") {
  // Room for the first segment, the slot and a little more than one more segment.
  MemEnv env(160 << 10);
  auto log = OpenOk(&env, Small());
  Append(*log, 3);
  auto made = log->PrepareSpare();
  REQUIRE_OK(made.status());
  CHECK(!*made);
  CHECK(!env.FileExists(kSpare));
  REQUIRE_OK(log->Roll());
  Append(*log, 3);
  CheckValues(*log, 6);
}

TEST_CASE("Close waits for a spare being made and leaves no file behind", "[log][spare]") {
  GatedEnv env;
  auto log = OpenOk(&env, Small());
  Append(*log, 3);
  auto made = std::async(std::launch::async, [&] { return log->PrepareSpare(); });
  env.entered.get_future().wait();  // the spare's file exists, its call is under way
  CHECK(env.FileExists(kSpare));
  auto closed = std::async(std::launch::async, [&] { return log->Close(); });
  // Close must not finish while the spare is being made: it waits for the call.
  CHECK(closed.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  env.go.set_value();
  REQUIRE_OK(closed.get());
  auto r = made.get();
  REQUIRE_OK(r.status());
  CHECK(!*r);  // of no use to a closing log
  CHECK(!env.FileExists(kSpare));
  log = OpenOk(&env, Small());
  CheckValues(*log, 3);
}
