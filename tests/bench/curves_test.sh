#!/usr/bin/env bash
# bench/curves.sh end to end, against mem (no broker): a quick size curve gives a table with a
# row per point, each run checked OK and its MB/s as a positive fraction of memcpy, and a plot
# when gnuplot is installed; a wrong axis is a usage error naming the axes.
#   tests/bench/curves_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
out=$(mktemp -d /tmp/rdmq-curves-test.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

RDMQ_BENCH=$bin/rdmq-bench "$src/bench/curves.sh" size --quick --system mem --out "$out" >"$out/log" 2>&1 ||
  { cat "$out/log"; fail "curves.sh size --quick exited non-zero"; }
tsv=$out/size.tsv
[[ -f $tsv ]] || fail "no $tsv"
rows=$(awk -F'\t' 'NR > 2' "$tsv" | wc -l)
((rows == 3)) || { cat "$tsv"; fail "expected 3 points, got $rows"; }
awk -F'\t' 'NR > 2 && ($11 != "true" || !($5 > 0) || !($3 > 0)) {bad = 1} END {exit bad}' "$tsv" ||
  { cat "$tsv"; fail "a point failed, or has no throughput or memcpy fraction"; }
[[ $(awk -F'\t' 'NR > 2 {print $2}' "$tsv" | tr '\n' ' ') == "16 1024 65536 " ]] || fail "wrong sizes in $tsv"
if command -v gnuplot >/dev/null; then
  [[ -s $out/size.png ]] || fail "gnuplot is installed but no plot was written"
fi
RDMQ_BENCH=$bin/rdmq-bench "$src/bench/curves.sh" sideways --out "$out" >"$out/bad" 2>&1
rc=$?
((rc == 2)) || fail "an unknown axis exited $rc, not 2"
grep -q "size, producers, partitions, consumers" "$out/bad" || fail "the usage error does not name the axes"
echo "curves.sh: 3 points, plot, usage error: OK"
