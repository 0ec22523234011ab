// The metadata store tests' way to open a store (and fail the test, with the reason, if it does
// not open).
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "rdmq/metadata/store.h"
#include "support/test_util.h"

namespace rdmq::metadata {

inline std::unique_ptr<MetadataStore> OpenStore(const test::TempDir& dir, uint32_t checkpoint_every = 64) {
  auto s = MetadataStore::Open({dir.str(), checkpoint_every, true});
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(*s);
}

// The store in `dir` must refuse to open as corrupt, with `code` and a message saying `says`.
inline void CheckRefusedToOpen(const test::TempDir& dir, MetadataErrc code, const std::string& says) {
  auto store = MetadataStore::Open({dir.str(), 64, true});
  REQUIRE_FALSE(store.ok());
  INFO(store.status().ToString());
  CHECK(store.status().is(code));
  CHECK(store.status().is(Errc::kCorruption));
  CHECK(store.status().ToString().find(says) != std::string::npos);
}

}  // namespace rdmq::metadata
