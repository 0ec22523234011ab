// What the TLS and SASL tests share: a throwaway CA, server and client certificates that
// test_ca.sh makes in a temporary directory, and argument lists joined.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_fixture.h"

namespace rdmq::test {

struct Pki {
  TempDir dir{"rdmq-pki"};
  Pki() {
    REQUIRE_RUN(Shell(std::string(RDMQ_SOURCE_DIR) + "/tests/kafka_e2e/test_ca.sh '" + dir.str() + "'", 60),
                0);
  }
  // The path of one of its files (ca.pem, server.pem, server.key, client.pem, rogue-ca.pem, ...).
  std::string operator()(const std::string& file) const { return dir.str() + "/" + file; }
};

inline std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace rdmq::test
