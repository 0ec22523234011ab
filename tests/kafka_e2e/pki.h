// What the TLS and SASL tests share: a throwaway CA, server and client certificates that
// test_ca.sh makes in a temporary directory (support/pki.h), and argument lists joined.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_fixture.h"
#include "support/pki.h"

namespace rdmq::test {

// A broker started on `data_dir` with each of `sets` as --set: it must exit non-zero, saying
// `says` (settings that cannot work stop it at start).
inline void CheckRefusedAtStart(const std::string& data_dir, const std::vector<std::string>& sets,
                                const std::string& says) {
  std::vector<std::string> argv = {Bin("rdmq-broker"), "--data-dir", data_dir, "--set", "listen.http=off"};
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  const RunResult r = Run(argv, "", 30);
  INFO(r.out << r.err);
  CHECK(r.code != 0);
  CHECK(Contains(r.out + r.err, says));
}

inline std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace rdmq::test
