// SendFuture's reference counting: a batch's StateRef takes its futures' references in bulk,
// copies and moves of futures count right, and the state lives until the last holder lets go
// (the ASan build of this test reports a leak or a use after free otherwise).
#include "producer/future.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

namespace rdmq::producer {
namespace {

uint32_t Refs(const StateRef& s) { return s->refs.load(); }

TEST_CASE("a batch's state takes its futures' references in bulk and gives back the spare ones",
          "[producer][future]") {
  std::vector<SendFuture> futures;
  const SendFuture::State* state = nullptr;
  {
    StateRef batch = StateRef::Make();
    state = &*batch;
    CHECK(Refs(batch) == 1);
    futures.push_back(batch.Future(0));
    CHECK(Refs(batch) == 1 + StateRef::kBulkRefs);  // one atomic add for the next 64 futures
    for (uint32_t i = 1; i < StateRef::kBulkRefs; ++i) futures.push_back(batch.Future(i));
    CHECK(Refs(batch) == 1 + StateRef::kBulkRefs);
    futures.push_back(batch.Future(StateRef::kBulkRefs));
    CHECK(Refs(batch) == 1 + 2 * StateRef::kBulkRefs);
    batch->records.resize(futures.size());
    batch->done.store(1);
  }  // the batch lets go of its own reference and the 63 it did not hand out
  REQUIRE(futures.size() == StateRef::kBulkRefs + 1);
  CHECK(futures[0].ready());
  CHECK(state->refs.load() == futures.size());

  SendFuture copy = futures[5];
  CHECK(state->refs.load() == futures.size() + 1);
  SendFuture moved = std::move(copy);
  CHECK_FALSE(copy.valid());  // NOLINT(bugprone-use-after-move): a moved-from future is empty
  CHECK(state->refs.load() == futures.size() + 1);
  copy = moved;  // copy-assigned into an empty future
  CHECK(state->refs.load() == futures.size() + 2);
  moved = SendFuture();  // move-assigned over: lets go
  CHECK(state->refs.load() == futures.size() + 1);
  const auto md = copy.get();
  REQUIRE(md.ok());
  CHECK(md->offset == -1);  // no base offset was set

  while (futures.size() > 1) futures.pop_back();
  CHECK(state->refs.load() == 2);
  futures.clear();
  CHECK(copy.ready());  // the last holder keeps it alive
}

TEST_CASE("a failed future holds its state alone", "[producer][future]") {
  SendFuture f = FailedFuture(Status(Errc::kTimeout, "nope"));
  REQUIRE(f.ready());
  CHECK(f.get().status().is(Errc::kTimeout));
  SendFuture g = f;
  f = SendFuture();
  CHECK(g.get().status().is(Errc::kTimeout));
}

}  // namespace
}  // namespace rdmq::producer
