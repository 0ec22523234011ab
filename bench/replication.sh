#!/usr/bin/env bash
# acks=all against acks=1 on a replicated topic (docs/benchmarks.md, "Replication"): builds the
# release preset, starts ZooKeeper and three brokers on this machine (tcp fabric on loopback,
# deploy/local-cluster.sh), and runs rdmq-bench's kafka system (librdkafka through the leader's
# Kafka listener) and its rdmq system (rdmq's own producer, RDMA WRITE into the leader's log) on a
# topic of one partition with three replicas, for 100 B and 1 KiB records:
#
#   throughput  16384 records in flight, 1 MiB batches, 1 ms linger: produce rate, ack p50/p99
#   latency     one record in flight, paced at 1000/s: ack p50/p99
#
# each with acks=1 (the leader's commit) and acks=all (every in-sync replica holds the records:
# the leader's followers were fed and answered). The same runs against a topic of one replica
# give the unreplicated reference. Prints one table (markdown with --markdown); the JSON results
# stay in --out.
#
#   bench/replication.sh [--scale F] [--durability D] [--systems LIST] [--out DIR] [--markdown]
#
#   --scale F   multiplies the record counts (default 1: 300 k of 100 B, 100 k of 1 KiB, 3 k paced)
#   --durability D  the topics' durability: durable (default: every broker msyncs before it
#               answers) or visibility
#   --systems LIST  which clients: "kafka rdmq" (default), "kafka" or "rdmq"
#   --out DIR   where the results go (default build/replication/<date-time>)
# Environment: RDMQ_BROKER_ARGS, more rdmq-broker arguments (--set replica.fetch.max.bytes=...).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
scale=1 out="" markdown=0 durability=durable systems="kafka rdmq"
while (($#)); do
  case $1 in
    --scale) scale=$2; shift ;;
    --out) out=$2; shift ;;
    --durability) durability=$2; shift ;;
    --systems) systems=$2; shift ;;
    --markdown) markdown=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "replication.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-build/replication/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target rdmq-broker rdmq-bench
bin=$PWD/build/release/bin
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmq-replication-XXXXXX")
# shellcheck source=deploy/local-cluster.sh
source deploy/local-cluster.sh
trap 'cluster_down; rm -rf "$work"' EXIT
# shellcheck disable=SC2086
cluster_up 3 ${RDMQ_BROKER_ARGS:-}
echo "replication.sh: ZooKeeper and three brokers up; results in $out" >&2

count() { awk -v n="$1" -v s="$scale" 'BEGIN { printf "%d", n * s }'; }
throughput="-w 16384 --batch-size 1048576 --linger-ms 1"
: >"$out/rows.txt"
for system in $systems; do
  case $system in
    kafka) address=${kafka[1]} ;;
    rdmq) address=tcp:${control[1]} ;;
    *) echo "replication.sh: unknown system '$system' (kafka, rdmq)" >&2; exit 2 ;;
  esac
  for size in 100 1024; do
    n=$(count 300000)
    [[ $size == 1024 ]] && n=$(count 100000)
    for replicas in 1 3; do
      for acks in 1 all; do
        [[ $replicas == 1 && $acks == all ]] && continue  # the same as acks=1 without followers
        for kind in throughput latency; do
          name=$system-${size}B-rf${replicas}-acks${acks}-$kind
          if [[ $kind == throughput ]]; then
            args="$throughput -n $n"
          else
            args="-w 1 --rate 1000 -n $(count 3000)"
          fi
          # shellcheck disable=SC2086
          if ! "$bin/rdmq-bench" --system "$system" --address "$address" --topic "$system-r$replicas" \
              --replication-factor "$replicas" --acks "$acks" -s "$size" -c 0 --progress none \
              --durability "$durability" \
              $args --json "$out/$name.json" >"$out/$name.log" 2>&1; then
            echo "replication.sh: $name failed; see $out/$name.log" >&2
            exit 1
          fi
          get() { "$bin/rdmq-bench" get "$out/$name.json" "$1"; }
          rate=$(get produce.records_per_s)
          echo "$system $size $replicas $acks $kind $rate $(get latency_ns.ack.p50) $(get latency_ns.ack.p99)" >>"$out/rows.txt"
          echo "replication.sh: $name: $rate records/s, ack p50 $(get latency_ns.ack.p50) ns" >&2
        done
      done
    done
  done
done

# One row per (system, size, replicas, acks): the throughput run's rate and ack p50/p99, the paced
# run's ack p50/p99, and the rate as a fraction of the same system's unreplicated one of that size.
awk -v md="$markdown" '
  { key = $1 " " $2 " " $3 " " $4; if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    if ($5 == "throughput") { rate[key] = $6; tp50[key] = $7; tp99[key] = $8 } else { lp50[key] = $7; lp99[key] = $8 }
    if ($3 == 1 && (key in rate)) base[$1 " " $2] = rate[key] }
  END {
    h = "| client | size | replicas | acks | records/s | of 1 replica | ack p50 / p99 at full rate | ack p50 / p99, 1 in flight |"
    if (md) { print h; print "|---|---|---|---|---|---|---|---|" }
    else printf "%-6s %-6s %-8s %-5s %12s %12s %24s %24s\n", "client", "size", "replicas", "acks", "records/s", "of 1 replica", "ack p50/p99 full rate", "ack p50/p99 1 in flight"
    for (i = 0; i < n; i++) {
      split(order[i], k, " ")
      b1 = base[k[1] " " k[2]]
      f = b1 > 0 ? rate[order[i]] / b1 : 0
      a = sprintf("%.2f / %.2f ms", tp50[order[i]] / 1e6, tp99[order[i]] / 1e6)
      b = sprintf("%.0f / %.0f us", lp50[order[i]] / 1e3, lp99[order[i]] / 1e3)
      if (md) printf "| %s | %s B | %s | %s | %.0f k | %.2f | %s | %s |\n", k[1], k[2], k[3], k[4], rate[order[i]] / 1e3, f, a, b
      else printf "%-6s %-6s %-8s %-5s %11.0fk %12.2f %24s %24s\n", k[1], k[2], k[3], k[4], rate[order[i]] / 1e3, f, a, b
    }
  }' "$out/rows.txt" | tee "$out/table.txt"
