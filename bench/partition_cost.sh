#!/usr/bin/env bash
# What a partition costs a broker while nobody writes to it: starts rdmq-broker on a fresh data
# directory (shm fabric), grows it to each partition count in turn (topics of at most 4,000
# partitions, created with `rdmq topic create`), and at each count reads from /proc its resident
# memory, open file descriptors, memory mappings and threads, its CPU over an idle window
# (schedstat, all threads) and its wake-ups, the data directory's disk use, and (unless
# --no-restart) how long a restart takes until the broker answers `rdmq topic list`. Writes a
# table (TSV) and a plot (PNG, gnuplot) of the cost per partition.
#
#   bench/partition_cost.sh [BIN_DIR] [--counts N,N,...] [--segment-bytes B] [--seconds S]
#                           [--fabric shm|tcp] [--data-parent DIR] [--out DIR] [--no-restart]
#                           [--set KEY=VALUE ...]
#
#   BIN_DIR            folder holding rdmq-broker and rdmq (default build/release/bin)
#   --counts           partition counts to measure, ascending (default 1,10,100,1000,10000)
#   --segment-bytes B  the topics' segment.bytes (default 65536, the smallest: every partition
#                      preallocates its active segment, so 10,000 of 64 MiB would take 640 GB)
#   --seconds S        length of each idle window (default 5)
#   --fabric NAME      shm (the default) or tcp (listening on loopback)
#   --data-parent DIR  where the data directory is made (default /tmp: the disk, not tmpfs)
#   --out DIR          where partitions.tsv and partitions.png go (default build/curves)
#   --no-restart       skip the restart at each count
#   --set K=V          passed to rdmq-broker (repeatable)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
bin=build/release/bin
if (($# > 0)) && [[ $1 != -* ]]; then bin=$1; shift; fi
counts=1,10,100,1000,10000 seg=65536 secs=5 parent=/tmp out=build/curves restart=1 fabric=shm extra=()
while (($# > 0)); do
  case $1 in
    --counts) counts=$2; shift 2 ;;
    --segment-bytes) seg=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --fabric) fabric=$2; shift 2 ;;
    --data-parent) parent=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-restart) restart=0; shift ;;
    --set) extra+=(--set "$2"); shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "partition_cost.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
case $fabric in
  shm) extra+=(--fabric shm) ;;
  tcp) extra+=(--fabric tcp --set listen.control=127.0.0.1:0 --set listen.data=127.0.0.1:0) ;;
  *) echo "partition_cost.sh: --fabric is shm or tcp" >&2; exit 2 ;;
esac
for b in rdmq-broker rdmq; do
  [[ -x $bin/$b ]] || { echo "partition_cost.sh: no $b in $bin (cmake --build --preset release --target rdmq-broker rdmq)" >&2; exit 1; }
done
IFS=, read -r -a steps <<<"$counts"
prev=0
for n in "${steps[@]}"; do
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n <= prev)); then echo "partition_cost.sh: --counts must be ascending positive integers" >&2; exit 2; fi
  prev=$n
done

mkdir -p "$out"
dir=$(mktemp -d "$parent/rdmq-partcost-XXXXXX")
data=$dir/data
addr='' pid=''
start_broker() {
  rm -f "$data/rdmq.addr"
  "$bin/rdmq-broker" -d "$data" --set log.level=warn --set listen.kafka=127.0.0.1:0 \
    --set listen.http=127.0.0.1:0 "${extra[@]}" >>"$dir/broker.log" 2>&1 &
  pid=$!
  # Up once it answers a request (a restart recovers every partition first; rdmq.addr names the
  # control listener once it serves).
  for _ in $(seq 6000); do
    addr=$(awk '$1 == "control" {print $2}' "$data/rdmq.addr" 2>/dev/null || true)
    [[ -n $addr ]] && "$bin/rdmq" -b "$addr" --timeout 2000 topic list >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "partition_cost.sh: the broker did not start:" >&2; tail -20 "$dir/broker.log" >&2; exit 1
}
stop_broker() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; }
cleanup() { [[ -n $pid ]] && stop_broker; rm -rf "$dir"; }
trap cleanup EXIT

status_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/status"; }
# Per thread: tid, nanoseconds on a CPU (schedstat), voluntary context switches (its wake-ups).
threads_now() {
  for t in /proc/"$pid"/task/*; do
    echo "${t##*/} $(awk '{print $1}' "$t/schedstat" 2>/dev/null) $(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null)"
  done | awk 'NF == 3' | sort
}
now() { date +%s.%N; }

tsv=$out/partitions.tsv
printf '# partition cost, %s fabric, segment.bytes %s, %s s idle windows, data in %s (%s), open-file limit %s\n' \
  "$fabric" "$seg" "$secs" "$parent" "$(stat -f -c %T "$parent")" "$(ulimit -Hn) (hard; the broker raises its soft limit to it)" >"$tsv"
printf 'partitions\tcreate_s\trss_mib\tfds\tmaps\tthreads\tidle_cpu_pct\twakeups_s\tdisk_mib\trestart_s\trss_after_restart_mib\n' >>"$tsv"

start_broker
have=0 topic=0
for n in "${steps[@]}"; do
  t0=$(now)
  while ((have < n)); do
    k=$((n - have > 4000 ? 4000 : n - have))
    "$bin/rdmq" -b "$addr" --timeout 600000 topic create "cost-$topic" --partitions "$k" \
      -c segment.bytes="$seg" -c max.message.bytes=$((seg / 2)) >/dev/null
    topic=$((topic + 1)) have=$((have + k))
  done
  create_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')
  sleep 1  # past the first checkpoint of the new partitions
  threads_now >"$dir/before"; t0=$(now)
  sleep "$secs"
  threads_now >"$dir/after"; t1=$(now)
  # Threads alive at both ends only (the CLI's session threads come and go).
  read -r cpu_ns wake < <(join "$dir/before" "$dir/after" | awk '{c += $4 - $2; w += $5 - $3} END {printf "%d %d\n", c, w}')
  kill -0 "$pid" 2>/dev/null || { echo "partition_cost.sh: the broker exited:" >&2; tail -20 "$dir/broker.log" >&2; exit 1; }
  rss=$(status_kb VmRSS) threads=$(status_kb Threads)
  fds=$(find /proc/"$pid"/fd -mindepth 1 -maxdepth 1 | wc -l) maps=$(wc -l <"/proc/$pid/maps")
  disk=$(du -sk "$data" | awk '{print $1}')
  restart_s=- rss2=-
  if ((restart)); then
    stop_broker
    r0=$(now)
    start_broker
    restart_s=$(awk -v a="$r0" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')
    rss2=$(awk -v k="$(status_kb VmRSS)" 'BEGIN {printf "%.1f", k / 1024}')
  fi
  awk -v n="$n" -v cs="$create_s" -v rss="$rss" -v fds="$fds" -v maps="$maps" -v th="$threads" \
    -v cpu="$cpu_ns" -v wake="$wake" -v t0="$t0" -v t1="$t1" -v disk="$disk" \
    -v rs="$restart_s" -v rss2="$rss2" 'BEGIN {
      printf "%d\t%s\t%.1f\t%d\t%d\t%d\t%.2f\t%.0f\t%.1f\t%s\t%s\n", n, cs, rss / 1024, fds, maps, th,
        cpu / 1e9 / (t1 - t0) * 100, wake / (t1 - t0), disk / 1024, rs, rss2 }' >>"$tsv"
  tail -1 "$tsv" | awk -F'\t' '{printf "%6d partitions: created in %s s, RSS %s MiB, %s fds, %s maps, %s threads, idle %s%% of a core (%s wake-ups/s), disk %s MiB, restart %s s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
done
tail -n +2 "$tsv" | column -t -s $'\t'

if command -v gnuplot >/dev/null; then
  gnuplot <<EOF
set terminal pngcairo size 900,520
set output "$out/partitions.png"
set title "What an idle partition costs the broker (segment.bytes $seg)"
set logscale x
set logscale y
set xlabel "partitions"
set ylabel "RSS MiB, fds, idle CPU % of a core x100, restart s x100"
set key left top
set grid
plot "$tsv" using 1:3 skip 2 with linespoints title "RSS (MiB)", \
     "" using 1:4 skip 2 with linespoints title "open fds", \
     "" using 1:(\$7 * 100) skip 2 with linespoints title "idle CPU (% of a core, x100)", \
     "" using 1:(\$10 * 100) skip 2 with linespoints title "restart (s, x100)"
EOF
  echo "wrote $tsv and $out/partitions.png"
else
  echo "wrote $tsv (no gnuplot: no plot)"
fi
