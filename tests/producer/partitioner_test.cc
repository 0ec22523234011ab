#include "rdmq/producer/partitioner.h"

#include <catch2/catch.hpp>
#include <string>

namespace rdmq::producer {
namespace {

TEST_CASE("murmur2 matches Kafka's Java client on its own test vectors", "[partitioner]") {
  // org.apache.kafka.common.utils.UtilsTest#testMurmur2
  CHECK(Murmur2("21") == -973932308);
  CHECK(Murmur2("foobar") == -790332482);
  CHECK(Murmur2("a-little-bit-long-string") == -985981536);
  CHECK(Murmur2("a-little-bit-longer-string") == -1486304829);
  CHECK(Murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971);
  CHECK(Murmur2("abc") == 479470107);
  CHECK(Murmur2("") == 275646681);
}

TEST_CASE("keys land on Kafka's partition", "[partitioner]") {
  // toPositive(-790332482) = 1357151166; 1357151166 % 50 = 16.
  CHECK(PartitionForKey("foobar", 50) == 16);
  CHECK(PartitionForKey("foobar", 1) == 0);
  // Every key maps into range, and the same key always to the same partition.
  for (int i = 0; i < 1000; ++i) {
    const std::string key = "key-" + std::to_string(i);
    const int32_t p = PartitionForKey(key, 7);
    CHECK(p >= 0);
    CHECK(p < 7);
    CHECK(PartitionForKey(key, 7) == p);
  }
}

}  // namespace
}  // namespace rdmq::producer
