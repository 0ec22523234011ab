# Fails when docs/configuration.md differs from what `rdmq config list --markdown` prints.
#   cmake -DRDMQ=<path to rdmq> -DDOC=<path to docs/configuration.md> -P check_docs.cmake
execute_process(COMMAND ${RDMQ} config list --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "'${RDMQ} config list --markdown' failed with exit status ${rc}")
endif()
file(READ ${DOC} current)
if(NOT generated STREQUAL current)
  message(FATAL_ERROR "docs/configuration.md is not what 'rdmq config list --markdown' prints "
                      "(a config key table changed). Regenerate it from the repository root:\n"
                      "  build/release/bin/rdmq config list --markdown > docs/configuration.md")
endif()
message(STATUS "docs/configuration.md is current")
