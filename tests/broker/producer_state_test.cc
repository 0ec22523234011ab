// ProducerStateTable without a broker: states are set, rewound and rebuilt from batch headers;
// what a new range is checked against, the resume point and the fencing epoch are read back.
#include "broker/producer_state.h"

#include <catch2/catch.hpp>

namespace rdmq::broker::internal {
namespace {

storage::BatchHeader Header(int64_t producer, int16_t epoch, int32_t base_sequence, int32_t count,
                            bool control = false) {
  storage::BatchHeader h;
  h.producer_id = ProducerId(producer);
  h.producer_epoch = epoch;
  h.base_sequence = base_sequence;
  h.last_offset_delta = count - 1;
  h.record_count = count;
  if (control) h.attributes = storage::kAttrControl;
  return h;
}

TEST_CASE("an unknown producer starts fresh at its epoch", "[broker][producer_state]") {
  ProducerStateTable t;
  const ProducerState s = t.Expected(ProducerId(5), 3);
  CHECK(s.epoch == 3);
  CHECK(s.last_sequence == -1);
  CHECK(t.LastSequence(ProducerId(5), 3) == -1);
  CHECK_FALSE(t.Epoch(ProducerId(5)).has_value());
  CHECK(t.size() == 0);
}

TEST_CASE("a recorded state is continued at its epoch and restarted at another", "[broker][producer_state]") {
  ProducerStateTable t;
  t.Set(ProducerId(5), ProducerState{2, 41});
  CHECK(t.Expected(ProducerId(5), 2).last_sequence == 41);
  CHECK(t.LastSequence(ProducerId(5), 2) == 41);
  CHECK(t.Expected(ProducerId(5), 3).last_sequence == -1);  // a new epoch starts over
  CHECK(t.Expected(ProducerId(5), 3).epoch == 3);
  CHECK(t.LastSequence(ProducerId(5), 1) == -1);
  REQUIRE(t.Epoch(ProducerId(5)).has_value());
  CHECK(*t.Epoch(ProducerId(5)) == 2);
}

TEST_CASE("a dropped shared range rewinds the sequence to before it", "[broker][producer_state]") {
  ProducerStateTable t;
  t.Set(ProducerId(1), ProducerState{0, 29});
  t.Rewind(ProducerId(1), 20);
  CHECK(t.LastSequence(ProducerId(1), 0) == 19);
  t.Rewind(ProducerId(1), 25);  // beyond what is recorded: nothing to forget
  CHECK(t.LastSequence(ProducerId(1), 0) == 19);
  t.Rewind(ProducerId(1), -1);  // no sequence in the range
  CHECK(t.LastSequence(ProducerId(1), 0) == 19);
  t.Rewind(ProducerId(2), 0);  // unknown producer
  CHECK_FALSE(t.Epoch(ProducerId(2)).has_value());
}

TEST_CASE("rebuilding from batch headers keeps the newest epoch's last sequence",
          "[broker][producer_state]") {
  ProducerStateTable t;
  t.Observe(Header(1, 0, 0, 10));
  t.Observe(Header(1, 0, 10, 5));
  t.Observe(Header(2, 4, 100, 1));
  t.Observe(Header(1, 1, 0, 3));    // a new epoch
  t.Observe(Header(1, 0, 15, 5));   // an older epoch's batch after it changes nothing
  t.Observe(Header(-1, 0, -1, 7));  // not idempotent
  t.Observe(Header(2, 4, 0, 1, /*control=*/true));
  CHECK(t.size() == 2);
  CHECK(*t.Epoch(ProducerId(1)) == 1);
  CHECK(t.LastSequence(ProducerId(1), 1) == 2);
  CHECK(t.LastSequence(ProducerId(2), 4) == 100);
  t.Clear();
  CHECK(t.size() == 0);
}

TEST_CASE("the recent batches answer a retry of any request inside a range stored at once",
          "[broker][producer_state]") {
  ProducerStateTable t;
  // Sequences 10..19 stored at offsets 100..109 (three pipelined requests appended together).
  t.NoteBatch(ProducerId(1), 0, {10, 19, Offset(100)});
  CHECK(t.FindBatch(ProducerId(1), 0, 10, 19) == Offset(100));
  CHECK(t.FindBatch(ProducerId(1), 0, 10, 12) == Offset(100));
  CHECK(t.FindBatch(ProducerId(1), 0, 13, 17) == Offset(103));
  CHECK(t.FindBatch(ProducerId(1), 0, 18, 19) == Offset(108));
  CHECK_FALSE(t.FindBatch(ProducerId(1), 0, 18, 20).has_value());  // reaches past the range
  CHECK_FALSE(t.FindBatch(ProducerId(1), 0, 5, 10).has_value());
  CHECK_FALSE(t.FindBatch(ProducerId(1), 1, 10, 12).has_value());  // another epoch
  CHECK_FALSE(t.FindBatch(ProducerId(2), 0, 10, 12).has_value());
}

}  // namespace
}  // namespace rdmq::broker::internal
