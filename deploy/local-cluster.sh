# A cluster on this machine, for scripts to source (deploy/run-cluster.sh, bench/replication.sh):
# a ZooKeeper of its own (Debian's zookeeper, a free loopback port, data under $work/zk) and N
# rdmq-broker processes (tcp fabric on loopback, each with its own ports and data directory
# $work/broker<ID>, its log in $work/broker<ID>.log).
#
# The sourcing script sets `work` (a folder) and `bin` (where rdmq-broker is), then calls
# `cluster_up N` and, on exit, `cluster_down`. Afterwards: zk_port, and per broker id
# control[ID] (host:port of its RPC listener), kafka[ID] (its Kafka listener), pid[ID];
# `start_broker ID` starts a broker again (after a kill) on the same ports; `fail MESSAGE` exits.
# shellcheck shell=bash
# shellcheck disable=SC2154  # work and bin come from the sourcing script

declare -A pid=() control=() kafka=() data_port=()
fail() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_zookeeper() {
  zk_port=$(free_port)
  mkdir -p "$work/zk/data"
  cat >"$work/zk/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$work/zk/data
clientPort=$zk_port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
EOF
  java -Xmx256m -XX:+UseSerialGC -Dzookeeper.log.dir="$work/zk" -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zk/zoo.cfg" >"$work/zk/server.log" 2>&1 &
  pid[zk]=$!
  local ok=""
  for _ in $(seq 100); do
    if { exec 3<>"/dev/tcp/127.0.0.1/$zk_port"; } 2>/dev/null; then
      printf ruok >&3; ok=$(timeout 2 cat <&3 || true); exec 3>&-
      [[ $ok == imok ]] && break
    fi
    sleep 0.2
  done
  [[ $ok == imok ]] || fail "ZooKeeper did not start (see $work/zk/server.log)"
}

start_broker() {  # ID [MORE rdmq-broker ARGUMENTS]
  local id=$1
  "$bin/rdmq-broker" --data-dir "$work/broker$id" --set fabric=tcp --set broker.id="$id" \
    --set listen.control="${control[$id]}" --set listen.data=127.0.0.1:"${data_port[$id]}" \
    --set listen.kafka="${kafka[$id]}" --set listen.http=off \
    --set cluster.zookeeper.connect=127.0.0.1:"$zk_port" --set cluster.zookeeper.session.timeout.ms=3000 \
    "${@:2}" >>"$work/broker$id.log" 2>&1 &
  pid[$id]=$!
  for _ in $(seq 150); do
    [[ -f $work/broker$id/rdmq.addr ]] && return 0
    kill -0 "${pid[$id]}" 2>/dev/null || fail "broker $id exited (see $work/broker$id.log)"
    sleep 0.2
  done
  fail "broker $id did not start (see $work/broker$id.log)"
}

cluster_up() {  # N [MORE rdmq-broker ARGUMENTS]
  for tool in java kcat; do
    command -v "$tool" >/dev/null || fail "$tool is missing (deploy/install-deps.sh)"
  done
  [[ -r /usr/share/java/zookeeper.jar ]] || fail "Debian's zookeeper is missing (deploy/install-deps.sh)"
  start_zookeeper
  local id
  for id in $(seq "$1"); do
    control[$id]=127.0.0.1:$(free_port)
    data_port[$id]=$(free_port)
    kafka[$id]=127.0.0.1:$(free_port)
    start_broker "$id" "${@:2}"
  done
}

cluster_down() {
  local p
  for p in "${pid[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${pid[@]}"; do wait "$p" 2>/dev/null || true; done
}
