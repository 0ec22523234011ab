// What the CLI end-to-end tests share: a broker process on a fresh data directory with shortcuts
// that run the tools against it, and checks on their results.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/process_util.h"
#include "support/test_util.h"

namespace rdmq::test {

// A broker on a fresh data directory, and shortcuts to run the tools against it.
class Fixture {
 public:
  explicit Fixture(std::vector<std::string> broker_args = {})
      : broker_(tmp_.str() + "/data", std::move(broker_args)) {
    std::string error;
    const bool up = broker_.Start(&error);
    INFO(error);
    REQUIRE(up);
  }

  RunResult Rdmq(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {Bin("rdmq"), "--broker", broker_.address()});
    return Run(args, input);
  }
  RunResult Produce(std::vector<std::string> args, const std::string& input) {
    args.insert(args.begin(), {Bin("rdmq-produce"), "-b", broker_.address()});
    return Run(args, input);
  }
  RunResult Consume(std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("rdmq-consume"), "-b", broker_.address()});
    return Run(args);
  }
  // A shell command line, run in the test's temporary directory with $RDMQ_BROKER set to this
  // broker and the tools on PATH.
  RunResult Sh(const std::string& command, int timeout_s = 120) {
    return Shell("cd '" + tmp_.str() + "' || exit 99\n" + command, timeout_s,
                 {{"RDMQ_BROKER", broker_.address()}});
  }
  // kcat (Debian's, on PATH) against this broker's Kafka listener.
  RunResult Kcat(std::vector<std::string> args, const std::string& input = "", int timeout_s = 120) {
    args.insert(args.begin(), {"/usr/bin/kcat", "-b", broker_.kafka_address()});
    return Run(args, input, timeout_s);
  }
  const std::string& kafka() const { return broker_.kafka_address(); }
  BrokerProcess& broker() { return broker_; }
  const TempDir& tmp() const { return tmp_; }

 private:
  TempDir tmp_{"rdmq-cli-e2e"};
  BrokerProcess broker_;
};

// Evaluates `r` (a RunResult, or a call that runs a command) once.
#define REQUIRE_RUN(r, expected_code)                                                     \
  do {                                                                                    \
    const ::rdmq::test::RunResult& run_ = (r);                                            \
    INFO("exit " << run_.code << "\nstdout:\n" << run_.out << "\nstderr:\n" << run_.err); \
    REQUIRE(run_.code == (expected_code));                                                \
  } while (0)

inline nlohmann::json ParseJson(const RunResult& r) {
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  return j;
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace rdmq::test
