// Helpers shared by rdmq's tests.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>

#include "rdmq/common/status.h"

namespace rdmq::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction
// unless RDMQ_KEEP_TEST_DIRS is set (then its path is printed for inspection).
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "rdmq-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The seed for randomised tests: RDMQ_TEST_SEED if set, else random. Printed through Catch's
// INFO so a failure shows how to reproduce it.
uint64_t TestSeed();

// Scales a trial count by RDMQ_TEST_SCALE (a positive float, default 1), at least `minimum`.
// The sanitizer build runs the long randomised tests at a smaller scale.
int Trials(int nominal, int minimum = 1);

// Marks the current test as skipped: prints why; under CTest exits with code 77, which CTest
// reports as "Skipped" (the binary runs one test case per process there); when the binary is
// run by hand it only warns and returns from the test case.
[[noreturn]] void SkipUnderCTest(const std::string& why);
bool UnderCTest();

// A whole file's bytes ("" when it cannot be read), and a file replaced by `bytes`.
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
inline void Spit(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace rdmq::test

#define RDMQ_SKIP(why)                   \
  do {                                   \
    if (::rdmq::test::UnderCTest()) {    \
      ::rdmq::test::SkipUnderCTest(why); \
    }                                    \
    WARN("SKIPPED: " << (why));          \
    return;                              \
  } while (0)

// REQUIRE that a Status or Result is OK, printing the error when it is not.
#define REQUIRE_OK(expr)                                             \
  do {                                                               \
    const ::rdmq::Status rdmq_s_ = ::rdmq::internal::AsStatus(expr); \
    INFO("status: " << rdmq_s_.ToString());                          \
    REQUIRE(rdmq_s_.ok());                                           \
  } while (0)
#define CHECK_OK(expr)                                               \
  do {                                                               \
    const ::rdmq::Status rdmq_s_ = ::rdmq::internal::AsStatus(expr); \
    INFO("status: " << rdmq_s_.ToString());                          \
    CHECK(rdmq_s_.ok());                                             \
  } while (0)
