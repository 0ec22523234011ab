#include "support/test_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace rdmq::test {

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  if (std::getenv("RDMQ_KEEP_TEST_DIRS") != nullptr) {
    std::fprintf(stderr, "keeping test directory %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t TestSeed() {
  uint64_t seed;
  if (const char* e = std::getenv("RDMQ_TEST_SEED")) {
    seed = std::strtoull(e, nullptr, 0);
  } else {
    seed = std::random_device{}();
    seed = (seed << 32) ^ std::random_device{}();
  }
  UNSCOPED_INFO("reproduce with RDMQ_TEST_SEED=" << seed);
  return seed;
}

int Trials(int nominal, int minimum) {
  double scale = 1.0;
  if (const char* e = std::getenv("RDMQ_TEST_SCALE")) scale = std::strtod(e, nullptr);
  if (!(scale > 0)) scale = 1.0;
  const int n = static_cast<int>(nominal * scale);
  return n < minimum ? minimum : n;
}

bool UnderCTest() { return std::getenv("RDMQ_UNDER_CTEST") != nullptr; }

void SkipUnderCTest(const std::string& why) {
  std::fprintf(stdout, "SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(77);
}

}  // namespace rdmq::test
