#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy) over rdmq's sources; fails on any finding.
#
#   tests/lint/tidy.sh                 every non-test source file, using build/release's compile database
#   tests/lint/tidy.sh FILE...         just these files
#
# Environment: RDMQ_TIDY_BUILD (build dir with compile_commands.json, default build/release),
#              RDMQ_JOBS (parallel clang-tidy processes, default nproc).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${RDMQ_TIDY_BUILD:-build/release}
jobs=${RDMQ_JOBS:-$(nproc)}
if [[ ! -f $build/compile_commands.json ]]; then
  echo "tidy: $build/compile_commands.json missing (configure first: cmake --preset release)"
  exit 1
fi
if (($# > 0)); then
  files=("$@")
else
  # Every translation unit of the libraries, tools and benchmarks (tests and fuzz targets are
  # checked by the compilers and sanitizers; clang-tidy over them would double the stage's time).
  mapfile -t files < <(git ls-files -- '*.cc' | grep -v -E '^(tests|examples)/' | sort)
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 4 clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option \
    >"$out" 2>/dev/null
findings=$(grep -cE '^[^ ].*:[0-9]+:[0-9]+: (warning|error):' "$out")
if ((findings > 0)); then
  grep -A3 -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error):' "$out"
  echo "tidy: $findings finding(s) in ${#files[@]} files"
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
