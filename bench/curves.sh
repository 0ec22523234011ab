#!/usr/bin/env bash
# How cost grows as the work grows: runs rdmq-bench over one axis, one point per value, and writes
# a table (TSV), the result of every point (JSON) and a plot (PNG, gnuplot) of throughput and ack
# latency against the axis. Every point's MB/s is also given as a fraction of a memcpy measured
# by `rdmq-bench limits` at the start of the same run.
#
#   bench/curves.sh AXIS [--system rdmq|mem] [--out DIR] [--seconds S] [--quick] [-- BENCH-ARGS...]
#
# Axes (one producer process and one consumer process unless the axis varies them; --procs):
#   size        record size 16 B .. 1 MiB (1,048,000 B: the largest a default max.message.bytes
#               takes with its batch overhead), one partition
#   producers   1, 2, 4, 8 producers: exclusive (a partition each) and shared (one partition)
#   partitions  one producer spreading over 1, 10, 100 partitions, one consumer reading them
#               all (each partition preallocates a 64 MiB segment: 1000 would take 64 GB of disk)
#   consumers   1 .. 64 consumers, each reading its own partition of one producer's
#
# Options:
#   --system NAME   rdmq (a broker of its own per point, the default) or mem (the harness alone)
#   --out DIR       where the files go (default build/curves); AXIS.tsv, AXIS.png, AXIS-*.json
#   --seconds S     length of each point's run (default 3)
#   --quick         fewer points, 1 s each (what the test suite runs)
#   -- ARGS         passed to every rdmq-bench run (e.g. --durability visibility)
# Environment: RDMQ_BENCH (the rdmq-bench binary, default build/release/bin/rdmq-bench).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
[[ $# -gt 0 ]] || usage 2
axis=$1; shift
[[ $axis == -h || $axis == --help ]] && usage 0
system=rdmq out=build/curves seconds=3 quick=0 extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --system) system=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --quick) quick=1; seconds=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) echo "curves.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
bench=${RDMQ_BENCH:-build/release/bin/rdmq-bench}
[[ -x $bench ]] || { echo "curves.sh: $bench not built (cmake --build --preset release --target rdmq-bench rdmq-broker)" >&2; exit 1; }
case $system in rdmq) sys_args=(--system rdmq --start-broker) ;; mem) sys_args=(--system mem) ;;
  *) echo "curves.sh: --system is rdmq or mem" >&2; exit 2 ;; esac

# points: "series x rdmq-bench-args..." per line
points=()
case $axis in
  size)
    sizes=(16 64 256 1024 4096 16384 65536 262144 1048000)
    ((quick)) && sizes=(16 1024 65536)
    for s in "${sizes[@]}"; do
      batch=$((s * 4 > 1048576 ? s * 4 : 1048576))
      points+=("one-producer $s -s $s --batch-size $batch")
    done ;;
  producers)
    ps=(1 2 4 8); ((quick)) && ps=(1 2)
    for p in "${ps[@]}"; do
      points+=("exclusive $p -p $p -c $p --partitions $p")
      points+=("shared $p -p $p -c 1 --partitions 1 --mode shared")
    done ;;
  partitions)
    ns=(1 10 100); ((quick)) && ns=(1 10)
    for n in "${ns[@]}"; do points+=("one-producer $n --partitions $n"); done ;;
  consumers)
    cs=(1 2 4 8 16 32 64); ((quick)) && cs=(1 2)
    for c in "${cs[@]}"; do points+=("own-partition $c -c $c --partitions $c"); done ;;
  *) echo "curves.sh: unknown axis '$axis' (size, producers, partitions, consumers)" >&2; exit 2 ;;
esac

mkdir -p "$out"
limits=$out/limits.json
"$bench" limits --quick --json "$limits" >/dev/null
memcpy_mb=$("$bench" get "$limits" memcpy_64mib_gb_s | awk '{printf "%.0f", $1 * 1000}')
tsv=$out/$axis.tsv
printf '# %s curve, %s, %s s per point; memcpy (64 MiB) %s MB/s in this run\n' \
  "$axis" "$system" "$seconds" "$memcpy_mb" >"$tsv"
printf 'series\t%s\tproduce_rec_s\tproduce_mb_s\tof_memcpy\tconsume_rec_s\tack_p50_us\tack_p99_us\tserver_cores\tclient_cores\tok\n' \
  "$axis" >>"$tsv"
get() { "$bench" get "$1" "$2" 2>/dev/null || echo nan; }
n=0
for p in "${points[@]}"; do
  read -r series x args <<<"$p"
  n=$((n + 1))
  json=$out/$axis-$series-$x.json
  echo "[$n/${#points[@]}] $axis=$x ($series)" >&2
  # shellcheck disable=SC2086 # args is a list of options
  if ! "$bench" "${sys_args[@]}" --procs -d "$seconds" -w 16384 --linger-ms 1 $args \
      --progress none --json "$json" "${extra[@]}" >"$json.log" 2>&1; then
    echo "  failed: $(tail -n 2 "$json.log" | tr '\n' ' ')" >&2
    printf '%s\t%s\tnan\tnan\tnan\tnan\tnan\tnan\tnan\tnan\tfailed\n' "$series" "$x" >>"$tsv"
    continue
  fi
  mb=$(get "$json" produce.mb_per_s)
  printf '%s\t%s\t%.0f\t%.1f\t%.4f\t%.0f\t%.2f\t%.2f\t%s\t%.2f\t%s\n' "$series" "$x" \
    "$(get "$json" produce.records_per_s)" "$mb" "$(awk -v a="$mb" -v b="$memcpy_mb" 'BEGIN{print a / b}')" \
    "$(get "$json" consume.records_per_s)" \
    "$(awk -v v="$(get "$json" latency_ns.ack.p50)" 'BEGIN{print v / 1000}')" \
    "$(awk -v v="$(get "$json" latency_ns.ack.p99)" 'BEGIN{print v / 1000}')" \
    "$(get "$json" cpu.server.cores | sed 's/^None$/nan/')" "$(get "$json" cpu.clients.cores)" \
    "$(get "$json" ok)" >>"$tsv"
done
column -t -s $'\t' <(tail -n +2 "$tsv")

if command -v gnuplot >/dev/null; then
  png=$out/$axis.png
  series_list=$(awk -F'\t' 'NR > 2 {print $1}' "$tsv" | awk '!seen[$0]++' | tr '\n' ' ')
  logx=""; [[ $axis == size || $axis == partitions ]] && logx="set logscale x 2"
  ycol=3 ylabel='records/s (produce)'
  [[ $axis == size ]] && ycol=4 ylabel='MB/s of records (produce)' logx="$logx; set format x '%.0s%cB'"
  {
    echo "set terminal pngcairo size 1100,450; set output '$png'"
    echo "set multiplot layout 1,2 title '$axis curve ($system, memcpy $memcpy_mb MB/s)'"
    echo "$logx; set xlabel '$axis'; set ylabel '$ylabel'; set key top left; set grid; set logscale y"
    printf "plot "
    for s in $series_list; do printf "'<grep -P \"^%s\\\\t\" %s' using 2:%s with linespoints title '%s', " "$s" "$tsv" "$ycol" "$s"; done
    echo "1/0 notitle"
    echo "set ylabel 'ack latency (us)'; set logscale y"
    printf "plot "
    for s in $series_list; do
      printf "'<grep -P \"^%s\\\\t\" %s' using 2:7 with linespoints title '%s p50', " "$s" "$tsv" "$s"
      printf "'<grep -P \"^%s\\\\t\" %s' using 2:8 with linespoints title '%s p99', " "$s" "$tsv" "$s"
    done
    echo "1/0 notitle"
    echo "unset multiplot"
  } >"$out/$axis.gp"
  gnuplot "$out/$axis.gp" && echo "plot: $png" >&2
fi
echo "table: $tsv" >&2
