// The metadata store tests' way to open a store (and fail the test, with the reason, if it does
// not open).
#pragma once

#include <catch2/catch.hpp>
#include <memory>

#include "rdmq/metadata/store.h"
#include "support/test_util.h"

namespace rdmq::metadata {

inline std::unique_ptr<MetadataStore> OpenStore(const test::TempDir& dir, uint32_t checkpoint_every = 64) {
  auto s = MetadataStore::Open({dir.str(), checkpoint_every, true});
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(*s);
}

}  // namespace rdmq::metadata
