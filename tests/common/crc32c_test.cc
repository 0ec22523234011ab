#include "rdmq/common/crc32c.h"

#include <catch2/catch.hpp>
#include <string>

namespace rdmq::crc32c {
namespace {

TEST_CASE("CRC-32C matches the standard check values", "[crc]") {
  // RFC 3720 appendix B.4 and the usual check value.
  CHECK(Value("123456789", 9) == 0xE3069283u);
  std::string zeros(32, '\0');
  CHECK(Value(zeros.data(), zeros.size()) == 0x8A9136AAu);
  std::string ones(32, '\xff');
  CHECK(Value(ones.data(), ones.size()) == 0x62A8AB43u);
  CHECK(Value("", 0) == 0u);
}

TEST_CASE("CRC-32C extends over split input", "[crc]") {
  const std::string s = "the quick brown fox jumps over the lazy dog, twice over";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    CHECK(Extend(Value(s.data(), cut), s.data() + cut, s.size() - cut) == Value(s.data(), s.size()));
  }
}

}  // namespace
}  // namespace rdmq::crc32c
