#!/usr/bin/env bash
# The main job: builds the release preset, starts rdmq-broker on the embedded default (shm fabric,
# a fresh data directory in a temporary folder), creates a topic, produces 1,000,000 records from
# one process while another process consumes and verifies them (sequence numbers and CRC-32C
# embedded in every value), prints throughput and latency for both, shows the topic with the
# rdmq CLI, and stops the broker with SIGTERM. Exits non-zero if any record was lost,
# duplicated, reordered or corrupt, or if a process failed.
#
# Usage: deploy/run-main.sh [--records N] [--value-bytes N] [--partitions N] [--acks 0|1]
#                           [--latency-records N] [--durability durable|visibility]
#                           [--fabric shm|tcp] [--keep]
#        deploy/run-main.sh --storage-demo [rdmq-storage-demo options...]   (the storage demo)
# Environment: RDMQ_JOBS (build parallelism, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${RDMQ_JOBS:-$(nproc)}

if [[ ${1:-} == --storage-demo ]]; then
  shift
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$jobs" --target rdmq-storage-demo
  data=$(mktemp -d "${TMPDIR:-/tmp}/rdmq-storage-demo-XXXXXX")
  trap 'rm -rf "$data"' EXIT
  exec_status=0
  build/release/bin/rdmq-storage-demo --dir "$data/partition-0" "$@" || exec_status=$?
  exit $exec_status
fi

records=1000000 value_bytes=100 partitions=1 acks=1 latency_records=10000 durability=durable fabric=shm keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --records) records=$2; shift 2 ;;
    --value-bytes) value_bytes=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --acks) acks=$2; shift 2 ;;
    --latency-records) latency_records=$2; shift 2 ;;
    --durability) durability=$2; shift 2 ;;
    --fabric) fabric=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-main.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target rdmq-broker rdmq rdmq-demo
bin=build/release/bin

data=$(mktemp -d "${TMPDIR:-/tmp}/rdmq-main-XXXXXX")
broker_pid=
consumer_pid=
cleanup() {
  [[ -n $consumer_pid ]] && kill "$consumer_pid" 2>/dev/null || true
  if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
    kill -KILL "$broker_pid" 2>/dev/null || true
  fi
  if [[ $keep == 1 ]]; then echo "data directory kept: $data"; else rm -rf "$data"; fi
}
trap cleanup EXIT

broker_args=(--data-dir "$data/broker" --fabric "$fabric" --set listen.http=127.0.0.1:0)
if [[ $fabric == tcp ]]; then
  broker_args+=(--set listen.control=127.0.0.1:0 --set listen.data=127.0.0.1:0)
fi
echo "== starting rdmq-broker (fabric $fabric, data in $data/broker)"
"$bin/rdmq-broker" "${broker_args[@]}" >"$data/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 300); do
  [[ -s $data/broker/rdmq.addr ]] && break
  if ! kill -0 "$broker_pid" 2>/dev/null; then
    echo "run-main.sh: rdmq-broker exited during startup:" >&2
    cat "$data/broker.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [[ ! -s $data/broker/rdmq.addr ]]; then
  echo "run-main.sh: rdmq-broker did not come up within 30 s:" >&2
  cat "$data/broker.log" >&2
  exit 1
fi
control=$(awk '$1 == "control" {print $2}' "$data/broker/rdmq.addr")
case $control in
  unix:*|tcp:*|verbs:*) broker=$control ;;
  /*) broker=unix:$control ;;
  *) broker=$fabric:$control ;;
esac
export RDMQ_BROKER=$broker
echo "   broker listening at $broker"

topic=main-demo
"$bin/rdmq" topic create "$topic" --partitions "$partitions" --config "durability=$durability"
echo "   (durability $durability: $([[ $durability == durable ]] && echo "every commit persisted (msync on this $(df -T "$data" | awk 'NR==2 {print $2}') file system) before its ack" || echo "commits visible at once; they survive a process crash, not a power loss"))"

echo "== consumer (own process) and producer (own process): $records records of $value_bytes bytes"
demo_args=(--topic "$topic" --records "$records" --latency-records "$latency_records")
"$bin/rdmq-demo" consume "${demo_args[@]}" --ready-file "$data/consumer.ready" \
  --json-out "$data/consumer.json" >"$data/consumer.out" &
consumer_pid=$!
for _ in $(seq 300); do
  [[ -e $data/consumer.ready ]] && break
  kill -0 "$consumer_pid" 2>/dev/null || break
  sleep 0.1
done
producer_status=0
"$bin/rdmq-demo" produce "${demo_args[@]}" --value-bytes "$value_bytes" -X "acks=$acks" \
  --json-out "$data/producer.json" || producer_status=$?
consumer_status=0
wait "$consumer_pid" || consumer_status=$?
consumer_pid=
cat "$data/consumer.out"

echo "== rdmq topic describe $topic"
"$bin/rdmq" topic describe "$topic" || true

http=$(awk '$1 == "http" {print $2}' "$data/broker/rdmq.addr")
if [[ -n $http ]]; then
  echo "== the broker's metrics (http://$http/metrics, records in per partition)"
  /usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
    "http://$http/metrics" | grep '^rdmq_partition_records_in_total' || echo "   (no answer from http://$http/metrics)"
fi

echo "== stopping rdmq-broker (SIGTERM)"
kill -TERM "$broker_pid"
broker_status=0
for _ in $(seq 300); do
  kill -0 "$broker_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$broker_pid" 2>/dev/null; then
  echo "run-main.sh: rdmq-broker did not stop within 30 s of SIGTERM" >&2
  broker_status=1
else
  wait "$broker_pid" || broker_status=$?
fi
broker_pid=

echo "== result"
printf '%-10s %s\n' producer "$([[ $producer_status == 0 ]] && echo ok || echo "FAILED ($producer_status)")"
printf '%-10s %s\n' consumer "$([[ $consumer_status == 0 ]] && echo "ok: every record received once, in order, intact" || echo "FAILED ($consumer_status)")"
printf '%-10s %s\n' broker "$([[ $broker_status == 0 ]] && echo "ok: clean shutdown" || echo "FAILED ($broker_status)")"
if [[ $producer_status != 0 || $consumer_status != 0 || $broker_status != 0 ]]; then
  echo "broker log: $data/broker.log (last lines below)" >&2
  tail -n 20 "$data/broker.log" >&2 || true
  exit 1
fi
