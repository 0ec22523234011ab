#!/usr/bin/env bash
# A cluster of three brokers on this machine (docs/replication.md): builds the release preset,
# starts a ZooKeeper of its own (Debian's zookeeper, on a free loopback port, data in a temporary
# folder) and three rdmq-broker processes (tcp fabric on loopback, separate data directories and
# ports), creates a topic with replication factor 3 (min.insync.replicas 2) whose leaders spread
# over them, produces keyed records through one broker's Kafka listener with kcat (acks=all) and
# through another with rdmq-produce, reads them all back through a third with kcat and with
# rdmq-consume, then kills a leader with SIGKILL while kcat and rdmq-produce keep producing
# (acks=all, idempotent; rdmq's own producer moves the batches it holds for the dead leader's
# partitions to their new leaders), shows the followers taking over its partitions, reads
# everything again,
# restarts the killed broker and waits until it caught up and rejoined every ISR, and checks
# once more that every record is there, once, in order per key. Prints what it checked; exits
# non-zero if anything was lost, duplicated or reordered.
#
# Usage: deploy/run-cluster.sh [--records N] [--partitions N] [--keep]
# Environment: RDMQ_JOBS (build parallelism, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${RDMQ_JOBS:-$(nproc)}
records=30000 partitions=6 keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --records) records=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-cluster.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target rdmq-broker rdmq rdmq-produce rdmq-consume
bin=$PWD/build/release/bin

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmq-cluster-XXXXXX")
# shellcheck source=deploy/local-cluster.sh
source deploy/local-cluster.sh
trap 'cluster_down; if [[ $keep == 1 ]]; then echo "kept: $work"; else rm -rf "$work"; fi' EXIT
say() { printf '== %s\n' "$*"; }
cluster_up 3
say "ZooKeeper on 127.0.0.1:$zk_port"
rdmq() { "$bin/rdmq" --broker "tcp:${control[$1]}" "${@:2}"; }
say "three brokers up"
rdmq 1 cluster status | sed -n '1,2p;6,10p'

rdmq 2 topic create orders --partitions "$partitions" -c replication.factor=3 -c min.insync.replicas=2 >/dev/null
say "topic orders: $partitions partitions, 3 replicas each, leaders:"
rdmq 3 topic describe orders --json | python3 -c '
import json,sys; d=json.load(sys.stdin)
print("  " + " ".join("p%d->broker %d" % (p["partition"], p["leader"]) for p in d["partitions"]))'

keys=$((partitions * 5))
produce_kcat() {  # VIA FIRST COUNT: keyed records FIRST.. through broker VIA's Kafka listener, acks=all
  seq "$2" $(($2 + $3 - 1)) | awk -v k="$keys" '{ print "k" ($1 % k) ":" $1 }' >"$work/input"
  kcat -b "${kafka[$1]}" -P -t orders -K : -X acks=all -X enable.idempotence=true \
    -X message.timeout.ms=30000 -l "$work/input"
}
produce_kcat 1 0 "$records"
say "produced $records keyed records through broker 1's Kafka listener (acks=all)"
# rdmq's own producer through broker 2, with keys of its own (its partitioner is Kafka's murmur2,
# kcat's a CRC32: the same key would land elsewhere and order per key could not be judged).
seq "$records" $((2 * records - 1)) | awk -v k="$keys" '{ print "r" ($1 % k) ":" $1 }' |
  "$bin/rdmq-produce" -b "tcp:${control[2]}" -K : orders
say "produced $records keyed records through broker 2 with rdmq-produce"

total=$((2 * records))
check() {  # VIA [rdmq]: reads everything through broker VIA (with kcat, or rdmq-consume) and checks it
  if [[ ${2:-kcat} == rdmq ]]; then
    "$bin/rdmq-consume" -b "tcp:${control[$1]}" -e -f '%k %s\n' orders >"$work/read"
  else
    kcat -b "${kafka[$1]}" -C -t orders -e -q -f '%k %s\n' >"$work/read"
  fi
  python3 - "$work/read" "$total" <<'EOF'
import sys
last, n, seen = {}, 0, set()
for line in open(sys.argv[1]):
    k, v = line.split()
    v = int(v)
    if v in seen: sys.exit(f"record {v} read twice")
    if v <= last.get(k, -1): sys.exit(f"key {k}: {v} after {last[k]}")
    seen.add(v); last[k] = v; n += 1
if n != int(sys.argv[2]): sys.exit(f"read {n} records, expected {sys.argv[2]}")
print(f"   {n} records, each once, in order per key")
EOF
}
check 3 || fail "reading through broker 3 with kcat"
check 3 rdmq || fail "reading through broker 3 with rdmq-consume"

produce_rdmq_slowly() {  # VIA FIRST COUNT: as produce_kcat with rdmq-produce, in 20 parts 100 ms apart
  local i step=$((($3 + 19) / 20))
  for ((i = $2; i < $2 + $3; i += step)); do
    seq "$i" $((i + step - 1 < $2 + $3 - 1 ? i + step - 1 : $2 + $3 - 1))
    sleep 0.1
  done | awk -v k="$keys" '{ print "r" ($1 % k) ":" $1; fflush() }' |
    "$bin/rdmq-produce" -b "tcp:${control[$1]}" -K : -a all orders
}

victim=$(rdmq 1 topic describe orders --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0]["leader"])')
other=1; [[ $victim == 1 ]] && other=2
# kcat and rdmq-produce keep producing through a broker that survives while the leader of
# partition 0 is killed.
produce_kcat "$other" $((2 * records)) "$records" &
producer=$!
produce_rdmq_slowly "$other" $((3 * records)) "$records" 2>"$work/rdmq-produce.log" &
rproducer=$!
sleep 0.3
kill -KILL "${pid[$victim]}"
wait "${pid[$victim]}" 2>/dev/null || true
unset "pid[$victim]"
say "killed broker $victim (SIGKILL), the leader of partition 0, while kcat and rdmq-produce produce"
wait "$producer" || fail "kcat's acks=all produce across the failover"
wait "$rproducer" || fail "rdmq-produce's acks=all produce across the failover: $(tail -5 "$work/rdmq-produce.log")"
moved=$(grep -c "following a partition to its new leader" "$work/rdmq-produce.log" || true)
say "both producers were answered for every record; rdmq-produce followed $moved partitions to their new leaders"
total=$((4 * records))
status() {  # VIA FIELD
  rdmq "$1" cluster status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}
leader0() {
  rdmq "$other" topic describe orders --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0]["leader"])'
}
for _ in $(seq 100); do
  new_leader=$(leader0)
  offline=$(status "$other" offline_partitions)
  [[ $new_leader != "$victim" && $new_leader -ge 1 && $offline == 0 ]] && break
  sleep 0.2
done
[[ $new_leader != "$victim" && $offline == 0 ]] || fail "the followers did not take over broker $victim's partitions"
under=$(status "$other" under_replicated_partitions)
[[ $under -gt 0 ]] || fail "no partition is under-replicated with broker $victim dead"
say "broker $new_leader leads partition 0 now; every partition has a leader (followers in the ISR took over), $under under-replicated"
check "$other" || fail "reading after the failover"
check "$other" rdmq || fail "reading after the failover with rdmq-consume"

start_broker "$victim"
for _ in $(seq 150); do
  under=$(status "$other" under_replicated_partitions)
  [[ $under == 0 ]] && break
  sleep 0.2
done
[[ $under == 0 ]] || fail "broker $victim did not catch up and rejoin the ISRs"
say "broker $victim is back, caught up, and in every ISR again"
check "$victim" || fail "reading after the restart"
check "$victim" rdmq || fail "reading after the restart with rdmq-consume"
say "OK: nothing lost, nothing duplicated, order per key kept"
