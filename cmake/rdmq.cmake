# Helpers that make every module a library target with explicit dependencies and the
# project's warning flags, and every test binary a set of labelled CTest tests.

set(RDMQ_WARNINGS -Wall -Wextra -Werror -Wpedantic -Wnon-virtual-dtor -Wcast-align -Wimplicit-fallthrough)
# GCC-only spellings (the fuzz preset builds with clang, which rejects unknown warnings).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND RDMQ_WARNINGS -Wshadow=local)
else()
  # clang: the lock annotations (common/thread_annotations.h) are checked in every clang build;
  # the asan preset builds the whole tree with clang, so the suite fails on a locking mistake.
  list(APPEND RDMQ_WARNINGS -Wshadow-uncaptured-local -Wthread-safety)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 reports false -Wrestrict positives inside std::string concatenation at -O2/-O3
  # (GCC bug 105651), which -Werror would turn into build failures.
  list(APPEND RDMQ_WARNINGS -Wno-restrict)
endif()

if(RDMQ_SANITIZE)
  # GCC's -Wmaybe-uninitialized misfires under -fsanitize at -O1 (e.g. in libstdc++'s <regex>,
  # which catch.hpp includes), so it cannot be an error in sanitizer builds.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND RDMQ_WARNINGS -Wno-maybe-uninitialized)
  endif()
  add_compile_options(-fsanitize=${RDMQ_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RDMQ_SANITIZE})
  if(RDMQ_SANITIZE MATCHES "undefined")
    # Tests that must run a process out of file descriptors skip under UBSan: its vptr check
    # probes memory through a pipe, and without a free descriptor it reports a false
    # "invalid vptr" on the first virtual call it has not cached.
    add_compile_definitions(RDMQ_UBSAN=1)
  endif()
endif()

if(RDMQ_FUZZ)
  # Coverage instrumentation for the libraries the fuzz targets exercise (the targets themselves
  # add -fsanitize=fuzzer); without it libFuzzer sees only the target's own file.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# rdmq_set_warnings(<target>)
function(rdmq_set_warnings target)
  target_compile_options(${target} PRIVATE ${RDMQ_WARNINGS})
endfunction()

# rdmq_library(<name> SOURCES <src>... [DEPS <public deps>...] [PRIVATE_DEPS <deps>...] [PCH asio])
# Defines target rdmq_<name> (alias rdmq::<name>) whose public headers live in
# <folder>/include/rdmq/<name>/ and whose internals sit beside its sources. PCH asio: the
# precompiled header with Boost.Asio (cmake/pch.cmake) instead of the standard headers' one.
function(rdmq_library name)
  cmake_parse_arguments(A "" "PCH" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(NOT A_PCH)
    set(A_PCH lib)
  endif()
  add_library(rdmq_${name} STATIC ${A_SOURCES})
  add_library(rdmq::${name} ALIAS rdmq_${name})
  # Internals are included as "<module>/<file>.h" (or plain "<file>.h" within the module).
  # (Installed, the public headers are under <prefix>/include: cmake/install.cmake.)
  target_include_directories(rdmq_${name}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR})
  target_link_libraries(rdmq_${name} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  rdmq_set_warnings(rdmq_${name})
  rdmq_pch(rdmq_${name} ${A_PCH})
endfunction()

# rdmq_executable(<name> SOURCES <src>... [DEPS <deps>...])
function(rdmq_executable name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  rdmq_set_warnings(${name})
  rdmq_pch(${name} exe)
endfunction()

# rdmq_test_code(<target>): the target is test code (Catch2 cases and their helpers), compiled
# without optimisation in the release and sanitizer builds. The code under test is the libraries',
# still built at -O3 (release) or -O1 (asan); optimising Catch2's macro-expanded test cases took
# about half of each build's compile time (-O1 over -O0 nearly doubles a test file's) and makes
# no test more thorough.
function(rdmq_test_code target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:-O0>)
endfunction()

# rdmq_test_hot_sources(<src>...): test sources whose own loops are the load (random payloads
# filled byte by byte over hundreds of thousands of calls): unoptimised, they made their tests
# four times slower than the code under test. Compiled at -O1 after all (the option comes after
# the target's -O0), without the test precompiled header (built at -O0, which it must match).
# Call it from the CMakeLists that lists the sources.
function(rdmq_test_hot_sources)
  set_source_files_properties(${ARGN} PROPERTIES
    COMPILE_OPTIONS "$<$<CONFIG:Release,RelWithDebInfo>:-O1>" SKIP_PRECOMPILE_HEADERS ON)
endfunction()

# rdmq_test(<binary> SOURCES <src>... [DEPS <deps>...] LABELS <label>... [TIMEOUT <s>])
# Builds a Catch2 test binary and registers each TEST_CASE as its own CTest test named
# <binary>.<case>, carrying the given labels (unit, crash, fuzz, verbs, pmem, e2e, stress, bench).
# A test that needs missing hardware calls RDMQ_SKIP(), which exits with code 77 under CTest
# so that CTest reports it as skipped with the reason on its output.
function(rdmq_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  # A [verbs] binary runs only in the Soft-RoCE VM, from the release build; a sanitizer build has
  # no RDMA device to run it on, so it does not spend its build time on one (the release build
  # still compiles and runs it). Callers guard what they add to such a target with if(TARGET).
  if(RDMQ_SANITIZE AND "verbs" IN_LIST A_LABELS)
    return()
  endif()
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE rdmq_test_support ${A_DEPS})
  rdmq_set_warnings(${name})
  rdmq_test_code(${name})
  rdmq_pch(${name} test)
  # catch_discover_tests(PROPERTIES ...) splits list values (two labels, two environment
  # variables) into separate arguments, which shifts every property after them; so the
  # properties are set by a CTest include file of our own that runs after Catch's.
  # --warn NoTests: a test whose filter matches no test case fails instead of passing having run
  # nothing (a ';' in a test name cut the name CTest passed, and such tests ran nothing).
  catch_discover_tests(${name} TEST_PREFIX "${name}." TEST_LIST ${name}_TESTS EXTRA_ARGS --warn NoTests)
  set(props_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_properties.cmake)
  file(WRITE ${props_file}
    "if(DEFINED ${name}_TESTS)\n"
    "  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${A_LABELS}\" TIMEOUT ${A_TIMEOUT}\n"
    "    SKIP_RETURN_CODE 77 ENVIRONMENT \"RDMQ_UNDER_CTEST=1;RDMQ_TEST_BIN_DIR=${CMAKE_BINARY_DIR}/bin\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${props_file})
endfunction()

# rdmq_fuzz(<name> SOURCES <src>... DEPS <deps>... [SEEDS <dir>])
# With RDMQ_FUZZ (clang): a libFuzzer binary, whose seed corpus CTest replays (-runs=0) and which
# the fuzz stage of tests/run-all.sh runs. Otherwise: the same entry point linked with a small
# driver that replays the seed corpus plus deterministic mutations of it, registered as a unit
# test, so every build exercises it.
function(rdmq_fuzz name)
  cmake_parse_arguments(A "" "SEEDS" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  rdmq_set_warnings(${name})
  if(RDMQ_FUZZ)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzz_targets ${name})
    add_test(NAME ${name}.replay COMMAND ${name} -runs=0 ${A_SEEDS})
    set_tests_properties(${name}.replay PROPERTIES LABELS "unit;fuzz-replay" TIMEOUT 120)
  else()
    rdmq_pch(${name} exe)
    target_link_libraries(${name} PRIVATE rdmq_fuzz_replay)
    if(A_SEEDS)
      add_test(NAME ${name}.replay COMMAND ${name} ${A_SEEDS})
    else()
      add_test(NAME ${name}.replay COMMAND ${name})
    endif()
    set_tests_properties(${name}.replay PROPERTIES LABELS "unit;fuzz-replay" TIMEOUT 120)
  endif()
endfunction()
