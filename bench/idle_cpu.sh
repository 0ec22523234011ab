#!/usr/bin/env bash
# The CPU an idle broker uses: starts rdmq-broker with a fresh data directory (shm fabric, no
# client ever connects), lets it settle, then reads its utime+stime from /proc/<pid>/stat before
# and after an idle window and prints the difference as a percentage of one core; then per
# thread its time on a CPU from /proc/<pid>/task/<tid>/schedstat (nanoseconds: finer than the
# 1/CLK_TCK ticks of utime+stime, which sample a thread that wakes 100 times a second coarsely)
# and its voluntary context switches per second (its wake-ups).
#
#   bench/idle_cpu.sh [BIN_DIR] [--seconds S] [--set KEY=VALUE ...]
#
#   BIN_DIR       folder holding rdmq-broker (default build/release/bin)
#   --seconds S   length of the idle window (default 10)
#   --set K=V     passed to rdmq-broker (e.g. --set data.spin.us=0)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/release/bin
if (($# > 0)) && [[ $1 != --* ]]; then bin=$1; shift; fi
secs=10
extra=()
while (($# > 0)); do
  case $1 in
    --seconds) secs=$2; shift 2 ;;
    --set) extra+=(--set "$2"); shift 2 ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
  esac
done
[[ -x $bin/rdmq-broker ]] || { echo "no rdmq-broker in $bin (build it: cmake --build build/release --target rdmq-broker)" >&2; exit 1; }

dir=$(mktemp -d -t rdmq-idle-XXXXXX)
"$bin/rdmq-broker" -d "$dir/data" --set log.level=warn --set listen.kafka=127.0.0.1:0 --set listen.http=127.0.0.1:0 "${extra[@]}" >"$dir/broker.log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for _ in $(seq 100); do [[ -S $dir/data/rdmq.sock ]] && break; sleep 0.05; done
[[ -S $dir/data/rdmq.sock ]] || { echo "the broker did not start:" >&2; cat "$dir/broker.log" >&2; exit 1; }
sleep 1  # past start-up (recovery, first checkpoint)

tck=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "$1/stat"; }
snapshot() {
  for t in /proc/$pid/task/*; do
    echo "$(basename "$t") $(ticks "$t") $(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status") $(awk '{print $1}' "$t/schedstat")"
  done | sort
}
total0=$(ticks /proc/$pid)
snapshot >"$dir/before"
t0=$(date +%s.%N)
sleep "$secs"
total1=$(ticks /proc/$pid)
t1=$(date +%s.%N)
snapshot >"$dir/after"
kill -0 "$pid" 2>/dev/null || { echo "the broker exited:" >&2; cat "$dir/broker.log" >&2; exit 1; }

awk -v a="$total0" -v b="$total1" -v tck="$tck" -v t0="$t0" -v t1="$t1" 'BEGIN {
  printf "idle broker: %.2f%% of one core over %.1f s (%d ticks of 1/%d s)\n", (b - a) / tck / (t1 - t0) * 100, t1 - t0, b - a, tck }'
echo "per thread (tid, utime+stime % of one core, on-CPU % from schedstat, wake-ups/s):"
join "$dir/before" "$dir/after" | awk -v tck="$tck" -v s="$secs" '
  { ns = $7 - $4; sum += ns
    printf "  %-8s %6.2f%% %7.3f%% %8.1f/s\n", $1, ($5 - $2) / tck / s * 100, ns / 1e9 / s * 100, ($6 - $3) / s }
  END { printf "on a CPU (schedstat, all threads): %.3f%% of one core\n", sum / 1e9 / s * 100 }'
