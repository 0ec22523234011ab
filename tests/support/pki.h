// A throwaway PKI for the TLS tests: tests/kafka_e2e/test_ca.sh makes a CA, a server certificate
// for localhost and 127.0.0.1, a client certificate (CN=alice), and a rogue CA with its own
// client and server certificates in a temporary directory (the script lists the files).
// Binaries that use it define RDMQ_SOURCE_DIR.
#pragma once

#include <cstdlib>
#include <string>

#include "support/test_util.h"

namespace rdmq::test {

struct Pki {
  TempDir dir{"rdmq-pki"};
  Pki() {
    const std::string make =
        std::string(RDMQ_SOURCE_DIR) + "/tests/kafka_e2e/test_ca.sh '" + dir.str() + "' >/dev/null 2>&1";
    INFO(make);
    REQUIRE(std::system(make.c_str()) == 0);
  }
  // The path of one of its files (ca.pem, server.pem, server.key, client.pem, rogue-ca.pem, ...).
  std::string operator()(const std::string& file) const { return dir.str() + "/" + file; }
};

}  // namespace rdmq::test
