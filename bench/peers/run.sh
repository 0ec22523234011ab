#!/usr/bin/env bash
# The peer comparison: the same workloads against rdmq (its own clients, and librdkafka through
# its Kafka listener), Redis Streams and NATS JetStream, on this machine, in one run, with the machine's physical limits measured beside them, and one table
# with the ratios at the end.
#
# Usage: bench/peers/run.sh [--quick] [--systems "rdmq kafka redis nats"] [--out DIR] [--keep]
#                           [--no-install] [--markdown]
#   --quick       small counts (about a minute in all); the default takes several minutes
#   --systems     which systems to run (default: all four; rdmq and kafka are skipped while the
#                 broker or their backend is not built)
#   --out DIR     where results go (default build/peers/<date-time>): JSON and PNG per run,
#                 limits.json, table.txt, and the servers' logs
#   --keep        keep the servers' data directories (default: deleted at the end)
#   --no-install  do not run deploy/install-deps.sh --with-peers
#   --markdown    also print the table as markdown (for docs/benchmarks.md)
#
# What it does:
#  1. installs Redis and NATS from Debian if missing (deploy/install-deps.sh --with-peers) and
#     builds rdmq-bench (and rdmq's broker) with the release preset;
#  2. measures memcpy (1 MiB, 64 MiB), loopback TCP bandwidth and 100 B round trip;
#  3. for each system setting below, starts its server on 127.0.0.1 only with a fresh data
#     directory (on disk, next to the results, never tmpfs), runs the workloads, stops it:
#       rdmq  durability=durable     persist (msync / pmem_persist) per commit, group commit
#       rdmq  durability=visibility  acknowledged once visible; persisted by checkpoints
#       kafka rdmq's Kafka listener (librdkafka, acks=all, no idempotence), the same two
#             topic durabilities
#       redis appendonly yes, appendfsync always    (fsync before the reply; group commit)
#       redis appendonly yes, appendfsync everysec  (fsync once a second)
#       nats  JetStream file store (2.9 has no per-message sync: written to the page cache,
#             fsync by the server's periodic sync) -- compared with the visibility class
#  4. checks that one client was not the bottleneck: the producer process's CPU share, and the
#     100 B throughput workload again with two producer processes on the same stream (if one
#     client were the limit, two would go faster);
#  5. prints the table: each row's durability setting, throughput, latencies, CPU, and the
#     ratio against rdmq in the same durability class (rdmq durable vs redis always; rdmq
#     visibility vs redis everysec and nats), and the same table against Redis.
# Workloads (one producer process, one consumer process, one partition):
#   throughput 100 B and 1 KiB: 1024 and 16384 records in flight (pipelined / async publishing;
#     Redis does best with the smaller window, rdmq with the larger: both are shown); the 16384
#     runs let every client batch up to 1 MiB for up to 1 ms (batch.size / linger.ms)
#   latency 100 B: one record in flight, paced at 10 k records/s so the consumer is waiting
# Everything started is stopped on exit, error or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

quick=0 keep=0 install=1 markdown=0
systems="rdmq kafka redis nats"
out=""
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --no-install) install=0 ;;
    --markdown) markdown=1 ;;
    --systems) systems=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((quick)); then
  n100=500000 n1k=100000 nlat=10000
else
  n100=2000000 n1k=400000 nlat=50000
fi
out=${out:-build/peers/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
data="$out/data"
mkdir -p "$data"

# ------------------------------------------------------------------ cleanup of what we start
pids=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  if ((keep == 0)); then rm -rf "$data"; fi
  exit $rc
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT TERM

stop_server() {  # stop_server PID
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {  # free_port BASE: the first free port from BASE
  local p=$1
  while ! port_free "$p"; do p=$((p + 1)); done
  echo "$p"
}
wait_port() {  # wait_port PORT PID NAME LOG
  for _ in $(seq 200); do
    if ! kill -0 "$2" 2>/dev/null; then
      echo "run.sh: $3 exited while starting; its log ($4):" >&2
      tail -n 20 "$4" >&2
      return 1
    fi
    if ! port_free "$1"; then return 0; fi
    sleep 0.05
  done
  echo "run.sh: $3 did not listen on 127.0.0.1:$1 within 10 s (log: $4)" >&2
  return 1
}

# ------------------------------------------------------------------ install and build
if ((install)); then deploy/install-deps.sh --with-peers; fi
echo "== building rdmq-bench (release preset)"
cmake --preset release >/dev/null
targets=(rdmq-bench)
if grep -q 'rdmq-broker' broker/CMakeLists.txt 2>/dev/null; then targets+=(rdmq-broker); fi
cmake --build --preset release -j "${RDMQ_JOBS:-2}" --target "${targets[@]}" >/dev/null
bench=$root/build/release/bin/rdmq-bench
broker=$root/build/release/bin/rdmq-broker

fstype=$(stat -f -c %T "$data")
if [[ $fstype == tmpfs || $fstype == ramfs ]]; then
  echo "run.sh: WARNING: $data is on $fstype: fsync costs nothing there; use --out on a disk" >&2
fi

# ------------------------------------------------------------------ machine and limits
{
  echo "date      $(date -Is)"
  echo "host      $(uname -n), kernel $(uname -r), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory    $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "data dir  $data ($fstype on $(df --output=source "$data" | tail -1))"
  echo "load      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the start"
  echo "versions  $(redis-server --version 2>/dev/null | cut -d' ' -f1-3 || echo 'redis: none'); $(nats-server --version 2>/dev/null || echo 'nats: none')"
} | tee "$out/machine.txt"
echo
echo "== physical limits"
"$bench" limits $( ((quick)) && echo --quick) --json "$out/limits.json" | tee "$out/limits.txt"

results=()
run_bench() {  # run_bench NAME ARGS...: one rdmq-bench run, result in $out/NAME.json
  local name=$1; shift
  echo
  echo "-- $name"
  local rc=0
  "$bench" run "$@" --json "$out/$name.json" --plot "$out/$name.png" || rc=$?
  if ((rc > 128)); then
    echo "run.sh: $name: rdmq-bench ended by signal $((rc - 128)); stopping" >&2
    exit "$rc"
  fi
  if ((rc == 0 || rc == 3)); then results+=("$out/$name.json"); fi
  if ((rc != 0)); then echo "run.sh: $name: rdmq-bench exited with $rc" >&2; fi
  return 0
}

workloads() {  # workloads PREFIX ARGS...: every workload with the system's arguments
  local prefix=$1; shift
  run_bench "$prefix-100B" "$@" --procs --size 100 --count "$n100" --window 1024
  run_bench "$prefix-100B-w16k" "$@" --procs --size 100 --count "$n100" --window 16384 \
    --linger-ms 1 --batch-size 1048576
  run_bench "$prefix-1KiB" "$@" --procs --size 1024 --count "$n1k" --window 1024
  run_bench "$prefix-1KiB-w16k" "$@" --procs --size 1024 --count "$n1k" --window 16384 \
    --linger-ms 1 --batch-size 1048576
  run_bench "$prefix-lat100B" "$@" --procs --size 100 --count "$nlat" --window 1 --rate 10000
}

# start_broker DIR DURABILITY KAFKA_LISTEN ADDR_KEY LOG: rdmq-broker on shm with its data in DIR;
# waits for the ADDR_KEY line (control or kafka) of DIR/rdmq.addr. Sets pid and addr for the
# caller; on failure prints the log's end, stops the broker and returns 1.
start_broker() {
  local dir=$1 durability=$2 kafka=$3 key=$4 log=$5
  setsid "$broker" --data-dir "$dir" --fabric shm --set "durability=$durability" --set log.level=warn \
    --set "listen.kafka=$kafka" --set listen.http=127.0.0.1:0 >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  addr=""
  for _ in $(seq 400); do
    [[ -f $dir/rdmq.addr ]] && addr=$(awk -v k="$key" '$1 == k {print $2}' "$dir/rdmq.addr")
    [[ -n $addr ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [[ -z $addr ]]; then
    echo "run.sh: rdmq-broker did not start (no $key address in $dir/rdmq.addr); its log:" >&2
    tail -n 20 "$log" >&2
    stop_server "$pid"
    return 1
  fi
}

# ------------------------------------------------------------------ rdmq
run_rdmq() {
  if [[ ! -x $broker ]] || ! "$bench" systems | grep -qx rdmq; then
    echo
    echo "== rdmq: not built in this tree (no rdmq-broker, or rdmq-bench without its rdmq backend): skipped"
    return 0
  fi
  for durability in durable visibility; do
    local dir="$data/rdmq-$durability"
    mkdir -p "$dir"
    echo
    echo "== rdmq, fabric shm, topic durability=$durability (broker data in $dir)"
    # shm: the broker listens on Unix sockets in its data directory only.
    local pid addr
    start_broker "$dir" "$durability" off control "$out/rdmq-$durability.log" || return 1
    local label="persist per commit (group commit)"
    [[ $durability == visibility ]] && label="visible on commit, persisted by checkpoints"
    workloads "rdmq-$durability" --system rdmq --address "$addr" --server-pid "$pid" \
      --durability "$durability" --label "$label" --fabric shm
    stop_server "$pid"
  done
}

# ------------------------------------------------------------------ kafka
# rdmq's Kafka listener: the broker on shm as above, its Kafka listener on a free loopback port;
# librdkafka producers and consumers (acks=all, idempotence off, Nagle off).
run_kafka() {
  if [[ ! -x $broker ]] || ! "$bench" systems | grep -qx kafka; then
    echo
    echo "== kafka: not built in this tree (no rdmq-broker, or rdmq-bench without its kafka backend): skipped"
    return 0
  fi
  for durability in durable visibility; do
    local dir="$data/kafka-$durability"
    mkdir -p "$dir"
    echo
    echo "== kafka: rdmq's Kafka listener, topic durability=$durability (broker data in $dir)"
    local pid addr
    start_broker "$dir" "$durability" 127.0.0.1:0 kafka "$out/kafka-$durability.log" || return 1
    local label="Kafka listener, persist per commit"
    [[ $durability == visibility ]] && label="Kafka listener, visibility"
    workloads "kafka-$durability" --system kafka --address "$addr" --server-pid "$pid" \
      --durability "$durability" --label "$label"
    if [[ $durability == visibility ]]; then
      run_bench "kafka-$durability-100B-2procs" --system kafka --address "$addr" --server-pid "$pid" \
        --durability "$durability" --label "$label" --size 100 --count $((n100 / 2)) --window 1024 \
        --producers 2 --procs
    fi
    stop_server "$pid"
  done
}

# ------------------------------------------------------------------ redis
run_redis() {
  command -v redis-server >/dev/null || { echo "run.sh: redis-server is not installed (drop --no-install)" >&2; return 1; }
  for fsync in always everysec; do
    local dir="$data/redis-$fsync" port
    mkdir -p "$dir"
    port=$(free_port 16379)
    cat >"$dir/redis.conf" <<EOF
bind 127.0.0.1
protected-mode yes
port $port
dir $dir
daemonize no
logfile $dir/redis.log
save ""
appendonly yes
appendfsync $fsync
appendfilename appendonly.aof
# The AOF only grows during a run (as rdmq's log does); no background rewrite forks mid-run.
auto-aof-rewrite-percentage 0
EOF
    echo
    echo "== redis, appendonly yes, appendfsync $fsync (127.0.0.1:$port, data in $dir)"
    # setsid: the server does not get the terminal's Ctrl-C; cleanup stops it.
    setsid redis-server "$dir/redis.conf" &
    local pid=$!
    pids+=("$pid")
    wait_port "$port" "$pid" redis-server "$dir/redis.log"
    local class=durable
    [[ $fsync == everysec ]] && class=visibility
    workloads "redis-$fsync" --system redis --address "127.0.0.1:$port" --server-pid "$pid" \
      --durability "$class" --label "appendfsync $fsync"
    if [[ $fsync == everysec ]]; then
      # Client check: the 100 B throughput workload with two producer processes on the same stream.
      run_bench "redis-$fsync-100B-2procs" --system redis --address "127.0.0.1:$port" --server-pid "$pid" \
        --durability "$class" --label "appendfsync $fsync" --size 100 --count $((n100 / 2)) --window 1024 \
        --producers 2 --procs
    fi
    stop_server "$pid"
    cp "$dir/redis.log" "$out/redis-$fsync.log" 2>/dev/null || true
  done
}

# ------------------------------------------------------------------ nats
run_nats() {
  command -v nats-server >/dev/null || { echo "run.sh: nats-server is not installed (drop --no-install)" >&2; return 1; }
  local dir="$data/nats" port
  mkdir -p "$dir"
  port=$(free_port 14222)
  cat >"$dir/nats.conf" <<EOF
listen: 127.0.0.1:$port
jetstream {
  store_dir: "$dir/js"
  max_file_store: 64GB
  max_memory_store: 256MB
}
EOF
  echo
  echo "== nats, JetStream file store (127.0.0.1:$port, data in $dir)"
  setsid nats-server -c "$dir/nats.conf" >"$out/nats.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait_port "$port" "$pid" nats-server "$out/nats.log"
  local label="file store, periodic fsync"
  workloads nats --system nats --address "nats://127.0.0.1:$port" --server-pid "$pid" \
    --durability visibility --label "$label"
  run_bench "nats-100B-2procs" --system nats --address "nats://127.0.0.1:$port" --server-pid "$pid" \
    --durability visibility --label "$label" --size 100 --count $((n100 / 2)) --window 1024 \
    --producers 2 --procs
  stop_server "$pid"
}

for s in $systems; do
  case $s in
    rdmq) run_rdmq ;;
    kafka) run_kafka ;;
    redis) run_redis ;;
    nats) run_nats ;;
    *) echo "run.sh: unknown system '$s' (rdmq, kafka, redis, nats)" >&2; exit 2 ;;
  esac
done

# ------------------------------------------------------------------ report
echo
echo "== was the client the bottleneck?"
for prefix in kafka-visibility redis-everysec nats; do
  one=$out/$prefix-100B.json two=$out/$prefix-100B-2procs.json
  [[ -f $one && -f $two ]] || continue
  r1=$("$bench" get "$one" produce.records_per_s) r2=$("$bench" get "$two" produce.records_per_s)
  c1=$("$bench" get "$one" cpu.producer_max_process_cores)
  awk -v p="$prefix" -v r1="$r1" -v r2="$r2" -v c1="$c1" 'BEGIN {
    printf "%-16s 1 producer: %.0f records/s, its process used %.2f of a core; 2 producer processes: %.0f records/s (x%.2f)\n", p, r1, c1, r2, r2 / r1;
    if (c1 < 0.9 && r2 / r1 < 1.25) print "                 -> the server, not the client, limits throughput";
    else print "                 -> the client may limit throughput: read these rows with care";
  }' | tee -a "$out/client-check.txt"
done
echo
echo "== load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if ((${#results[@]} == 0)); then
  echo "run.sh: no results" >&2
  exit 1
fi
echo "== results in $out"
cat "$out/limits.txt"
echo
"$bench" table --reference rdmq "${results[@]}" | tee "$out/table.txt"
if [[ " $systems " == *" redis "* ]]; then
  echo
  echo "== against Redis (the same rows; ratios to the redis row of the same durability class)"
  "$bench" table --reference redis "${results[@]}" | tee "$out/table-vs-redis.txt"
fi
if ((markdown)); then
  echo
  "$bench" table --reference rdmq --markdown "${results[@]}" | tee "$out/table.md"
fi
