# Precompiled headers (RDMQ_PCH, on by default with clang: the asan preset): the standard
# library's, Catch2's and Boost.Asio's headers are parsed once per build instead of once per
# translation unit.
#
# A precompiled header is only used by a compilation with the same flags as the one that built
# it, and GCC and clang both refuse one built with -fPIC for an -fPIE compilation (libraries are
# -fPIC, executables -fPIE). So each kind of target reuses (target_precompile_headers REUSE_FROM)
# the header of one small owner target of its own kind, built from an empty source:
#
#   rdmq_pch_lib    libraries (rdmq_library)               RDMQ_PCH_STD
#   rdmq_pch_asio   fabric, metrics, broker (PCH asio)     RDMQ_PCH_STD, <boost/asio.hpp>
#   rdmq_pch_exe    tools, helpers, fuzz replay drivers    RDMQ_PCH_STD
#   rdmq_pch_test   Catch2 test binaries (rdmq_test)       RDMQ_PCH_TEST
#
# Only third-party headers go in, so that editing an rdmq header never rebuilds them all; the
# owners compile with rdmq's warning flags like everything else. CMake adds -Winvalid-pch, which
# -Werror turns into an error: a header that stops matching fails the build instead of
# silently costing its time again. The libFuzzer binaries (-fsanitize=fuzzer, which a header
# must match) and catch_main.cc (CATCH_CONFIG_MAIN before catch.hpp) get none.
# (tests/lint/tidy.sh reads build/release's compile database, which must stay without them:
# clang-tidy cannot read GCC's .gch files.)

# On by default for clang only. With GCC 12 at -O3 a precompiled <string> changes what the
# optimiser does enough for GCC's known false -Wstringop-overflow on `"literal" + std::string`
# (the family of GCC bug 105651, for which cmake/rdmq.cmake sets -Wno-restrict) to fire under -Werror
# (compression/codec.cc, config/render.cc), where the same sources and the same headers included
# as text compile clean; and at -O3 parsing is only a fifth to a third of GCC's time per file.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(rdmq_pch_default ON)
else()
  set(rdmq_pch_default OFF)
endif()
option(RDMQ_PCH "Precompile the standard, Catch2 and Asio headers (cmake/pch.cmake)" ${rdmq_pch_default})

# <utility> first: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
set(RDMQ_PCH_STD
  <utility> <algorithm> <array> <atomic> <chrono> <cstddef> <cstdint> <cstring> <deque>
  <functional> <map> <memory> <mutex> <optional> <set> <span> <string> <string_view>
  <system_error> <thread> <unordered_map> <vector>)
set(RDMQ_PCH_TEST ${RDMQ_PCH_STD} <filesystem> <fstream> <random> <sstream> <catch2/catch.hpp>)

if(RDMQ_PCH)
  set(stub ${PROJECT_BINARY_DIR}/rdmq_pch_stub.cc)
  file(WRITE ${stub} "// The source of the precompiled-header owners (cmake/pch.cmake).\nint main() { return 0; }\n")

  add_library(rdmq_pch_lib OBJECT ${stub})
  target_precompile_headers(rdmq_pch_lib PRIVATE ${RDMQ_PCH_STD})

  add_library(rdmq_pch_asio OBJECT ${stub})
  target_link_libraries(rdmq_pch_asio PRIVATE Boost::headers)
  target_precompile_headers(rdmq_pch_asio PRIVATE ${RDMQ_PCH_STD} <boost/asio.hpp>)

  add_executable(rdmq_pch_exe EXCLUDE_FROM_ALL ${stub})
  target_precompile_headers(rdmq_pch_exe PRIVATE ${RDMQ_PCH_STD})

  if(RDMQ_BUILD_TESTS)
    add_executable(rdmq_pch_test EXCLUDE_FROM_ALL ${stub})
    target_link_libraries(rdmq_pch_test PRIVATE Catch2::Catch2)
    target_precompile_headers(rdmq_pch_test PRIVATE ${RDMQ_PCH_TEST})
    rdmq_test_code(rdmq_pch_test)  # the test binaries' optimisation level, which a header must match
  endif()

  foreach(owner rdmq_pch_lib rdmq_pch_asio rdmq_pch_exe rdmq_pch_test)
    if(TARGET ${owner})
      rdmq_set_warnings(${owner})
    endif()
  endforeach()
endif()

# rdmq_pch(<target> <lib|asio|exe|test>): <target> reuses that owner's precompiled header.
function(rdmq_pch target kind)
  if(RDMQ_PCH)
    target_precompile_headers(${target} REUSE_FROM rdmq_pch_${kind})
  endif()
endfunction()

# rdmq_pch_own(<target> <header>...): a precompiled header of <target>'s own, for a target no
# owner matches (an object library of test sources: -fPIC, with Catch2).
function(rdmq_pch_own target)
  if(RDMQ_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
