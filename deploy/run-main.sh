#!/usr/bin/env bash
# The main job, for now: build (release preset) and run the storage demo, which appends to a
# partition log, kills the writer with SIGKILL mid-stream, recovers and verifies every
# acknowledged record. Later issues turn this into the broker.
#
# Usage: deploy/run-main.sh [demo options...]   (see build/release/bin/rdmq-storage-demo --help)
# Environment: RDMQ_JOBS (build parallelism, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${RDMQ_JOBS:-$(nproc)}
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target rdmq-storage-demo
data=$(mktemp -d "${TMPDIR:-/tmp}/rdmq-main-XXXXXX")
trap 'rm -rf "$data"' EXIT
build/release/bin/rdmq-storage-demo --dir "$data/partition-0" "$@"
