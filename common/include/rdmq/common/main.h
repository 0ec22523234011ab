// The one way a command-line tool's main() ends on an exception. rdmq's own code reports errors
// as Status, but the standard library and Boost may still throw (std::bad_alloc,
// std::system_error from std::thread, a filesystem error): such an exception ends the tool with
// a one-line message naming the tool and exit status 1, instead of std::terminate's abort.
//
//   int main(int argc, char** argv) {
//     return rdmq::RunMain("rdmq-bench", [&] { return Main(argc, argv); });
//   }
#pragma once

#include <cstdio>
#include <exception>

namespace rdmq {

template <class Body>
int RunMain(const char* tool, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: fatal: an unknown exception\n", tool);
  }
  return 1;
}

}  // namespace rdmq
