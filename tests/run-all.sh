#!/usr/bin/env bash
# Builds and runs rdmq's whole test suite, as CI does (.ci/run calls this through the README's
# test command). Every stage runs even when an earlier one failed; the exit status is non-zero
# if any stage failed, and a summary table is printed at the end.
#
# Stages:
#   lint     clang-format check, the 800-line file limit, test names CTest can carry (no ';'),
#            clang-tidy (.clang-tidy) over the sources
#   release  build (g++ -O3; test code -O0) and run every CTest test (unit, crash, stress, e2e, fuzz replays)
#   asan     build with clang: ASan+UBSan, -Wthread-safety (lock annotations), libFuzzer coverage;
#            run the suite at RDMQ_TEST_SCALE=0.25 (fewer trials)
#   fuzz     run each libFuzzer target of the asan build for RDMQ_FUZZ_SECONDS (10), RDMQ_JOBS of
#            them side by side (each is single-threaded)
#   verbs    run the [verbs] tests on a real kernel RDMA stack (Soft-RoCE in a qemu VM)
#
# Usage: tests/run-all.sh [stage...]      (default: all stages)
# Environment: RDMQ_FUZZ_SECONDS, RDMQ_JOBS (build, lint and fuzz parallelism, default nproc),
#              RDMQ_CTEST_ARGS (extra ctest arguments, e.g. "-L unit")
set -uo pipefail
cd "$(dirname "$0")/.."

stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(lint release asan fuzz verbs)
jobs=${RDMQ_JOBS:-$(nproc)}
fuzz_seconds=${RDMQ_FUZZ_SECONDS:-10}
declare -A result=() took=()
failed=0

run_stage() {
  local name=$1; shift
  local t0=$SECONDS
  echo "================ stage $name ================"
  if "$@"; then result[$name]=passed; else result[$name]=FAILED; failed=1; fi
  took[$name]=$((SECONDS - t0))
}

build() {  # build PRESET
  cmake --preset "$1" >/dev/null && cmake --build --preset "$1" -j "$jobs"
}

stage_lint() {
  local rc=0
  RDMQ_JOBS=$jobs tests/lint/format.sh || rc=1
  tests/lint/size.sh || rc=1
  tests/lint/test_names.py || rc=1
  # clang-tidy reads the compile database, which configuring writes (nothing is built here).
  if cmake --preset release >/dev/null; then
    RDMQ_JOBS=$jobs tests/lint/tidy.sh || rc=1
  else
    rc=1
  fi
  return $rc
}

stage_release() {
  build release && ctest --preset release ${RDMQ_CTEST_ARGS:-}
}

stage_asan() {
  build asan &&
    RDMQ_TEST_SCALE=${RDMQ_TEST_SCALE:-0.25} ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --preset asan ${RDMQ_CTEST_ARGS:-}
}

# fuzz_one BINARY LOG: one libFuzzer target for $fuzz_seconds; its last lines go to LOG and its
# exit status to LOG.rc.
fuzz_one() {
  local f=$1 log=$2 name corpus seeds
  name=$(basename "$f")
  corpus=build/asan/corpus/$name
  seeds=tests/fuzz/seeds/${name#fuzz_}
  mkdir -p "$corpus"
  local args=("$corpus")
  [[ -d $seeds ]] && args+=("$seeds")
  "$f" -max_total_time="$fuzz_seconds" -print_final_stats=1 -rss_limit_mb=2048 \
    -timeout=10 -artifact_prefix=build/asan/ "${args[@]}" >"$log.full" 2>&1
  echo $? >"$log.rc"
  tail -n 12 "$log.full" >"$log"
}

stage_fuzz() {
  cmake --preset asan >/dev/null && cmake --build --preset asan -j "$jobs" --target fuzz_targets || return 1
  # A libFuzzer target runs on one core, so $jobs of them run side by side, each for the whole
  # $fuzz_seconds (on 2 cores the stage takes half the time and no target fuzzes less long);
  # their reports are printed in order once all have finished.
  local bin=build/asan/bin logs=build/asan/fuzz-logs rc=0 names=() name
  rm -rf "$logs" && mkdir -p "$logs"
  for f in "$bin"/fuzz_*; do
    [[ -x $f ]] || continue
    names+=("$(basename "$f")")
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
    fuzz_one "$f" "$logs/${names[-1]}" &
  done
  wait
  for name in "${names[@]}"; do
    echo "---- $name for ${fuzz_seconds}s"
    cat "$logs/$name"
    if [[ $(cat "$logs/$name.rc" 2>/dev/null) != 0 ]]; then
      echo "FUZZ FAILURE in $name (crash input saved under build/asan/; full output in $logs/$name.full)"
      rc=1
    fi
  done
  echo "fuzz: ran ${#names[@]} targets"
  return $rc
}

stage_verbs() {
  if [[ -x tests/verbs/softroce-vm.sh ]]; then
    tests/verbs/softroce-vm.sh
  else
    echo "verbs: no Soft-RoCE runner in this tree yet"
  fi
}

for s in "${stages[@]}"; do
  case $s in
    lint|release|asan|fuzz|verbs) run_stage "$s" "stage_$s" ;;
    *) echo "run-all.sh: unknown stage '$s' (lint, release, asan, fuzz, verbs)"; exit 2 ;;
  esac
done

echo "================ summary ================"
for s in "${stages[@]}"; do printf '%-8s %-7s %5ss\n' "$s" "${result[$s]}" "${took[$s]}"; done
exit $failed
