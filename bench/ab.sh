#!/usr/bin/env bash
# A/B comparison of two rdmq builds on this machine in one run: the two builds' rdmq-bench (each
# starting the rdmq-broker beside it) take turns on the same workloads, round after round, so
# that both see the same machine load; then one table gives each build's median and best, and
# the ratio new/old, per workload. Used to show that a change did not make rdmq slower.
#
#   bench/ab.sh OLD_BIN_DIR NEW_BIN_DIR [--rounds R] [--scale F] [--durability D] [--out DIR]
#               [--markdown]
#
#   OLD_BIN_DIR, NEW_BIN_DIR  folders holding rdmq-bench and rdmq-broker (e.g. a copy of an
#                             earlier build/release/bin, and build/release/bin)
#   --rounds R    turns per build and workload (default 5)
#   --scale F     multiplies the record counts (default 1: 3 M records of 100 B, 1 M of 1 KiB)
#   --durability D  the topic's durability: visibility (default) or durable (msync per commit;
#                 the brokers' data lie in TMPDIR, which must then be a disk, not a tmpfs)
#   --out DIR     where the JSON results go (default build/ab/<date-time>)
#   --markdown    print the table as markdown (for docs/benchmarks.md)
#
# Workloads (shm fabric, one partition, one producer process, --durability):
#   throughput, as the peer comparison's throughput runs (16384 records in flight, 1 MiB batches,
#   1 ms linger): 100 B produce-only, 100 B with one consumer process, 1 KiB produce-only, 1 KiB
#   with one consumer process; the figure compared is the produce rate (records/s, higher is
#   better).
#   latency: one 100 B record in flight paced at 10 k/s with one consumer process; the figures
#   compared are the produce-to-ack and produce-to-consume p50 (us, lower is better).
# Every run must finish with every record accounted for; a failed run stops the script.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,26p' "$0"; }
(($# >= 2)) || { usage; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
rounds=5 scale=1 out="" markdown=0 durability=visibility
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --scale) scale=$2; shift ;;
    --durability) durability=$2; shift ;;
    --out) out=$2; shift ;;
    --markdown) markdown=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ab.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
for dir in "$old" "$new"; do
  for tool in rdmq-bench rdmq-broker; do
    [[ -x $dir/$tool ]] || { echo "ab.sh: $dir/$tool missing" >&2; exit 2; }
  done
done
out=${out:-build/ab/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

count() { awk -v n="$1" -v s="$scale" 'BEGIN { printf "%d", n * s }'; }
names=("100B-produce" "100B-consume" "1KiB-produce" "1KiB-consume" "100B-1-in-flight")
throughput="-w 16384 --batch-size 1048576 --linger-ms 1"
args=("$throughput -s 100 -c 0 -n $(count 3000000)" "$throughput -s 100 -c 1 -n $(count 3000000)"
      "$throughput -s 1024 -c 0 -n $(count 1000000)" "$throughput -s 1024 -c 1 -n $(count 1000000)"
      "-w 1 --rate 10000 -s 100 -c 1 -n $(count 30000)")
[[ $durability == visibility || $durability == durable ]] || {
  echo "ab.sh: --durability takes visibility or durable, not '$durability'" >&2
  exit 2
}
common="--system rdmq --start-broker --procs --durability $durability --progress none"

echo "ab.sh: old=$old new=$new rounds=$rounds durability=$durability out=$out" >&2
for ((r = 1; r <= rounds; r++)); do
  for i in "${!names[@]}"; do
    # Alternate which build goes first, so neither always runs on a warmer machine.
    order=(old new)
    ((r % 2 == 0)) && order=(new old)
    for which in "${order[@]}"; do
      dir=$old
      [[ $which == new ]] && dir=$new
      json=$out/${names[$i]}-$which-$r.json
      # shellcheck disable=SC2086
      if ! "$dir/rdmq-bench" $common ${args[$i]} --json "$json" >"$out/${names[$i]}-$which-$r.log" 2>&1; then
        echo "ab.sh: ${names[$i]} ($which, round $r) failed; see $out/${names[$i]}-$which-$r.log" >&2
        exit 1
      fi
      if [[ ${names[$i]} == *-in-flight ]]; then
        for what in ack e2e; do
          p50=$("$new/rdmq-bench" get "$json" latency_ns.$what.p50)
          echo "${names[$i]}-$what-p50 $which $r $p50" >>"$out/rates.txt"
          echo "ab.sh: round $r ${names[$i]} $which: $what p50 $p50 ns" >&2
        done
      else
        rate=$("$new/rdmq-bench" get "$json" produce.records_per_s)
        echo "${names[$i]} $which $r $rate" >>"$out/rates.txt"
        echo "ab.sh: round $r ${names[$i]} $which: $rate records/s" >&2
      fi
    done
  done
done

# Median and best per workload and build, then new/old. Rates (records/s) are best when highest
# and printed in M/s; latencies (ns, rows named *-p50) are best when lowest and printed in us.
awk -v md="$markdown" '
  { v[$1 " " $2] = v[$1 " " $2] " " $4; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
  function stats(list, out, lowest,   a, k, i, j, t) {
    k = split(list, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    out["median"] = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    out["best"] = lowest ? a[1] : a[k]
  }
  END {
    if (md) { print "| workload | old median | new median | new/old | old best | new best | new/old |"; print "|---|---|---|---|---|---|---|" }
    else printf "%-24s %14s %14s %8s %14s %14s %8s\n", "workload", "old median", "new median", "new/old", "old best", "new best", "new/old"
    for (i = 0; i < n; i++) {
      w = order[i]; lat = (w ~ /-p50$/)
      stats(v[w " old"], o, lat); stats(v[w " new"], m, lat)
      div = lat ? 1e3 : 1e6; unit = lat ? "us" : "M/s"
      if (md) printf "| %s | %.2f %s | %.2f %s | %.2f | %.2f %s | %.2f %s | %.2f |\n", w, o["median"] / div, unit, m["median"] / div, unit, m["median"] / o["median"], o["best"] / div, unit, m["best"] / div, unit, m["best"] / o["best"]
      else printf "%-24s %10.2f %-3s %10.2f %-3s %8.2f %10.2f %-3s %10.2f %-3s %8.2f\n", w, o["median"] / div, unit, m["median"] / div, unit, m["median"] / o["median"], o["best"] / div, unit, m["best"] / div, unit, m["best"] / o["best"]
    }
  }' "$out/rates.txt" | tee "$out/table.txt"
