// Boost.Asio for the Kafka listener. Boost 1.74's awaitable.hpp uses std::exchange without
// including <utility>, which g++ 12 in C++20 mode does not pull in otherwise: include it first.
#pragma once

// clang-format off
#include <utility>
#include <boost/asio.hpp>
// clang-format on
