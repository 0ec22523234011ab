#!/usr/bin/env bash
# Runs a Catch2 test binary's selected test cases N times in a row and fails at the first run
# that fails, printing that run's output. For races that show up in some runs only.
#
#   tests/support/repeat.sh N BINARY TEST_SPEC...
set -uo pipefail
if (($# < 3)); then
  sed -n '2,5p' "$0" >&2
  exit 2
fi
n=$1 bin=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((i = 1; i <= n; i++)); do
  for spec in "$@"; do
    if ! "$bin" "$spec" >"$out" 2>&1; then
      echo "run $i of $n failed: $spec"
      cat "$out"
      exit 1
    fi
  done
done
echo "$n runs of each of $# test specs passed"
